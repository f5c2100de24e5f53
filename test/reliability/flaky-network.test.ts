// 20 contenders loop acquire → hold 100 ms → close → new semaphore, through a proxy that fails
// 10% of requests with 500, resets 5% of connections and delays 30% by up to 200 ms: never more
// than 3 hold, nothing crashes or rejects unhandled, and every contender is served.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, semaphore, type ConsulClient } from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { eventually, listPrefix, sessionsNamed, sleep } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const LIMIT = 3
const CONTENDERS = 20
const CLIENTS = 4
const RUN_MS = Number(process.env['RXSEM_FLAKY_MS'] ?? 45_000)

describe('a flaky network', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  const clients: ConsulClient[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
  before(async () => {
    process.on('unhandledRejection', onUnhandled)
    process.on('uncaughtException', onUnhandled)
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr)
    for (let i = 0; i < CLIENTS; i++) clients.push(createConsulClient({ address: proxy.addr }))
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.close()))
    await proxy.close()
    await consul.close()
    process.off('unhandledRejection', onUnhandled)
    process.off('uncaughtException', onUnhandled)
  })

  it(`keeps at most ${LIMIT} of ${CONTENDERS} looping contenders holding, and serves them all`, async (t) => {
    const prefix = testPrefix(t, consul.url, 'flaky')
    const name = `flaky ${prefix}`
    const recorder = new SafetyRecorder(LIMIT, () => Date.now())
    const served = new Array<number>(CONTENDERS).fill(0)
    const errors: unknown[] = []
    let releaseFailures = 0
    proxy.setMode({ random: { error500: 0.1, close: 0.05, latencyMs: 200, latencyP: 0.3 } })
    const endAt = Date.now() + RUN_MS

    const loop = async (i: number): Promise<void> => {
      const who = `c${i}`
      while (Date.now() < endAt) {
        const sem = semaphore({
          prefix,
          limit: LIMIT,
          consul: clients[i % CLIENTS],
          ttl: '10s',
          sessionName: name,
          value: who,
        })
        let resolveHeld: (held: boolean) => void = () => undefined
        const held = new Promise<boolean>((resolve) => (resolveHeld = resolve))
        const sub = keep(
          t,
          sem.holding$.subscribe({
            next: (h) => {
              recorder.record(who, h)
              if (h) resolveHeld(true)
            },
            error: (e: unknown) => {
              errors.push(e)
              resolveHeld(false)
            },
          }),
        )
        const timeLeft = sleep(Math.max(0, endAt - Date.now())).then(() => false)
        if (await Promise.race([held, timeLeft])) {
          served[i] = (served[i] ?? 0) + 1
          await sleep(100)
        }
        await sem.close().catch(() => releaseFailures++)
        sub.unsubscribe()
      }
    }
    await Promise.all(Array.from({ length: CONTENDERS }, (_, i) => loop(i)))
    const faults = proxy.requests().length
    proxy.setMode('pass')

    assert.deepEqual(errors, [], 'no contender ended with an error')
    assert.deepEqual(unhandled, [], 'no unhandled rejection or exception')
    assert.equal(recorder.assertSafe(), 0, 'no overlap')
    assert.ok(recorder.maxConcurrent() <= LIMIT)
    const starved = served.flatMap((n, i) => (n === 0 ? [`c${i}`] : []))
    assert.deepEqual(starved, [], 'every contender was served at least once')
    const total = served.reduce((a, b) => a + b, 0)
    t.diagnostic(
      `flaky network ${RUN_MS} ms: ${total} acquisitions (per contender min ${Math.min(...served)}, ` +
        `max ${Math.max(...served)}), ${faults} requests through the proxy, ` +
        `${releaseFailures} close() calls rejected with ReleaseFailed, max concurrent ` +
        `${recorder.maxConcurrent()}`,
    )
    // A release that failed leaves its session to the TTL (at most 2 x 10 s).
    await eventually(
      'nothing left',
      async () => {
        const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
        const sessions = await sessionsNamed(consul.url, name)
        return keys.every((k) => k === `${prefix}/.lock`) && sessions.length === 0
          ? true
          : undefined
      },
      30_000,
    )
  })
})
