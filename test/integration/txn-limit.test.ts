// The agent's transaction limit (64 operations before Consul 1.14, 128 from it on), as the
// library's transactions meet it on the real agent (1.8.7): fencedTxn refuses only what cannot fit,
// asking the agent's version once per client and only for more than 64 operations; a client that
// may not read the version counts on 64; and an agent that claims 1.14 but is not shows what a
// wrong limit comes to: a clear error, nothing written. The drain batches its writes to the limit.
// allSlots, whose grant writes two operations per semaphore, asks the version when it lists more
// than 32, and a request of several permits, whose grant takes permits + 2 operations, when it
// asks for more than 62: each fails before writing anything when they do not fit. A raise of the
// limit wakes as many of the waiters it admits as its transaction takes.
// Each test puts its own fault proxy between its client and the agent, to see what was sent.
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { filter, firstValueFrom, lastValueFrom } from 'rxjs'
import { SemaphoreError, allSlots, drain, liftDrain, semaphore, setLimit } from '../../src/index.js'
import { CONTENDER_FLAGS } from '../../src/base/flags.js'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import { agentSuite } from '../support/agent-suite.js'
import { startFaultProxy, type FaultMode, type FaultProxy } from '../support/fault-proxy.js'
import {
  createRawSession,
  destroyRawSession,
  eventually,
  listPrefix,
  putRaw,
} from '../support/observe.js'
import { closing, keep, testPrefix } from '../support/tracked.js'

const utf8 = new TextEncoder()

async function readValue(url: string, key: string): Promise<string | undefined> {
  const res = await fetch(`${url}/v1/kv/${key}?raw`)
  const text = await res.text()
  return res.status === 404 ? undefined : text
}

/** `n` writes of one byte under `base`. */
const writes = (base: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    verb: 'set' as const,
    key: `${base}-${i}`,
    value: utf8.encode('x'),
  }))

/** How many requests the proxy saw of `METHOD path`. */
const seen = (proxy: FaultProxy, request: string): number => proxy.counts().get(request) ?? 0

/** An InvalidOptions whose message matches every pattern. */
const invalid =
  (...patterns: RegExp[]) =>
  (error: unknown): boolean => {
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'InvalidOptions', error.message)
    for (const pattern of patterns) assert.match(error.message, pattern)
    return true
  }

/** Only `/v1/agent/self` is treated as `then` says; everything else reaches the agent. */
const agentSelf = (then: FaultMode): FaultMode => ({
  when: { method: 'GET', pathPrefix: '/v1/agent/self' },
  then,
})

/** The proxy saw the agent's version asked once, and no session made and no transaction sent. */
function askedAndWroteNothing(proxy: FaultProxy): void {
  assert.equal(seen(proxy, 'GET /v1/agent/self'), 1)
  assert.equal(seen(proxy, 'PUT /v1/session/create'), 0, 'no session was made')
  assert.equal(seen(proxy, 'PUT /v1/txn'), 0, 'nothing was written')
}

/** `/v1/agent/self` answered as the agent does, but naming Consul 1.14.0. */
const claims114 = agentSelf({
  rewrite: (_path, json) => {
    const self = json as { Config: Record<string, unknown> }
    return { ...self, Config: { ...self.Config, Version: '1.14.0' } }
  },
})

