// The library's OpenTelemetry metrics and spans, read from the real SDK (a MeterProvider with a
// reader collecting on demand, a BasicTracerProvider with the in-memory span exporter) while
// contenders acquire, hold, release, hand over, lose their slot and race on the real agent.
// Every test also checks that no attribute carries the ACL token or a session id.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { metrics, SpanStatusCode, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  type ConsulClient,
  type Semaphore,
  type SemaphoreOptions,
} from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import {
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  putRaw,
  sessionsNamed,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { suiteScope, testPrefix } from '../support/tracked.js'
import {
  recorded,
  telemetrySdk,
  total,
  type Point,
  type TelemetrySdk,
} from '../support/telemetry-sdk.js'

const execFileAsync = promisify(execFile)

/** Sent with every request (the dev agent has no ACLs and ignores it): it must show nowhere. */
const TOKEN = 'telemetry-test-token-4b1d8e2a'

describe('telemetry (OpenTelemetry metrics and spans)', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let client: ConsulClient
  const subs: Subscription[] = []
  const sdks: TelemetrySdk[] = []
  /** Every session id a contender of this file had. */
  const sessions = new Set<string>()

  before(async () => {
    consul = await sharedAgent()
    client = createConsulClient({ address: consul.addr, token: TOKEN, env: {} })
  })
  after(async () => {
    subs.forEach((s) => s.unsubscribe())
    await client.close()
    await Promise.all(sdks.map((sdk) => sdk.shutdown()))
  })
  // The prefixes' clean-up: after the contenders above are gone, before the agent closes.
  const suite = suiteScope()
  after(() => consul.close())

  const sdk = (): TelemetrySdk => {
    const made = telemetrySdk()
    sdks.push(made)
    return made
  }
  const prefixFor = (name: string): string =>
    testPrefix(suite, () => consul.url, `telemetry-${name}`)
  const contender = (
    options: Omit<SemaphoreOptions, 'consul'> & { readonly consul?: ConsulClient },
  ): Semaphore => {
    const sem = semaphore({ consul: client, ...options })
    subs.push(
      sem.state$.subscribe((s) => {
        if (s.session !== undefined) sessions.add(s.session)
      }),
    )
    return sem
  }
  const holding = (sem: Semaphore) => firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
  const named = (spans: readonly ReadableSpan[], name: string): ReadableSpan[] =>
    spans.filter((s) => s.name === name)

  /** No attribute of a point or a span carries the token or any session id seen so far. */
  const assertNoSecrets = (points: readonly Point[], spans: readonly ReadableSpan[]): void => {
    const values = [...points.map((p) => p.attributes), ...spans.map((s) => s.attributes)].flatMap(
      (attributes) => Object.values(attributes).map(String),
    )
    assert.ok(values.length > 0, 'there are attributes to check')
    assert.ok(sessions.size > 0, 'there are session ids to look for')
    for (const value of values) {
      assert.ok(!value.includes(TOKEN), `an attribute carries the token: ${value}`)
      for (const session of sessions) {
        assert.ok(!value.includes(session), `an attribute carries session ${session}: ${value}`)
      }
    }
  }

  it('counts an acquisition, its wait and its hold, contenders by phase and Consul requests by endpoint, and traces one wait and one tenure', async () => {
    const telemetry = sdk()
    const prefix = prefixFor('tenure')
    const own = { 'rxsem.prefix': prefix, 'rxsem.limit': 2, 'rxsem.protocol': 'semaphore' }
    const startedAt = Date.now()
    const sem = contender({ prefix, limit: 2, telemetry: telemetry })
    await holding(sem)
    const heldAt = Date.now()

    const whileHeld = await telemetry.points()
    assert.equal(total(whileHeld, 'rxsem.acquisitions', own), 1)
    assert.equal(total(whileHeld, 'rxsem.contenders', { ...own, 'rxsem.phase': 'holding' }), 1)
    assert.equal(total(whileHeld, 'rxsem.contenders', own), 1, 'one contender in all')
    const wait = recorded(whileHeld, 'rxsem.wait.duration', own)
    assert.equal(wait.count, 1)
    assert.ok(wait.sum <= (heldAt - startedAt) / 1000, `waited ${wait.sum} s`)
    assert.equal(recorded(whileHeld, 'rxsem.hold.duration', own).count, 0, 'still holding')
    assert.equal(
      whileHeld.find((p) => p.name === 'rxsem.wait.duration')?.unit,
      's',
      'durations are in seconds',
    )

    // Some guarded work: a fenced write, one round trip while the slot is held.
    await sem.fencedTxn([{ verb: 'set', key: `${prefix}-work`, value: new Uint8Array([1]) }])
    const closedAt = Date.now()
    await sem.close()
    const releasedAt = Date.now()

    const points = await telemetry.points()
    const hold = recorded(points, 'rxsem.hold.duration', own)
    assert.equal(hold.count, 1)
    assert.ok(hold.sum >= (closedAt - heldAt) / 1000, `held ${hold.sum} s`)
    assert.ok(hold.sum <= (releasedAt - startedAt) / 1000, `held ${hold.sum} s`)
    assert.equal(total(points, 'rxsem.losses'), 0, 'a release is not a loss')
    assert.equal(total(points, 'rxsem.contenders', own), 0, 'no contender left')
    for (const endpoint of ['session.create', 'txn', 'session.destroy']) {
      assert.ok(
        total(points, 'rxsem.consul.requests', { 'rxsem.consul.endpoint': endpoint }) >= 1,
        `no ${endpoint} counted`,
      )
    }
    // Aborted: the library cancelled a call it no longer needed (a poll, a superseded write).
    const failed = points.filter(
      (p) =>
        p.name === 'rxsem.consul.requests' &&
        'error.type' in p.attributes &&
        p.attributes['error.type'] !== 'Aborted',
    )
    assert.deepEqual(failed, [], 'no request failed')

    const spans = telemetry.spans()
    const [waitSpan, ...moreWaits] = named(spans, 'rxsem.wait')
    const [tenure, ...moreTenures] = named(spans, 'rxsem.tenure')
    assert.ok(waitSpan && tenure, `spans: ${spans.map((s) => s.name).join(', ')}`)
    assert.deepEqual([moreWaits.length, moreTenures.length], [0, 0])
    assert.deepEqual(waitSpan.attributes, { ...own, 'rxsem.outcome': 'acquired' })
    assert.equal(waitSpan.status.code, SpanStatusCode.UNSET)
    assert.deepEqual(tenure.attributes, {
      ...own,
      'rxsem.rise': 'acquired',
      'rxsem.reason': 'released',
    })
    assert.equal(tenure.status.code, SpanStatusCode.UNSET)
    assert.ok(
      tenure.startTime[0] * 1e3 + tenure.startTime[1] / 1e6 >=
        waitSpan.endTime[0] * 1e3 + waitSpan.endTime[1] / 1e6 - 1,
      'the tenure starts where the wait ends',
    )
    assertNoSecrets(points, spans)
  })

  it("counts a hand-over when a release hands the slot to the waiter, and the waiter's wait", async () => {
    const telemetry = sdk()
    const prefix = prefixFor('hand-over')
    const own = { 'rxsem.prefix': prefix, 'rxsem.limit': 1 }
    const first = contender({ prefix, limit: 1, telemetry })
    await holding(first)
    const next = contender({ prefix, limit: 1, telemetry })
    await firstValueFrom(first.state$.pipe(filter((s) => s.holding && s.waiting.length === 1)))
    const waiting = await telemetry.points()
    assert.equal(total(waiting, 'rxsem.contenders', { ...own, 'rxsem.phase': 'waiting' }), 1)
    assert.equal(total(waiting, 'rxsem.handovers'), 0)

    const releasedAt = Date.now()
    await first.close()
    await holding(next)
    const points = await telemetry.points()
    assert.equal(total(points, 'rxsem.handovers', own), 1)
    assert.equal(total(points, 'rxsem.acquisitions', own), 2)
    const waits = recorded(points, 'rxsem.wait.duration', own)
    assert.equal(waits.count, 2)
    assert.ok(waits.sum > 0, 'the second contender waited')
    assert.ok(Date.now() - releasedAt < 5000)
    await next.close()
    assertNoSecrets(await telemetry.points(), telemetry.spans())
  })

  it("counts a loss by its reason when an operator destroys the holder's session, and ends the tenure span with it", async () => {
    const telemetry = sdk()
    const prefix = prefixFor('loss')
    const own = { 'rxsem.prefix': prefix, 'rxsem.limit': 1 }
    const sem = contender({ prefix, limit: 1, telemetry })
    const held = await holding(sem)
    assert.ok(held.session)
    await destroyRawSession(consul.url, held.session)
    const lost = await firstValueFrom(sem.state$.pipe(filter((s) => !s.holding)))
    assert.ok(
      lost.reason === 'session-invalidated' || lost.reason === 'removed',
      String(lost.reason),
    )
    // It contends again with a new session and holds: a second tenure, after a second wait.
    await firstValueFrom(sem.state$.pipe(filter((s) => s.holding && s.session !== held.session)))
    const points = await telemetry.points()
    assert.equal(total(points, 'rxsem.losses', { ...own, 'rxsem.reason': lost.reason }), 1)
    assert.equal(total(points, 'rxsem.losses', own), 1, 'no other loss')
    assert.equal(total(points, 'rxsem.acquisitions', own), 2)
    assert.equal(recorded(points, 'rxsem.wait.duration', own).count, 2)
    assert.equal(recorded(points, 'rxsem.hold.duration', own).count, 1)
    const [tenure] = named(telemetry.spans(), 'rxsem.tenure')
    assert.equal(tenure?.attributes['rxsem.reason'], lost.reason)
    assert.equal(tenure?.status.code, SpanStatusCode.ERROR)
    await sem.close()
    assertNoSecrets(await telemetry.points(), telemetry.spans())
  })

  describe('two waiters racing for a freed slot', () => {
    let proxy: FaultProxy
    let proxied: ConsulClient
    before(async () => {
      proxy = await startFaultProxy(consul.addr)
      proxied = createConsulClient({ address: proxy.addr, token: TOKEN, env: {} })
    })
    after(async () => {
      await proxied.close()
      await proxy.close()
    })

    it('counts the CAS of .lock that lost', async () => {
      const telemetry = sdk()
      const prefix = prefixFor('cas')
      const own = { 'rxsem.prefix': prefix, 'rxsem.limit': 1, 'rxsem.protocol': 'semaphore' }
      // The holder is another client's (Go's layout, written by hand), so that it does not come
      // back for the slot when its session goes.
      const holder = await createRawSession(consul.url, {
        Name: `raw ${prefix}`,
        Behavior: 'delete',
      })
      sessions.add(holder)
      assert.ok(
        await putRaw(
          consul.url,
          `${prefix}/${holder}`,
          'raw',
          `acquire=${holder}&flags=${SEMAPHORE_FLAGS}`,
        ),
      )
      await putRaw(
        consul.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 1, Holders: { [holder]: true } }),
        `flags=${SEMAPHORE_FLAGS}`,
      )
      // Everyone tries when a slot is free (no ranks), so both waiters CAS on the same snapshot.
      const racers = [0, 1].map(() =>
        contender({ prefix, limit: 1, fairness: false, telemetry, consul: proxied }),
      )
      await Promise.all(
        racers.map((sem) =>
          firstValueFrom(
            sem.state$.pipe(filter((s) => s.waiting.length === 2 && s.holders.length === 1)),
          ),
        ),
      )
      assert.equal(total(await telemetry.points(), 'rxsem.cas.conflicts'), 0)

      // The racers' watch poll in flight answers as soon as the holder's key goes; their next
      // polls are held at the proxy, so the loser hears of the winner from its CAS, not from a
      // snapshot that would cancel its write first.
      const settled = Date.now()
      await eventually(
        "the racers' long poll in flight",
        () =>
          proxy
            .requests()
            .some(
              (r) =>
                r.method === 'GET' &&
                r.at >= settled &&
                r.query.includes('index=') &&
                r.answer === undefined,
            ) || undefined,
      )
      proxy.setMode({ when: { method: 'GET' }, then: { latencyMs: 3000 } })
      await destroyRawSession(consul.url, holder)
      const conflicts = await eventually('a lost CAS counted', async () => {
        const n = total(await telemetry.points(), 'rxsem.cas.conflicts', own)
        return n > 0 ? n : undefined
      })
      assert.equal(conflicts, 1, 'one of the two lost')
      proxy.setMode('pass')
      await Promise.race(racers.map(holding))
      await Promise.all(racers.map((sem) => sem.close()))
      assertNoSecrets(await telemetry.points(), telemetry.spans())
    })
  })

  it('measures a leader election as protocol lock', async () => {
    const telemetry = sdk()
    const prefix = prefixFor('leader')
    const election = leaderElection({ prefix, consul: client, telemetry })
    subs.push(election.state$.subscribe((s) => s.session !== undefined && sessions.add(s.session)))
    await firstValueFrom(election.holding$.pipe(filter(Boolean)))
    await election.close()
    const points = await telemetry.points()
    const own = { 'rxsem.prefix': prefix, 'rxsem.limit': 1, 'rxsem.protocol': 'lock' }
    assert.equal(total(points, 'rxsem.acquisitions', own), 1)
    assert.equal(recorded(points, 'rxsem.hold.duration', own).count, 1)
    assertNoSecrets(points, telemetry.spans())
  })

  it('reports to the global providers by default, and nothing when telemetry is false', async () => {
    const telemetry = sdk()
    metrics.setGlobalMeterProvider(telemetry.meterProvider)
    trace.setGlobalTracerProvider(telemetry.tracerProvider)
    try {
      const measured = prefixFor('global')
      const unmeasured = prefixFor('off')
      const sems = [
        contender({ prefix: measured, limit: 1 }),
        contender({ prefix: unmeasured, limit: 1, telemetry: false }),
      ]
      await Promise.all(sems.map(holding))
      await Promise.all(sems.map((sem) => sem.close()))
      const points = await telemetry.points()
      assert.equal(total(points, 'rxsem.acquisitions', { 'rxsem.prefix': measured }), 1)
      assert.deepEqual(
        points.filter((p) => p.attributes['rxsem.prefix'] === unmeasured),
        [],
        'telemetry: false measured something',
      )
      assert.equal(named(telemetry.spans(), 'rxsem.tenure').length, 1)
    } finally {
      metrics.disable()
      trace.disable()
    }
  })

  it('loads no @opentelemetry/api for a contender when no global provider is registered and its option names none', async () => {
    // A process of its own: this one has loaded the API. It runs the library's sources under
    // tsx, takes a slot with and without providers, and says when the API was first loaded.
    const script = `
      const { createRequire } = await import('node:module')
      const { semaphore } = await import(${JSON.stringify(new URL('../../src/index.ts', import.meta.url).href)})
      const { firstValueFrom, filter } = await import('rxjs')
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((f) => /[\\/]@opentelemetry[\\/]api[\\/]/.test(f))
      const hold = async (options) => {
        const sem = semaphore({ prefix: process.env.PREFIX, limit: 1, ...options })
        await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
        await sem.close()
      }
      await hold({})
      const before = loaded()
      await hold({ telemetry: { meterProvider: { getMeter: () => ({}) } } })
      console.log(JSON.stringify({ before, after: loaded() }))
    `
    const prefix = prefixFor('no-global')
    const { stdout } = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { env: { ...process.env, CONSUL_HTTP_ADDR: consul.addr, PREFIX: prefix }, timeout: 60_000 },
    )
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').pop() ?? ''), {
      before: false,
      after: true,
    })
  })

  it('keeps contending when the telemetry throws', async () => {
    const prefix = prefixFor('throwing')
    const boom = (): never => {
      throw new Error('a broken exporter')
    }
    // Every measurement and every span method throws (making them works, so that the
    // contender's telemetry is in place and each report hits the throw).
    const throwing = (spare: string[] = []): object =>
      new Proxy({}, { get: (_, name) => (spare.includes(String(name)) ? () => undefined : boom) })
    const meterProvider = {
      getMeter: () => new Proxy({}, { get: () => () => throwing(['addCallback']) }),
    }
    const tracerProvider = { getTracer: () => ({ startSpan: () => throwing() }) }
    const sem = contender({ prefix, limit: 1, telemetry: { meterProvider, tracerProvider } })
    await holding(sem)
    await sem.close()
    assert.deepEqual(
      (await sessionsNamed(consul.url, '')).filter((s) => s.Name.endsWith(prefix)),
      [],
      'its session was released',
    )
  })
})
