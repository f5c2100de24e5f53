// On a real agent: a contender whose session is tied to a service's health check (`serviceChecks`)
// loses its slot the moment the check goes critical (Consul invalidates the session), and the next
// contender takes the slot at once, not two TTLs later; a check that is critical, or unknown, when
// the session would be made is a clear error.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, describe, it, type TestContext } from 'node:test'
import { filter, firstValueFrom, lastValueFrom, type Observable } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  SemaphoreError,
  type ContenderOptions,
} from '../../src/index.js'
import { PARKED_RECHECK_MS } from '../../src/effects/coordinator/prefix-coordinator.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, onEnd, testPrefix } from '../support/tracked.js'
import { eventually, holdersOf, listPrefix, noSessionsNamed, sleep } from '../support/observe.js'
import { childStarted, startConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

/** What the test reads of a semaphore or a leader election. */
interface Contender {
  readonly state$: Observable<{
    readonly holding: boolean
    readonly reason?: string | undefined
    readonly session?: string | undefined
    readonly connected: boolean
  }>
  isHolding(): boolean
  close(): Promise<void>
}

/** How soon after the check fails the next contender must hold: far below 2 × the 60 s TTL. */
const AT_ONCE_MS = 5000

/** A PUT to the agent's HTTP API that must answer 200. */
async function agentPut(url: string, path: string, body?: object): Promise<void> {
  const res = await fetch(`${url}${path}`, {
    method: 'PUT',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`PUT ${path}: ${res.status} ${text}`)
}

/**
 * Registers a service with a TTL check on the agent (deregistered after the test, pass or fail),
 * in the state asked for; answers the check's ID.
 */
async function registerService(
  t: TestContext,
  url: string,
  status: 'passing' | 'critical',
): Promise<string> {
  const id = `rxsem-web-${randomUUID().slice(0, 8)}`
  const checkId = `${id}-alive`
  onEnd(t, () => agentPut(url, `/v1/agent/service/deregister/${id}`))
  await agentPut(url, '/v1/agent/service/register', {
    Name: 'rxsem-web',
    ID: id,
    Check: { CheckID: checkId, TTL: '10m', Status: status },
  })
  return checkId
}

/** The first error of `state$`, or a failure if it completes or holds instead. */
async function errorOf(state$: Observable<{ holding: boolean }>): Promise<unknown> {
  try {
    await lastValueFrom(state$.pipe(filter((s) => s.holding)))
  } catch (error) {
    return error
  }
  throw new Error('state$ ended (or held) without an error')
}

describe('sessions tied to service checks', { timeout: SUITE_TIMEOUT_MS }, () => {
  const closers = new Set<() => Promise<void>>()
  after(() => Promise.allSettled([...closers].map((close) => close())))
  const agent = agentSuite()

  const contenders = (t: TestContext, name: string) => {
    const prefix = testPrefix(t, agent.url, name)
    const sessionName = `svc-check ${prefix}`
    onEnd(t, () => noSessionsNamed(agent.url, sessionName))
    const options = (more: Partial<ContenderOptions> = {}): ContenderOptions => ({
      prefix,
      consul: agent.client,
      sessionName,
      ttl: '60s',
      lockDelay: 0,
      ...more,
    })
    return { prefix, options }
  }

  for (const recipe of ['semaphore', 'leader election'] as const) {
    it(`frees a ${recipe}'s slot for the next contender at once when the holder's service check goes critical`, async (t) => {
      const checkId = await registerService(t, agent.url, 'passing')
      const { options } = contenders(t, `svc-check-${recipe.replace(' ', '-')}`)
      const make = (more: Partial<ContenderOptions>): Contender => {
        const c: Contender =
          recipe === 'semaphore'
            ? semaphore({ ...options(more), limit: 1 })
            : leaderElection(options(more))
        closers.add(() => c.close())
        onEnd(t, () => c.close())
        return c
      }
      const holder = make({ serviceChecks: [checkId], value: 'holder' })
      const holderStates: { holding: boolean; reason?: string | undefined }[] = []
      const watched = keep(
        t,
        holder.state$.subscribe({
          next: (s) => holderStates.push(s),
          error: () => undefined,
        }),
      )
      onEnd(t, () => watched.unsubscribe())
      await firstValueFrom(holder.state$.pipe(filter((s) => s.holding)))

      const next = make({ value: 'next' })
      const nextHolds = firstValueFrom(next.state$.pipe(filter((s) => s.holding)))
      // The next contender is in the race (a session, the prefix seen) before the check fails.
      await firstValueFrom(
        next.state$.pipe(filter((s) => s.session !== undefined && s.connected && !s.holding)),
      )
      assert.equal(holder.isHolding(), true)

      const failedAt = Date.now()
      await agentPut(agent.url, `/v1/agent/check/fail/${checkId}`)
      const held = await Promise.race([
        nextHolds.then(() => true),
        sleep(AT_ONCE_MS).then(() => false),
      ])
      const tookMs = Date.now() - failedAt
      assert.ok(
        held,
        `the next contender did not hold within ${AT_ONCE_MS} ms of the check failing`,
      )
      t.diagnostic(`the next contender held ${tookMs} ms after the check went critical`)
      assert.ok(tookMs < AT_ONCE_MS, `held ${tookMs} ms after, not at once`)
      // The old holder learns it from its watch (or its renewal), which may answer a moment after
      // the next contender's own write did: with lockDelay 0 nothing holds the key back meanwhile
      // (docs/safety.md, "Sessions trade safety for liveness"). It drops at once all the same.
      const droppedInTime = await Promise.race([
        firstValueFrom(holder.state$.pipe(filter((s) => !s.holding))).then(() => true),
        sleep(AT_ONCE_MS).then(() => false),
      ])
      const droppedMs = Date.now() - failedAt
      assert.ok(droppedInTime, `the old holder still held ${AT_ONCE_MS} ms after the check failed`)
      t.diagnostic(`the old holder dropped ${droppedMs} ms after the check went critical`)
      assert.equal(holder.isHolding(), false, 'the old holder no longer holds')
      const dropped = [...holderStates].reverse().find((s) => !s.holding)
      assert.ok(dropped !== undefined, 'the old holder said it dropped')
      assert.notEqual(
        dropped.reason,
        'lease-expired',
        'dropped because the session went, not the lease',
      )
    })
  }

  it('hands the slot of a holder whose check went critical to a waiter alone in its process, which sleeps on its own key', async (t) => {
    const checkId = await registerService(t, agent.url, 'passing')
    const { prefix, options } = contenders(t, 'svc-check-alone')
    // Two clients: each is a process of one contender, as replicas are, so the waiter long-polls
    // only its own key and would see a slot freed without a hand-off only at its next listing.
    const clients = [
      createConsulClient({ address: agent.addr }),
      createConsulClient({ address: agent.addr }),
    ]
    for (const client of clients) onEnd(t, () => client.close())
    const [holderClient, waiterClient] = clients
    const holder = semaphore({
      ...options({ consul: holderClient, serviceChecks: [checkId], value: 'holder' }),
      limit: 1,
    })
    onEnd(t, () => holder.close())
    // Subscribed throughout: the holder contends for as long as someone listens.
    const watched = keep(t, holder.state$.subscribe({ error: () => undefined }))
    onEnd(t, () => watched.unsubscribe())
    const holderSession = (await firstValueFrom(holder.state$.pipe(filter((s) => s.holding))))
      .session
    const next = semaphore({ ...options({ consul: waiterClient, value: 'next' }), limit: 1 })
    onEnd(t, () => next.close())
    const nextHolds = firstValueFrom(next.state$.pipe(filter((s) => s.holding)))
    await firstValueFrom(next.state$.pipe(filter((s) => s.rank === 0)))

    const failedAt = Date.now()
    await agentPut(agent.url, `/v1/agent/check/fail/${checkId}`)
    const bound = PARKED_RECHECK_MS / 2
    const held = await Promise.race([nextHolds.then(() => true), sleep(bound).then(() => false)])
    const tookMs = Date.now() - failedAt
    assert.ok(held, `the waiter did not hold within ${bound} ms: it found the slot on its own`)
    t.diagnostic(`the waiter held ${tookMs} ms after the check went critical`)
    const lock = await (await fetch(`${agent.url}/v1/kv/${prefix}/.lock?raw`)).text()
    assert.ok(holderSession !== undefined && !lock.includes(holderSession), `.lock: ${lock}`)
  })

  it('gives the slot of a holder whose check went critical to one contender only, ours first in line or `consul lock -n 2` beside it', async (t) => {
    const checkId = await registerService(t, agent.url, 'passing')
    const { prefix, options } = contenders(t, 'svc-check-go')
    // Three clients: three processes of one contender each, as replicas are.
    const clients = [0, 1, 2].map(() => createConsulClient({ address: agent.addr }))
    for (const client of clients) onEnd(t, () => client.close())
    const contender = (client: number, more: Partial<ContenderOptions>) => {
      const c = semaphore({ ...options({ consul: clients[client], ...more }), limit: 2 })
      onEnd(t, () => c.close())
      const states = keep(t, c.state$.subscribe({ error: () => undefined }))
      onEnd(t, () => states.unsubscribe())
      return c
    }
    const lost = contender(0, { serviceChecks: [checkId], value: 'lost' })
    await firstValueFrom(lost.state$.pipe(filter((s) => s.holding)))
    const kept = contender(1, { value: 'kept' })
    await firstValueFrom(kept.state$.pipe(filter((s) => s.holding)))
    // Ours first in line, asleep on its own key; Go's semaphore behind it, watching the prefix.
    const next = contender(2, { value: 'next' })
    await firstValueFrom(next.state$.pipe(filter((s) => s.rank === 0)))
    const go = startConsulLock(agent.addr, ['-n=2', prefix, 'echo started; exec sleep 300'])
    onEnd(t, () => stopAllConsulLocks([go]))
    await eventually('consul lock waiting', async () =>
      (await listPrefix(agent.url, prefix)).length === 5 ? true : undefined,
    )
    const lockHolders = async (): Promise<string[]> => {
      const lock = (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
      const body = lock?.Value ? Buffer.from(lock.Value, 'base64').toString('utf8') : '{}'
      return holdersOf(JSON.parse(body) as unknown)
    }

    // Go prunes the dead holder and CASes itself in while our process hands the slot to ours:
    // one of the two writes of `.lock` wins, and the other contender waits for the winner.
    await agentPut(agent.url, `/v1/agent/check/fail/${checkId}`)
    const goStarted = (): boolean => go.stdout().includes('started')
    const first = await eventually('a new holder', () =>
      next.isHolding() ? 'ours' : goStarted() ? 'go' : undefined,
    )
    t.diagnostic(`the slot went to ${first === 'ours' ? 'ours (the hand-off)' : 'consul lock'}`)
    assert.equal((await lockHolders()).length, 2, 'two holders in .lock')
    assert.ok(!(next.isHolding() && goStarted()), 'never both')
    assert.equal(kept.isHolding(), true, 'the other holder kept its slot')

    // The winner gives the slot back; the other takes it.
    if (first === 'ours') {
      assert.equal(goStarted(), false, 'consul lock waits while ours holds')
      await next.close()
      await childStarted(go)
    } else {
      assert.equal(next.isHolding(), false, 'ours waits while consul lock holds')
      await stopAllConsulLocks([go])
      await firstValueFrom(next.state$.pipe(filter((s) => s.holding)))
    }
    assert.equal((await lockHolders()).length, 2, 'two holders in .lock')
  })

  it('fails with a typed error naming the check when the service check is critical at the start', async (t) => {
    const checkId = await registerService(t, agent.url, 'critical')
    const { options } = contenders(t, 'svc-check-critical')
    const sem = semaphore({ ...options({ serviceChecks: [checkId] }), limit: 1 })
    closers.add(() => sem.close())
    const error = await errorOf(sem.state$)
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'Consul')
    assert.match(error.message, new RegExp(`service check '${checkId}' is critical`))
    assert.match(error.message, /once the check passes/)
  })

  it('fails with a typed error naming the check when no such check is registered', async (t) => {
    const { options } = contenders(t, 'svc-check-missing')
    const missing = `rxsem-no-such-check-${randomUUID().slice(0, 8)}`
    const sem = leaderElection(options({ serviceChecks: [{ id: missing }] }))
    closers.add(() => sem.close())
    const error = await errorOf(sem.state$)
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'Consul')
    assert.match(error.message, new RegExp(`no check '${missing}' is registered`))
  })

  it('refuses a serviceChecks that is not a list of check IDs before sending anything', () => {
    for (const serviceChecks of ['web-alive', [''], [{ id: 3 }], [{ id: 'a', namespace: 1 }]]) {
      assert.throws(
        () =>
          semaphore({
            prefix: 'rxsem-test/never-sent',
            limit: 1,
            consul: agent.client,
            serviceChecks: serviceChecks as never,
          }),
        (error: unknown) =>
          error instanceof SemaphoreError &&
          error.kind === 'InvalidOptions' &&
          /option serviceChecks/.test(error.message),
        JSON.stringify(serviceChecks),
      )
    }
  })
})