describe("the agent's transaction limit", () => {
  const agent = agentSuite()

  /** A proxy in front of the agent and a client through it, both closed when the test ends. */
  async function proxied(
    t: TestContext,
    mode: FaultMode,
  ): Promise<{ proxy: FaultProxy; client: ConsulHttpClient }> {
    const proxy = closing(t, await startFaultProxy(agent.addr))
    proxy.setMode(mode)
    const client = closing(t, createConsulClient({ address: proxy.addr }))
    return { proxy, client }
  }

  /** A holder of `prefix` on `client`, closed when the test ends. */
  async function holder(t: TestContext, prefix: string, client: ConsulHttpClient) {
    const sem = closing(t, semaphore({ prefix, limit: 1, consul: client }))
    keep(t, sem.holding$.subscribe())
    await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
    return sem
  }

  it('fencedTxn on Consul 1.8.7: 63 operations commit unasked, 64 are refused and nothing is sent', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-187')
    const { proxy, client } = await proxied(t, 'pass')
    const sem = await holder(t, prefix, client)
    const base = `${prefix}-data/w`

    const txnsBefore = seen(proxy, 'PUT /v1/txn')
    assert.equal((await sem.fencedTxn(writes(base, 63))).committed, true)
    assert.equal(await readValue(agent.url, `${base}-62`), 'x')
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 0, '64 operations in all: nothing to ask')
    assert.equal(seen(proxy, 'PUT /v1/txn'), txnsBefore + 1)

    const refused = invalid(
      /given 64 operations; it takes at most 63 on this agent/,
      /Consul 1\.8\.7 takes at most 64 operations in one transaction \(128 from Consul 1\.14 on\)/,
      /Nothing was sent/,
    )
    await assert.rejects(sem.fencedTxn(writes(`${base}b`, 64)), refused)
    await assert.rejects(sem.fencedTxn(writes(`${base}b`, 64)), refused)
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 1, 'the version is asked once per client')
    assert.equal(seen(proxy, 'PUT /v1/txn'), txnsBefore + 1, 'no transaction was sent')
    assert.equal(await readValue(agent.url, `${base}b-0`), undefined)
    assert.equal(sem.isHolding(), true, 'a refused write does not touch the slot')
  })

  it('a client that may not read the agent (403 on /v1/agent/self) counts on 64', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-403')
    const { proxy, client } = await proxied(
      t,
      agentSelf({ status: 403, body: 'Permission denied' }),
    )
    const sem = await holder(t, prefix, client)
    const base = `${prefix}-data/w`
    const txnsBefore = seen(proxy, 'PUT /v1/txn')

    const refused = invalid(
      /given 64 operations; it takes at most 63 on this agent/,
      /may not read it \(GET \/v1\/agent\/self: 403; it needs agent:read\)/,
      /counts on 64 operations in one transaction, which every Consul version takes/,
      /Nothing was sent/,
    )
    await assert.rejects(sem.fencedTxn(writes(base, 64)), refused)
    await assert.rejects(sem.fencedTxn(writes(base, 64)), refused)
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 1, 'a 403 is kept: not asked again')
    assert.equal(seen(proxy, 'PUT /v1/txn'), txnsBefore, 'no transaction was sent')
    assert.equal(await readValue(agent.url, `${base}-0`), undefined)

    assert.equal((await sem.fencedTxn(writes(base, 63))).committed, true)
    assert.equal(await readValue(agent.url, `${base}-62`), 'x')
  })

  it("an agent that claims 1.14 gets up to 127 of the caller's operations; 1.8.7 refuses 65 and fencedTxn says so", async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-claim')
    const { proxy, client } = await proxied(t, claims114)
    const sem = await holder(t, prefix, client)
    const base = `${prefix}-data/w`
    const txnsBefore = seen(proxy, 'PUT /v1/txn')

    // 64 of the caller's pass the limit check and are sent: the real agent refuses 65.
    await assert.rejects(
      sem.fencedTxn(writes(base, 64)),
      invalid(
        /Consul refused the fenced write of 65 operations, nothing was written/,
        /413: Transaction contains too many operations \(65 > 64\)/,
        /counted on 128: Consul 1\.14\.0 takes at most 128 operations/,
      ),
    )
    const sent = proxy.requests().filter((r) => r.path === '/v1/txn')
    assert.equal(sent.length, txnsBefore + 1, 'the 65 operations were sent')
    assert.equal(sent.at(-1)?.answer?.status, 413)
    assert.equal(await readValue(agent.url, `${base}-0`), undefined, 'nothing was written')

    // 128 of the caller's do not fit even there: refused before sending.
    await assert.rejects(
      sem.fencedTxn(writes(base, 128)),
      invalid(
        /given 128 operations; it takes at most 127 on this agent/,
        /Consul 1\.14\.0 takes at most 128 operations in one transaction/,
        /Nothing was sent/,
      ),
    )
    assert.equal(seen(proxy, 'PUT /v1/txn'), txnsBefore + 1, 'no second transaction was sent')
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 1)
    assert.equal(sem.isHolding(), true, 'a refused write does not touch the slot')
    assert.equal((await sem.fencedTxn(writes(base, 63))).committed, true)
  })

  /** An allSlots contender of `n` semaphores under `prefix` on `client`, closed when the test ends. */
  const ofSemaphores = (t: TestContext, prefix: string, n: number, client: ConsulHttpClient) =>
    closing(
      t,
      allSlots(
        Array.from({ length: n }, (_, i) => ({
          prefix: `${prefix}/${i}`,
          limit: 1,
          consul: client,
        })),
      ),
    )

  /** Waits until nothing is left under `prefix` (the contender's keys went with its session). */
  const emptied = (prefix: string) =>
    eventually(`nothing under ${prefix}`, async () =>
      (await listPrefix(agent.url, prefix)).length === 0 ? true : undefined,
    )

  it('allSlots on Consul 1.8.7: 32 semaphores hold unasked, 33 fail before anything is written', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-all')
    const { proxy, client } = await proxied(t, 'pass')

    const fits = ofSemaphores(t, `${prefix}/fits`, 32, client)
    keep(t, fits.holding$.subscribe())
    await firstValueFrom(fits.holding$.pipe(filter(Boolean)))
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 0, 'a grant of 64 operations asks nothing')
    await fits.close()

    proxy.resetCounts()
    const many = ofSemaphores(t, `${prefix}/many`, 33, client)
    await assert.rejects(
      lastValueFrom(many.state$),
      invalid(
        /allSlots lists 33 semaphores/,
        /66 in all: Consul 1\.8\.7 takes at most 64 operations in one transaction/,
        /List at most 32 on this agent\. Nothing was written/,
      ),
    )
    askedAndWroteNothing(proxy)
  })

  it('allSlots on an agent that claims 1.14: 33 semaphores join, and the grant refused with 413 ends it clean', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-all-claim')
    const { proxy, client } = await proxied(t, claims114)
    const many = ofSemaphores(t, prefix, 33, client)
    await assert.rejects(
      lastValueFrom(many.state$),
      invalid(
        /Consul refused the grant of 66 operations/,
        /413: Transaction contains too many operations \(66 > 64\)/,
        /counted on 128: Consul 1\.14\.0 takes at most 128 operations/,
      ),
    )
    const grants = proxy.requests().filter((r) => r.path === '/v1/txn' && r.answer?.status === 413)
    assert.equal(grants.length, 1, 'the refused grant was not sent again')
    await emptied(prefix)
  })

  it('permits on Consul 1.8.7: 62 hold unasked (a grant of 64 operations), 63 fail before any session is made', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-permits')
    const { proxy, client } = await proxied(t, 'pass')

    // Its 62 sessions are made at once, each request listening to one abort signal.
    const warnings: string[] = []
    const onWarning = (warning: Error): void => void warnings.push(warning.name)
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const fits = closing(
      t,
      semaphore({ prefix: `${prefix}/fits`, limit: 62, permits: 62, consul: client }),
    )
    keep(t, fits.holding$.subscribe())
    await firstValueFrom(fits.holding$.pipe(filter(Boolean)))
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 0, 'a grant of 64 operations asks nothing')
    assert.deepEqual(warnings, [], 'no warning from Node')
    await fits.close()

    proxy.resetCounts()
    const many = closing(
      t,
      semaphore({ prefix: `${prefix}/many`, limit: 63, permits: 63, consul: client }),
    )
    await assert.rejects(
      lastValueFrom(many.holding$),
      invalid(
        /a request of 63 permits takes them in one transaction of 65 operations/,
        /Consul 1\.8\.7 takes at most 64 operations in one transaction/,
        /Ask for at most 62 permits on this agent/,
        /No session was made/,
      ),
    )
    askedAndWroteNothing(proxy)
  })

  it('permits on an agent that claims 1.14: the grant of 63 refused with 413 ends the contender clean', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-permits-claim')
    const { proxy, client } = await proxied(t, claims114)
    const many = closing(t, semaphore({ prefix, limit: 63, permits: 63, consul: client }))
    await assert.rejects(lastValueFrom(many.holding$), (error: unknown) => {
      assert.ok(error instanceof SemaphoreError, String(error))
      assert.match(error.message, /413: Transaction contains too many operations \(65 > 64\)/)
      return true
    })
    const txns = proxy.requests().filter((r) => r.path === '/v1/txn')
    assert.deepEqual(
      txns.map((r) => r.answer?.status),
      [413],
      'the refused grant is the only write, and is not sent again',
    )
    assert.equal(seen(proxy, 'PUT /v1/session/create'), 63)
    await emptied(prefix)
  })

  it('permits beyond what any agent takes are refused at once, saying why', () => {
    assert.throws(
      () => semaphore({ prefix: 'p', limit: 200, permits: 127 }),
      invalid(/127 must be a whole number from 1 to 126: .* no Consul version takes more than 128/),
    )
    assert.throws(
      () => semaphore({ prefix: 'p', limit: 4, permits: 5 }),
      invalid(/5 must be a whole number from 1 to 4: a request for more slots than the limit/),
    )
  })

  it('setLimit on Consul 1.8.7 wakes 31 of the 40 waiters a raise admits, in its one transaction of 63 operations', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-relimit')
    await holder(t, prefix, agent.client)
    // Forty waiters of this library, as Consul shows them: each key locked by its own session with
    // the waiting contender's flags. They are keys only, so that what the raise wrote stays.
    const waiters = await Promise.all(
      Array.from({ length: 40 }, () =>
        createRawSession(agent.url, { Name: 'txn-limit waiter', TTL: '30s', Behavior: 'delete' }),
      ),
    )
    t.after(() => Promise.all(waiters.map((id) => destroyRawSession(agent.url, id))))
    for (const id of waiters) {
      assert.ok(
        await putRaw(agent.url, `${prefix}/${id}`, '', `acquire=${id}&flags=${CONTENDER_FLAGS}`),
      )
    }
    const { proxy, client } = await proxied(t, 'pass')

    const change = await setLimit({ prefix, limit: 41, consul: client })
    const woken = (await listPrefix(agent.url, prefix)).filter(
      (e) =>
        waiters.includes(e.Key.slice(prefix.length + 1)) && BigInt(e.ModifyIndex) === change.index,
    )
    assert.equal(woken.length, 31, 'the waiters whose keys the raise rewrote')
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 1, 'the agent was asked its version')
    assert.deepEqual(
      proxy
        .requests()
        .filter((r) => r.path === '/v1/txn')
        .map((r) => r.answer?.status),
      [200],
    )

    // Raised again through an agent that claims 1.14: all 40 are woken in one transaction of 81
    // operations, which the real agent refuses whole, so the limit stays as it was.
    const claimed = await proxied(t, claims114)
    await assert.rejects(
      setLimit({ prefix, limit: 42, consul: claimed.client }),
      (error: unknown) =>
        error instanceof SemaphoreError &&
        /413: Transaction contains too many operations \(81 > 64\)/.test(error.message),
    )
    assert.equal((await setLimit({ prefix, limit: 41, consul: agent.client })).previous, 41)
  })

  it('the drain of a limit of 70 on Consul 1.8.7 writes in transactions of at most 64', async (t) => {
    const prefix = testPrefix(t, agent.url, 'txn-limit-drain')
    const { proxy, client } = await proxied(t, 'pass')

    const drained = await drain({ prefix, limit: 70, consul: client })
    assert.equal(drained.added, 70)
    let txns = proxy.requests().filter((r) => r.path === '/v1/txn')
    // 64 of its keys; then the other 6 and `.lock` listing all 70.
    assert.deepEqual(
      txns.map((r) => r.answer?.status),
      [200, 200],
    )
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 1)

    proxy.resetCounts()
    const lifted = await liftDrain({ prefix, consul: client })
    assert.equal(lifted.sessions.length, 70)
    txns = proxy.requests().filter((r) => r.path === '/v1/txn')
    // The keys in 64 and 6, then `.lock` without the drain; the version is known already.
    assert.deepEqual(
      txns.map((r) => r.answer?.status),
      [200, 200, 200],
    )
    assert.equal(seen(proxy, 'GET /v1/agent/self'), 0)
  })
})
