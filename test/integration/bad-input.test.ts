// Bad input, end to end: a corrupt or foreign `.lock`, options that make no sense, and a server
// (behind the fault proxy) that answers nonsense, refuses, fails or never answers. Each ends in a
// typed SemaphoreError whose message says what to do, or in a contender that waits with holding$
// false; never in a write over someone else's data.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  SemaphoreError,
  type Semaphore,
  type SemaphoreOptions,
  type SemaphoreState,
} from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, onEnd, testPrefix, type Scope } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import {
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  sessionsNamed,
  sleep,
} from '../support/observe.js'

/** Everything a contender emits, until it errors, is closed, or the test `t` ends. */
function follow(t: Scope, sem: Semaphore) {
  const holding: boolean[] = []
  const states: SemaphoreState[] = []
  let error: unknown
  let failed = false
  const subscription = keep(
    t,
    sem.state$.subscribe({
      next: (state) => {
        states.push(state)
        if (holding.at(-1) !== state.holding) holding.push(state.holding)
      },
      error: (e: unknown) => {
        error = e
        failed = true
      },
    }),
  )
  return {
    holding,
    states,
    error: () => error,
    failed: () => failed,
    /** The SemaphoreError it ended with; fails the test if none comes within `withinMs`. */
    async semaphoreError(withinMs = 8000): Promise<SemaphoreError> {
      await eventually('an error', () => (failed ? true : undefined), withinMs)
      assert.ok(error instanceof SemaphoreError, `a SemaphoreError, got ${String(error)}`)
      return error
    },
    stop: () => subscription.unsubscribe(),
  }
}

