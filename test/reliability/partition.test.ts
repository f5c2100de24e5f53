// A holder cut off from Consul (its traffic blackholed by its own fault proxy) gives its slot up
// before its lease deadline, so before Consul can invalidate its session and hand the slot on:
// no overlap, in every trial. partition-consul-lock.test.ts measures `consul lock -n 2` likewise.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { createConsulClient, semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { eventually, sessionsNamed } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const TTL_MS = 10_000

const TRIALS = 3

describe('a partitioned holder', () => {
  const agent = agentSuite()

  /** Polls the session until Consul no longer has it; returns when it was last seen alive. */
  const watchSession = (session: string) => {
    let lastAliveAskedAt = 0
    let goneSeenAt: number | undefined
    const done = (async () => {
      for (;;) {
        const askedAt = Date.now()
        const res = await fetch(`${agent.url}/v1/session/info/${session}`)
        const body = (await res.json()) as unknown[] | null
        if (body === null || body.length === 0) {
          goneSeenAt = Date.now()
          return
        }
        lastAliveAskedAt = askedAt
        await new Promise((d) => setTimeout(d, 50))
      }
    })()
    return { done, lastAliveAskedAt: () => lastAliveAskedAt, goneSeenAt: () => goneSeenAt }
  }

  for (let trial = 1; trial <= TRIALS; trial++) {
    it(`trial ${trial} of ${TRIALS}: stops holding before its lease deadline, and before anyone takes over (TTL 10s)`, async (t) => {
      const prefix = testPrefix(t, agent.url, `partition-${trial}`)
      const name = `partition ${prefix}`
      const proxy = await startFaultProxy(agent.addr)
      const holderClient = createConsulClient({ address: proxy.addr })
      const recorder = new SafetyRecorder(1, () => Date.now())
      const holder = semaphore({
        prefix,
        limit: 1,
        consul: holderClient,
        ttl: TTL_MS,
        sessionName: name,
      })
      const waiter = semaphore({
        prefix,
        limit: 1,
        consul: agent.client,
        ttl: TTL_MS,
        sessionName: name,
      })
      const subs = [holder.holding$.subscribe((h) => recorder.record('holder', h))]
      try {
        const held = await firstValueFrom(holder.state$.pipe(filter((s) => s.holding)))
        // The waiter starts once the holder holds, so that they cannot swap roles.
        subs.push(waiter.holding$.subscribe((h) => recorder.record('waiter', h)))
        await firstValueFrom(waiter.state$.pipe(filter((s) => s.rank === 0)))
        const session = held.session ?? ''
        // Let the lease run a while, so that a renewal (not the create) sets the deadline in
        // some trials: the cut comes at a different point of the renewal cycle each time.
        await new Promise((d) => setTimeout(d, 1500 + trial * 1500))
        const cutAt = Date.now()
        proxy.setMode('blackhole')
        const leaseFrom = Math.max(
          ...proxy
            .requests()
            .filter(
              (r) => r.path === `/v1/session/renew/${session}` || r.path === '/v1/session/create',
            )
            .filter((r) => r.at <= cutAt)
            .map((r) => r.at),
        )
        const sessionWatch = watchSession(session)
        await firstValueFrom(holder.holding$.pipe(filter((h) => !h)))
        const stoppedAt = Date.now()
        await firstValueFrom(waiter.holding$.pipe(filter(Boolean)))
        const takenAt = Date.now()
        await sessionWatch.done
        const deadline = leaseFrom + TTL_MS * 0.9
        t.diagnostic(
          `trial ${trial}: cut ${cutAt - leaseFrom} ms after the last renewal; holder stopped ` +
            `${stoppedAt - cutAt} ms after the cut (${deadline - stoppedAt} ms before its lease ` +
            `deadline); session gone ${(sessionWatch.goneSeenAt() ?? 0) - cutAt} ms after the cut; ` +
            `waiter took over ${takenAt - cutAt} ms after the cut`,
        )
        // The proxy sees a renewal a little after it was sent, so the deadline may be a few ms
        // earlier than this; 250 ms covers that and the timer's lateness on a busy machine.
        assert.ok(stoppedAt <= deadline + 250, `stopped ${stoppedAt - deadline} ms after deadline`)
        assert.ok(
          stoppedAt < sessionWatch.lastAliveAskedAt(),
          'stopped while Consul still had the session',
        )
        assert.ok(
          takenAt > sessionWatch.lastAliveAskedAt(),
          'the waiter held only after the session was gone',
        )
        assert.equal(recorder.assertSafe(), 0, 'no overlap at all')
        assert.equal(recorder.maxConcurrent(), 1)
      } finally {
        proxy.setMode('pass')
        await waiter.close()
        await holder.close().catch(() => undefined)
        subs.forEach((s) => s.unsubscribe())
        await holderClient.close()
        await proxy.close()
      }
      await eventually('sessions gone', async () =>
        (await sessionsNamed(agent.url, name)).length === 0 ? true : undefined,
      )
    })
  }
})
