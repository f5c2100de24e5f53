// On a real agent: a contender given an existing session (`session`, Go's `LockOptions.Session`)
// contends with it instead of making one, renews it, and never destroys it; a second contender
// with the same session finds the slot already held by it and holds at once, without a new CAS
// (Consul's TestAPI_LockReclaimLock), for the semaphore and the leader election alike.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it, type TestContext } from 'node:test'
import { filter, firstValueFrom, lastValueFrom, type Observable } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  SemaphoreError,
  tryAcquire,
  withSlot,
  type ContenderOptions,
} from '../../src/index.js'
import { closeIdleDefaultClients } from '../../src/consul/default-client.js'
import { flushShelf, processShelf } from '../../src/effects/session-shelf.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, onEnd, testPrefix } from '../support/tracked.js'
import {
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  lockBody,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

/** What the test reads of a semaphore or a leader election. */
interface Contender {
  readonly state$: Observable<{
    readonly holding: boolean
    readonly session?: string | undefined
    readonly leaseDeadline?: number | undefined
    readonly fencingToken?: bigint | undefined
  }>
  isHolding(): boolean
  close(): Promise<void>
}

const recipes = ['semaphore', 'leader election'] as const
type Recipe = (typeof recipes)[number]

describe('a contender with an adopted session', { timeout: SUITE_TIMEOUT_MS }, () => {
  const closers = new Set<() => Promise<unknown>>()
  after(() => Promise.allSettled([...closers].map((close) => close())))
  const agent = agentSuite()
  const env = process.env['CONSUL_HTTP_ADDR']
  before(() => {
    // The default client (no `consul` option) is the one CONSUL_HTTP_ADDR names.
    process.env['CONSUL_HTTP_ADDR'] = agent.addr
  })
  after(async () => {
    await flushShelf()
    await closeIdleDefaultClients()
    if (env === undefined) delete process.env['CONSUL_HTTP_ADDR']
    else process.env['CONSUL_HTTP_ADDR'] = env
  })

  /** A session made by hand, as its owner would (destroyed after the test). */
  const ownSession = async (t: TestContext, behavior: 'delete' | 'release', ttl = '10s') => {
    const id = await createRawSession(agent.url, {
      Name: `adopted ${randomUUID().slice(0, 8)}`,
      TTL: ttl,
      Behavior: behavior,
      LockDelay: '0s',
    })
    onEnd(t, () => destroyRawSession(agent.url, id))
    return id
  }

  const sessionExists = async (id: string): Promise<boolean> => {
    const res = await fetch(`${agent.url}/v1/session/info/${id}`)
    const body = (await res.json()) as unknown[] | null
    return Array.isArray(body) && body.length > 0
  }

  const contender = (t: TestContext, recipe: Recipe, options: ContenderOptions): Contender => {
    const c: Contender =
      recipe === 'semaphore' ? semaphore({ ...options, limit: 1 }) : leaderElection(options)
    // Subscribed for the whole test: the last unsubscribe of state$ releases.
    const subscription = c.state$.subscribe({ error: () => undefined })
    closers.add(() => c.close())
    onEnd(t, () => {
      subscription.unsubscribe()
      return c.close()
    })
    return c
  }

  const lockEntry = async (prefix: string) =>
    (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)

  const holds = (c: Contender) => firstValueFrom(c.state$.pipe(filter((s) => s.holding)))

  const behaviorOf = (recipe: Recipe) => (recipe === 'semaphore' ? 'delete' : 'release')

  for (const recipe of recipes) {
    it(`holds a ${recipe} with the session, renews it, and leaves it alive after close()`, async (t) => {
      const prefix = testPrefix(t, agent.url, 'adopted')
      const session = await ownSession(t, behaviorOf(recipe))
      const c = contender(t, recipe, { prefix, consul: agent.client, session })
      const held = await holds(c)
      assert.equal(held.session, session, 'the contender holds with the session it was given')
      const firstDeadline = held.leaseDeadline ?? 0
      // Renewed at half its 10 s TTL: the lease deadline moves on.
      const renewed = await firstValueFrom(
        c.state$.pipe(filter((s) => (s.leaseDeadline ?? 0) > firstDeadline + 1000)),
      )
      assert.equal(renewed.holding, true)

      await c.close()
      assert.equal(await sessionExists(session), true, 'the session outlives close()')
      const left = (await listPrefix(agent.url, prefix)).filter((e) => e.Session === session)
      assert.deepEqual(left, [], 'no key is held by the session any more')
      const lock = await lockEntry(prefix)
      if (recipe === 'semaphore') {
        assert.deepEqual(holdersOf(lock && lockBody(lock)), [], '.lock lists nobody')
      } else {
        assert.equal(lock?.Session, undefined, 'the lock is free')
      }
    })

    it(`lets a second ${recipe} contender with the same session reclaim the slot at once, without a new CAS`, async (t) => {
      const prefix = testPrefix(t, agent.url, 'adopted-reclaim')
      const session = await ownSession(t, behaviorOf(recipe))
      const first = contender(t, recipe, { prefix, consul: agent.client, session })
      const held = await holds(first)
      const lockBefore = await lockEntry(prefix)
      assert.ok(lockBefore !== undefined)

      const second = contender(t, recipe, { prefix, consul: agent.client, session })
      const reclaimed = await holds(second)
      assert.equal(reclaimed.session, session)
      assert.equal(reclaimed.fencingToken, held.fencingToken, 'the same tenure, the same token')
      const lockAfter = await lockEntry(prefix)
      assert.equal(lockAfter?.ModifyIndex, lockBefore.ModifyIndex, '.lock was not written again')
      assert.equal(first.isHolding(), true)

      // As Go's: the second gives the slot back, and the first, whose session it was, loses it
      // (watched from before the release: it may take the free slot again at once).
      const firstDrops = firstValueFrom(first.state$.pipe(filter((s) => !s.holding)))
      await second.close()
      await firstDrops
      await first.close()
      assert.equal(await sessionExists(session), true, 'neither destroyed the session')
    })

    it(`fails a ${recipe} contender with SessionGone when the session does not exist, or ends while it holds`, async (t) => {
      const prefix = testPrefix(t, agent.url, 'adopted-gone')
      const missing = contender(t, recipe, {
        prefix,
        consul: agent.client,
        session: randomUUID(),
      })
      const error = await lastValueFrom(missing.state$).then(
        () => undefined,
        (e: unknown) => e,
      )
      assert.ok(error instanceof SemaphoreError, String(error))
      assert.equal(error.kind, 'SessionGone')
      assert.match(error.message, /does not exist/)

      const session = await ownSession(t, behaviorOf(recipe))
      const c = contender(t, recipe, { prefix, consul: agent.client, session })
      await holds(c)
      const ended = lastValueFrom(c.state$).then(
        () => undefined,
        (e: unknown) => e,
      )
      await destroyRawSession(agent.url, session)
      const gone = await ended
      assert.ok(gone instanceof SemaphoreError, String(gone))
      assert.equal(gone.kind, 'SessionGone')
      assert.match(gone.message, /ended while the contender used it/)
      assert.equal(c.isHolding(), false)
    })
  }

  it('reclaims a slot on a client that knows the prefix already, without rewriting its key', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-reclaim-warm')
    const other = createConsulClient({ address: agent.addr })
    const made: Contender[] = []
    // Its contenders are closed before it (a test's own hooks run in the order registered).
    onEnd(t, async () => {
      await Promise.allSettled(made.map((c) => c.close()))
      await other.close()
    })
    // The other client has seen the prefix's `.lock`: a lone contender of it would join in one
    // transaction, which writes its key.
    const warm = contender(t, 'semaphore', { prefix, consul: other })
    made.push(warm)
    await holds(warm)
    await warm.close()

    const session = await ownSession(t, 'delete')
    const first = contender(t, 'semaphore', { prefix, consul: agent.client, session })
    await holds(first)
    const before = await listPrefix(agent.url, prefix)
    const second = contender(t, 'semaphore', { prefix, consul: other, session })
    made.push(second)
    await holds(second)
    assert.deepEqual(
      (await listPrefix(agent.url, prefix)).map((e) => [e.Key, e.Flags, e.ModifyIndex]),
      before.map((e) => [e.Key, e.Flags, e.ModifyIndex]),
      'nothing under the prefix was written',
    )
  })

  it('never puts an adopted session on the shelf of the default client, and never destroys it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-shelf')
    const session = await ownSession(t, 'delete')
    const c = semaphore({ prefix, limit: 1, session })
    closers.add(() => c.close())
    const subscription = keep(t, c.state$.subscribe({ error: () => undefined }))
    onEnd(t, () => subscription.unsubscribe())
    await firstValueFrom(c.holding$.pipe(filter(Boolean)))
    await c.close()
    assert.equal(processShelf.sessions().includes(session), false, 'not shelved')
    await flushShelf()
    await closeIdleDefaultClients()
    assert.equal(await sessionExists(session), true, 'still alive after the shelf is flushed')
  })

  it('takes the session for tryAcquire, and gives the slot back without destroying it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-try')
    const session = await ownSession(t, 'delete')
    const held = await tryAcquire({ prefix, limit: 1, consul: agent.client, session })
    assert.ok(held !== null, 'a free slot is taken')
    closers.add(() => held.close())
    const key = (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/${session}`)
    assert.equal(key?.Session, session, 'its contender key is held by the session')
    await held.close()
    assert.equal(await sessionExists(session), true)
  })

  it('takes the TTL of the session for the lease, not the default', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-ttl')
    const session = await ownSession(t, 'delete', '120s')
    const c = contender(t, 'semaphore', { prefix, consul: agent.client, session })
    const held = await holds(c)
    // The default margin is 10% of the TTL: 108 s of lease ahead, far more than 15 s would give.
    const ahead = (held.leaseDeadline ?? 0) - Date.now()
    assert.ok(ahead > 60_000, `lease deadline ${ahead} ms ahead`)
  })

  it('refuses a session without a TTL, whose lease deadline cannot be counted, and leaves it alive', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-no-ttl')
    const session = await createRawSession(agent.url, {
      Name: 'adopted no ttl',
      Behavior: 'delete',
    })
    onEnd(t, () => destroyRawSession(agent.url, session))
    const c = contender(t, 'semaphore', { prefix, consul: agent.client, session })
    const error = await lastValueFrom(c.state$).then(
      () => undefined,
      (e: unknown) => e,
    )
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'InvalidOptions')
    assert.match(error.message, /has no TTL/)
    assert.equal(await sessionExists(session), true)
    assert.deepEqual(await listPrefix(agent.url, prefix), [], 'nothing written')
  })

  it('refuses the options only a created session has, and withSlot, beside a session', async () => {
    const session = randomUUID()
    const base = { prefix: 'rxsem-test/never-sent', limit: 1, consul: agent.client, session }
    for (const [option, value] of [
      ['ttl', '20s'],
      ['lockDelay', 0],
      ['checks', []],
      ['serviceChecks', ['web']],
      ['sessionName', 'mine'],
    ] as const) {
      assert.throws(
        () => semaphore({ ...base, [option]: value }),
        (error: unknown) =>
          error instanceof SemaphoreError &&
          error.kind === 'InvalidOptions' &&
          error.message.includes(`option ${option}:`),
        option,
      )
    }
    assert.throws(
      () => leaderElection({ prefix: 'rxsem-test/never-sent', session: 'not-a-uuid' }),
      (error: unknown) => error instanceof SemaphoreError && /option session:/.test(error.message),
    )
    await assert.rejects(
      withSlot(base, () => Promise.resolve(1)),
      (error: unknown) =>
        error instanceof SemaphoreError &&
        error.kind === 'InvalidOptions' &&
        /option session: withSlot/.test(error.message),
    )
  })

  it('serves contenders one after the other with one session, and leaves it alive', async (t) => {
    const prefix = testPrefix(t, agent.url, 'adopted-turns')
    const session = await ownSession(t, 'delete')
    for (let turn = 0; turn < 2; turn++) {
      const c = contender(t, 'semaphore', { prefix, consul: agent.client, session })
      await holds(c)
      await c.close()
    }
    await eventually('a clean prefix', async () =>
      (await listPrefix(agent.url, prefix)).every((e) => e.Key.endsWith('/.lock'))
        ? true
        : undefined,
    )
    assert.equal(await sessionExists(session), true)
  })
})