describe('bad input', () => {
  const proxies: FaultProxy[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()))
  })
  const agent = agentSuite()
  const proxy = async (): Promise<FaultProxy> => {
    const p = await startFaultProxy(agent.addr)
    proxies.push(p)
    return p
  }

  /** No contender key and no session of `name` is left under `prefix` (`.lock` may stay). */
  const nothingLeft = (prefix: string, name: string) =>
    eventually('contender keys and sessions gone', async () => {
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      const sessions = await sessionsNamed(agent.url, name)
      return keys.every((k) => k === `${prefix}/.lock`) && sessions.length === 0 ? true : undefined
    })

  /** Destroys every session named `name` (one a failed release left to its TTL). */
  const destroySessions = async (name: string) => {
    for (const s of await sessionsNamed(agent.url, name)) await destroyRawSession(agent.url, s.ID)
  }

  describe('a corrupt .lock', () => {
    const cases: [string, string, RegExp][] = [
      ['a body that is not JSON', '{"Limit":2,', /not JSON/],
      ['a JSON array', '[1,2]', /the body is \[1,2\], but it must be a JSON object/],
      ['a JSON string', '"held by ops"', /must be a JSON object/],
      [
        'limit 0',
        '{"Limit":0,"Holders":{}}',
        /Limit is 0, but it must be a whole number of at least 1/,
      ],
      [
        'a negative limit',
        '{"Limit":-2,"Holders":{}}',
        /Limit is -2, but it must be a whole number of at least 1/,
      ],
      ['a fractional limit', '{"Limit":1.5,"Holders":{}}', /Limit/],
      ['a limit written as a string', '{"Limit":"2","Holders":{}}', /Limit/],
      ['holders that are a number', '{"Limit":2,"Holders":7}', /Holders/],
      ['holders that are a list of numbers', '{"Limit":2,"Holders":[1,2]}', /Holders/],
      ['both key casings at once', '{"Limit":2,"holders":[]}', /mixes/],
    ]
    for (const [what, body, reason] of cases) {
      it(`errors with CorruptLock for ${what}, naming the key, and leaves it as it was`, async (t) => {
        const prefix = testPrefix(t, agent.url, 'bad-lock')
        const name = `bad-lock ${prefix}`
        await putRaw(agent.url, `${prefix}/.lock`, body, `flags=${SEMAPHORE_FLAGS}`)
        const before = await listPrefix(agent.url, prefix)
        const run = follow(
          t,
          semaphore({ prefix, limit: 2, consul: agent.client, sessionName: name }),
        )
        const error = await run.semaphoreError()
        assert.equal(error.kind, 'CorruptLock', error.message)
        assert.match(error.message, new RegExp(`${prefix}/\\.lock`))
        assert.match(error.message, reason)
        assert.match(error.message, /left as it is/)
        assert.doesNotMatch(error.message, /expected|PositiveInt/, 'no decoder jargon')
        assert.deepEqual(run.holding, [false])
        await nothingLeft(prefix, name)
        assert.deepEqual(await listPrefix(agent.url, prefix), before, '.lock untouched')
      })
    }
  })

  it('says in plain words what is wrong with a .lock of Limit -1, and what to do', async (t) => {
    const prefix = testPrefix(t, agent.url, 'limit-minus-one')
    const sem = semaphore({ prefix, limit: 2, consul: agent.client })
    onEnd(t, () => sem.close().catch(() => undefined))
    await putRaw(agent.url, `${prefix}/.lock`, '{"Limit":-1}', `flags=${SEMAPHORE_FLAGS}`)
    const run = follow(t, sem)
    const error = await run.semaphoreError()
    assert.equal(error.kind, 'CorruptLock')
    assert.equal(
      error.message,
      `${prefix}/.lock cannot be read: Limit is -1, but it must be a whole number of at least 1. ` +
        'Nothing was written; it was left as it is. Correct its body (`{"Limit":<n>,"Holders":{}}` ' +
        `and the holders it lists) or delete it (consul kv delete ${prefix}/.lock) once no ` +
        'contender relies on it: the next contender writes a new one.',
    )
  })

  it('treats a holders list far longer than the limit as stale, not corrupt: dead holders are pruned', async (t) => {
    // Decision: a list is only as long as its live entries. Go's client prunes holders without a
    // live contender key before counting, so 200 dead sessions in a Limit 2 `.lock` is a lock
    // nobody cleaned, and the next CAS writes it back with the live holders only.
    const prefix = testPrefix(t, agent.url, 'long-holders')
    const dead = Array.from(
      { length: 200 },
      (_, i) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
    )
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 2, Holders: dead }),
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const sem = semaphore({ prefix, limit: 2, consul: agent.client })
    const run = follow(t, sem)
    const state = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [state.session])
    await sem.close()
    run.stop()
  })

  it('treats more live holders than the limit as full: it waits, writes nothing, and takes a slot once enough leave', async (t) => {
    const prefix = testPrefix(t, agent.url, 'over-full')
    const live: string[] = []
    for (let i = 0; i < 3; i++) {
      const s = await createRawSession(agent.url, { Name: `over-full ${i}`, TTL: '15s' })
      await putRaw(agent.url, `${prefix}/${s}`, '', `acquire=${s}&flags=${SEMAPHORE_FLAGS}`)
      live.push(s)
    }
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 2, Holders: live }),
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const before = await readLock(agent.url, prefix)
    const sem = semaphore({ prefix, limit: 2, consul: agent.client })
    const run = follow(t, sem)
    await firstValueFrom(sem.state$.pipe(filter((s) => s.contending)))
    await sleep(700)
    assert.deepEqual(run.holding, [false])
    assert.equal(run.failed(), false, 'not an error: a full semaphore')
    assert.equal((await readLock(agent.url, prefix))?.entry.ModifyIndex, before?.entry.ModifyIndex)
    // Two leave: one live holder remains, so one slot is free.
    await destroyRawSession(agent.url, live[0] ?? '')
    await destroyRawSession(agent.url, live[1] ?? '')
    const held = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    assert.deepEqual(held.holders.slice().sort(), [live[2], held.session].sort())
    await sem.close()
    run.stop()
    await destroyRawSession(agent.url, live[2] ?? '')
  })

  it('errors with Conflict when .lock carries the flags of another use, and writes nothing', async (t) => {
    const prefix = testPrefix(t, agent.url, 'foreign-flags')
    const name = `foreign-flags ${prefix}`
    await putRaw(agent.url, `${prefix}/.lock`, '{"Limit":2,"Holders":{}}', 'flags=42')
    const before = await listPrefix(agent.url, prefix)
    const run = follow(t, semaphore({ prefix, limit: 2, consul: agent.client, sessionName: name }))
    const error = await run.semaphoreError()
    assert.equal(error.kind, 'Conflict')
    assert.match(error.message, /flags 42/)
    assert.match(error.message, /Choose another prefix/)
    await nothingLeft(prefix, name)
    assert.deepEqual(await listPrefix(agent.url, prefix), before)
  })

  it('errors with LimitConflict naming both limits when .lock says another limit', async (t) => {
    const prefix = testPrefix(t, agent.url, 'limit-mismatch')
    const name = `limit-mismatch ${prefix}`
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      '{"Limit":3,"Holders":{}}',
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const before = await listPrefix(agent.url, prefix)
    const run = follow(t, semaphore({ prefix, limit: 4, consul: agent.client, sessionName: name }))
    const error = await run.semaphoreError()
    assert.equal(error.kind, 'LimitConflict')
    assert.match(error.message, /limit is 3/)
    assert.match(error.message, /limit 4/)
    await nothingLeft(prefix, name)
    assert.deepEqual(await listPrefix(agent.url, prefix), before)
  })

  describe('invalid options', () => {
    const cases: [string, Partial<SemaphoreOptions>, RegExp][] = [
      ['limit 0', { limit: 0 }, /option limit: 0 must be a whole number of at least 1/],
      ['a negative limit', { limit: -1 }, /option limit/],
      ['a fractional limit', { limit: 1.5 }, /option limit/],
      ['a TTL under 10s', { ttl: '9s' }, /option ttl: "9s" must be a duration from 10s to 24h/],
      ['a TTL over 24h', { ttl: '25h' }, /option ttl/],
      ['a TTL that is not a duration', { ttl: 'soon' }, /option ttl/],
      ['an empty prefix', { prefix: '' }, /option prefix: must be a non-empty/],
      ['an absolute prefix', { prefix: '/svc/lock' }, /must not start with "\/"/],
      ['a prefix with an empty segment', { prefix: 'svc//lock' }, /empty/],
      ['a prefix with ".."', { prefix: 'svc/../lock' }, /"\.\."/],
      [
        'a rideThrough that is not a boolean',
        { rideThrough: 'yes' as unknown as boolean },
        /option rideThrough: "yes" must be true or false/,
      ],
      [
        'a followLimit that is not a boolean',
        { followLimit: 1 as unknown as boolean },
        /option followLimit: 1 must be true or false/,
      ],
      [
        'telemetry that is neither false nor providers',
        { telemetry: true as unknown as false },
        /option telemetry: must be false or/,
      ],
      [
        'a meterProvider with no getMeter',
        { telemetry: { meterProvider: {} as never } },
        /option telemetry: meterProvider must be a MeterProvider/,
      ],
    ]
    for (const [what, options, message] of cases) {
      it(`throws InvalidOptions for ${what} when the semaphore is made, sending nothing`, async () => {
        const p = await proxy()
        const nobody = createConsulClient({ address: p.addr })
        try {
          assert.throws(
            () => semaphore({ prefix: 'svc/lock', limit: 1, consul: nobody, ...options }),
            (error: unknown) => {
              assert.ok(error instanceof SemaphoreError)
              assert.equal(error.kind, 'InvalidOptions')
              assert.match(error.message, message)
              return true
            },
          )
          await sleep(100)
          assert.equal(p.requests().length, 0, 'nothing was sent to Consul')
        } finally {
          await nobody.close()
        }
      })
    }

    it('normalises a trailing slash: "a/b/" is the same semaphore as "a/b"', async (t) => {
      const prefix = testPrefix(t, agent.url, 'trailing')
      const slashed = semaphore({ prefix: `${prefix}/`, limit: 1, consul: agent.client })
      const plain = semaphore({ prefix, limit: 1, consul: agent.client })
      const first = follow(t, slashed)
      const held = await firstValueFrom(slashed.state$.pipe(filter((s) => s.holding)))
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key).sort()
      assert.deepEqual(keys, [`${prefix}/${held.session}`, `${prefix}/.lock`].sort())
      const second = follow(t, plain)
      // Both share one watch (same client, same normalised prefix): wait for the snapshot that
      // shows the CAS, then the plain one sees the slashed one as the holder and queues behind it.
      const waiting = await firstValueFrom(
        plain.state$.pipe(filter((s) => s.holders.length > 0 && s.rank !== undefined)),
      )
      assert.deepEqual(waiting.holders, [held.session], 'the plain prefix sees the same holder')
      assert.deepEqual(second.holding, [false])
      await slashed.close()
      await firstValueFrom(plain.state$.pipe(filter((s) => s.holding)))
      await plain.close()
      first.stop()
      second.stop()
    })
  })

  describe('a misbehaving server', () => {
    it('errors with a typed Consul error on garbage JSON from the start, never holding', async (t) => {
      const p = await proxy()
      p.setMode({ garbage: '{"ID": 12, <html>' })
      const c = createConsulClient({ address: p.addr })
      try {
        const run = follow(
          t,
          semaphore({ prefix: testPrefix(t, agent.url, 'garbage'), limit: 1, consul: c }),
        )
        const error = await run.semaphoreError()
        assert.equal(error.kind, 'Consul')
        assert.match(error.message, /session\/create/)
        assert.deepEqual(run.holding, [false])
      } finally {
        await c.close()
      }
    })

    // The proxy's garbage comes without the X-Consul-Index header that every agent sends.
    for (const [what, mode, kind] of [
      ['garbage JSON', { garbage: '[{"Key": 7}]' }, 'NotConsul'],
      ['an oversized answer (8 MB)', { oversized: 8 * 1024 * 1024 }, 'Consul'],
    ] as const) {
      it(`drops holding to false, then ends with a typed error, when a holder's server answers ${what}`, async (t) => {
        const p = await proxy()
        const c = createConsulClient({ address: p.addr })
        const prefix = testPrefix(t, agent.url, 'garbage-held')
        const name = `garbage-held ${prefix}`
        try {
          // Short watch wait, so that the next poll (which gets the bad answer) comes soon.
          const sem = semaphore({ prefix, limit: 1, consul: c, sessionName: name, watchWait: '1s' })
          const run = follow(t, sem)
          await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
          p.setMode(mode)
          const error = await run.semaphoreError(10_000)
          assert.equal(error.kind, kind, error.message)
          assert.match(error.message, /GET \/v1\/kv\//)
          assert.equal(run.holding.at(-1), false, `holding$ ended false: ${run.holding.join(',')}`)
          await sem.close().catch(() => undefined)
        } finally {
          p.setMode('pass')
          await c.close()
          await destroySessions(name)
        }
      })
    }

    it('errors with PermissionDenied on a 403, with the hint of the policy to give', async (t) => {
      const p = await proxy()
      p.setMode({ status: 403, body: 'Permission denied' })
      const c = createConsulClient({ address: p.addr })
      try {
        const run = follow(
          t,
          semaphore({ prefix: testPrefix(t, agent.url, 'denied'), limit: 1, consul: c }),
        )
        const error = await run.semaphoreError()
        assert.equal(error.kind, 'PermissionDenied')
        assert.match(error.message, /permission denied/i)
        assert.match(error.message, /session_prefix/)
        assert.deepEqual(run.holding, [false])
      } finally {
        await c.close()
      }
    })

    it('keeps retrying through 500s with holding$ false, and acquires once the server recovers', async (t) => {
      const p = await proxy()
      p.setMode('error500')
      const c = createConsulClient({ address: p.addr })
      const prefix = testPrefix(t, agent.url, 'five-hundreds')
      try {
        const sem = semaphore({ prefix, limit: 1, consul: c })
        const run = follow(t, sem)
        await eventually('a few attempts', () => (p.requests().length >= 3 ? true : undefined))
        assert.deepEqual(run.holding, [false])
        assert.equal(run.failed(), false, '500 is transient: no error')
        p.setMode('pass')
        await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
        await sem.close()
        run.stop()
      } finally {
        await c.close()
      }
    })

    it('waits with holding$ false while the agent accepts connections and never answers, then acquires', async (t) => {
      const p = await proxy()
      p.setMode('blackhole')
      const c = createConsulClient({ address: p.addr, requestTimeoutMs: 500 })
      const prefix = testPrefix(t, agent.url, 'silent')
      try {
        const sem = semaphore({ prefix, limit: 1, consul: c })
        const run = follow(t, sem)
        // 1.5 s of silence, and at least one timed-out request retried (counted, not assumed
        // to fit in those 1.5 s on a loaded machine).
        await sleep(1500)
        await eventually('a retry after a timeout', () => p.requests().length >= 2 || undefined)
        assert.ok(p.requests().length >= 2, `it retried (${p.requests().length} requests)`)
        assert.deepEqual(run.holding, [false])
        assert.equal(run.failed(), false, 'silence is transient: no error')
        assert.equal(run.states.at(-1)?.connected, false)
        p.setMode('pass')
        await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
        await sem.close()
        run.stop()
      } finally {
        await c.close()
      }
    })
  })
})
