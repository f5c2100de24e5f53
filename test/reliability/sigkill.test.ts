// Contender processes killed with SIGKILL cannot release: their slots come free only when Consul
// invalidates their sessions (TTL), and a waiter must never hold before that. Once the sessions are
// gone, so are their contender keys (behavior delete), and the waiter uses the slot.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { HOLDER_FLAGS, semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { processGone } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { eventually, holdersOf, listPrefix, readLock, sessionsNamed } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

interface ChildState {
  readonly session?: string
  readonly holding: boolean
  readonly rank?: number
}

/** Starts the library in a child Node process; `states` collects what it prints. */
function startContender(addr: string, prefix: string, name: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'fixtures/contender-process.ts'),
      addr,
      prefix,
      '1',
      name,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const states: ChildState[] = []
  if (child.stdout) {
    createInterface({ input: child.stdout }).on('line', (line) =>
      states.push(JSON.parse(line) as ChildState),
    )
  }
  return { child, states }
}

/** How long a started child may take to contend: node and tsx start slowly on a loaded machine. */
const CHILD_START_MS = 60_000

describe('contender processes killed with SIGKILL', () => {
  const children: ChildProcess[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  })
  const agent = agentSuite()

  it('frees the slot only once the killed holder session is gone, and the waiter then uses it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'sigkill')
    const name = `sigkill ${prefix}`
    const recorder = new SafetyRecorder(1, () => Date.now())
    const holder = startContender(agent.addr, prefix, name)
    children.push(holder.child)
    const holderState = await eventually(
      'the child holds',
      () => holder.states.find((s) => s.holding),
      CHILD_START_MS,
    )
    const holderSession = holderState.session ?? ''
    recorder.record('child-holder', true, Date.now())
    const queued = startContender(agent.addr, prefix, name)
    children.push(queued.child)
    const queuedState = await eventually(
      'the second child waits',
      () => queued.states.find((s) => s.rank !== undefined),
      CHILD_START_MS,
    )
    const waiter = semaphore({
      prefix,
      limit: 1,
      consul: agent.client,
      ttl: '10s',
      sessionName: name,
    })
    const sub = waiter.holding$.subscribe((h) => recorder.record('in-process-waiter', h))
    try {
      await firstValueFrom(waiter.state$.pipe(filter((s) => s.rank !== undefined)))

      const killedAt = Date.now()
      holder.child.kill('SIGKILL')
      queued.child.kill('SIGKILL')
      assert.ok(holder.child.pid && (await processGone(holder.child.pid)), 'holder process gone')
      assert.ok(queued.child.pid && (await processGone(queued.child.pid)), 'queued process gone')
      // A killed process holds nothing more; from here Consul alone keeps its slot taken.
      recorder.record('child-holder', false, killedAt)

      // Watch the holder's session; the waiter must not hold while it still exists.
      let lastAliveAskedAt = killedAt
      let heldAt: number | undefined
      void firstValueFrom(waiter.holding$.pipe(filter(Boolean))).then(() => (heldAt = Date.now()))
      const goneAt = await eventually(
        'the killed holder session invalidated',
        async () => {
          const askedAt = Date.now()
          const res = await fetch(`${agent.url}/v1/session/info/${holderSession}`)
          const body = (await res.json()) as unknown[] | null
          if (body !== null && body.length > 0) {
            lastAliveAskedAt = askedAt
            assert.equal(heldAt, undefined, 'the waiter held while the killed session was alive')
            return undefined
          }
          return Date.now()
        },
        30_000,
      )
      // Once the session is gone, so is its contender key.
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      assert.ok(!keys.includes(`${prefix}/${holderSession}`), 'no key of the killed holder left')
      await firstValueFrom(waiter.holding$.pipe(filter(Boolean)))
      const takenAt = heldAt ?? Date.now()
      assert.ok(takenAt > lastAliveAskedAt, 'held only after the session was gone')
      await eventually(
        'the queued child session gone too, with its key',
        async () => {
          const left = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
          return left.includes(`${prefix}/${queuedState.session}`) ? undefined : true
        },
        30_000,
      )
      const waiterSession = (await firstValueFrom(waiter.state$)).session
      assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [waiterSession])
      assert.equal(recorder.assertSafe(), 0)
      t.diagnostic(
        `SIGKILL (TTL 10s): holder session invalidated ${goneAt - killedAt} ms after the kill; ` +
          `the waiter held ${takenAt - killedAt} ms after the kill (${takenAt - goneAt} ms after ` +
          'the invalidation was seen)',
      )
    } finally {
      await waiter.close()
      sub.unsubscribe()
    }
    await eventually('nothing left', async () => {
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      const sessions = await sessionsNamed(agent.url, name)
      return keys.every((k) => k === `${prefix}/.lock`) && sessions.length === 0 ? true : undefined
    })
  })

  it('frees a slot handed to a waiter killed at that moment, once its session is gone', async (t) => {
    const prefix = testPrefix(t, agent.url, 'sigkill-hand-off')
    const name = `sigkill-hand-off ${prefix}`
    const recorder = new SafetyRecorder(1, () => Date.now())
    const holder = semaphore({
      prefix,
      limit: 1,
      consul: agent.client,
      ttl: '10s',
      sessionName: name,
    })
    const holderSub = holder.holding$.subscribe((h) => recorder.record('holder', h))
    await firstValueFrom(holder.holding$.pipe(filter(Boolean)))
    const doomed = startContender(agent.addr, prefix, name)
    children.push(doomed.child)
    const doomedState = await eventually(
      'the child waits first in line',
      () => doomed.states.find((s) => s.rank === 0),
      CHILD_START_MS,
    )
    const next = semaphore({
      prefix,
      limit: 1,
      consul: agent.client,
      ttl: '10s',
      sessionName: name,
    })
    const nextSub = next.holding$.subscribe((h) => recorder.record('next', h))
    try {
      // The holder's last snapshot lists the child first: kill it, and release at once.
      await firstValueFrom(holder.state$.pipe(filter((s) => s.waiting.length === 2)))
      const killedAt = Date.now()
      doomed.child.kill('SIGKILL')
      await holder.close()
      const childKey = (await listPrefix(agent.url, prefix)).find(
        (e) => e.Key === `${prefix}/${doomedState.session}`,
      )
      assert.equal(
        childKey?.Flags,
        String(HOLDER_FLAGS),
        'the release handed the slot to the child',
      )
      assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [doomedState.session])
      assert.ok(doomed.child.pid && (await processGone(doomed.child.pid)), 'the child is gone')

      let lastAliveAskedAt = killedAt
      const goneAt = await eventually(
        "the killed child's session invalidated",
        async () => {
          const askedAt = Date.now()
          const res = await fetch(`${agent.url}/v1/session/info/${doomedState.session}`)
          const body = (await res.json()) as unknown[] | null
          if (body !== null && body.length > 0) {
            lastAliveAskedAt = askedAt
            return undefined
          }
          return Date.now()
        },
        30_000,
      )
      await firstValueFrom(next.holding$.pipe(filter(Boolean)))
      const takenAt = Date.now()
      const nextHeld = recorder.intervals().filter((i) => i.who === 'next')
      assert.equal(nextHeld.length, 1)
      assert.ok(
        nextHeld.every((i) => i.from > lastAliveAskedAt),
        'the next waiter held only after the handed session was gone',
      )
      assert.equal(recorder.assertSafe(), 0)
      t.diagnostic(
        `hand-off to a killed waiter (TTL 10s): its session invalidated ${goneAt - killedAt} ms ` +
          `after the kill; the next waiter held ${takenAt - killedAt} ms after it`,
      )
    } finally {
      await next.close()
      nextSub.unsubscribe()
      holderSub.unsubscribe()
    }
  })
})
