// Every failure path of the Consul client, provoked through the fault proxy in front of a real
// agent (no mock of Consul): each one is a typed ConsulError, none carries the ACL token, and
// nothing is ever thrown or left as an unhandled rejection.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { freePort, sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { errorJson, failure, ok, until } from './consul-test-kit.js'
import { suiteScope, testPrefix } from '../support/tracked.js'

const TOKEN = 'tok-5ecret-7f3a9c21'

describe('Consul client failure paths', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let consul: ConsulHttpClient
  let direct: ConsulHttpClient
  const suite = suiteScope() // registered first: the prefix goes before the agent closes
  const prefix = testPrefix(suite, () => agent.url, 'consul-failures')
  const key = `${prefix}/k`
  const seen: ConsulError[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }

  /** Runs the call expecting a failure; keeps the error for the token check at the end. */
  const fails = async (task: TE.TaskEither<ConsulError, unknown>): Promise<ConsulError> => {
    const error = await failure(task)
    seen.push(error)
    return error
  }
  /** Every call of the client, for the modes that break all of them alike. */
  const everyCall = (c: ConsulHttpClient) =>
    [
      ['kv.get', c.kv.get(key)],
      ['kv.list', c.kv.list(prefix)],
      ['kv.list blocking', c.kv.list(prefix, { index: 1n, waitMs: 1000 })],
      ['kv.put', c.kv.put(key, 'v')],
      ['kv.delete', c.kv.delete(key)],
      ['kv.txn', c.kv.txn([{ verb: 'get', key }])],
      ['session.create', c.session.create({ ttl: '10s' })],
      ['session.renew', c.session.renew('00000000-0000-0000-0000-000000000000')],
      ['session.destroy', c.session.destroy('00000000-0000-0000-0000-000000000000')],
      ['session.info', c.session.info('00000000-0000-0000-0000-000000000000')],
    ] as const

  before(async () => {
    process.on('unhandledRejection', onUnhandled)
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
    consul = createConsulClient({
      address: proxy.addr,
      env: { CONSUL_HTTP_TOKEN: TOKEN },
      requestTimeoutMs: 400,
    })
    // Setup and cleanup go straight to the agent with default timeouts: the short timeout above
    // is for the timeout tests, and a busy machine must not fail the setup.
    direct = createConsulClient({ address: agent.addr })
    await ok(direct.kv.put(key, 'initial'))
  })
  after(async () => {
    proxy.setMode('pass')
    await direct.close()
    await consul.close()
    await proxy.close()
    await agent.close()
    process.off('unhandledRejection', onUnhandled)
  })

  it('maps a 500 to ServerError on every call, with the body in the message', async () => {
    proxy.setMode('error500')
    for (const [name, task] of everyCall(consul)) {
      const error = await fails(task)
      assert.equal(error._tag, 'ServerError', name)
      assert.ok(error._tag === 'ServerError' && error.status === 500)
      assert.match(error.message, /the Consul server failed \(500: fault proxy: injected error\)/)
      assert.match(error.request ?? '', /^(GET|PUT|DELETE) \/v1\/[^?]*$/, 'request has no query')
    }
  })

  it('maps 429 to ServerError, 403 to PermissionDenied, 400 and 405 to BadRequest', async () => {
    const cases = [
      [429, 'rate limit exceeded', 'ServerError'],
      [503, 'No cluster leader', 'ServerError'],
      [403, 'Permission denied', 'PermissionDenied'],
      [400, 'Invalid wait time', 'BadRequest'],
      [405, 'method GET not allowed', 'BadRequest'],
    ] as const
    for (const [status, body, tag] of cases) {
      proxy.setMode({ status, body })
      for (const [name, task] of everyCall(consul)) {
        const error = await fails(task)
        assert.equal(error._tag, tag, `${status} on ${name}`)
        assert.ok('status' in error && error.status === status)
        assert.ok('body' in error && error.body === body)
      }
    }
  })

  it("treats an agent's 404 as data on KV reads and session renew, and any other 404 as NotConsul", async () => {
    // An agent's 404 to a KV read carries X-Consul-Index; a session renewal's carries nothing.
    proxy.setMode({ status: 404, body: '', headers: { 'X-Consul-Index': '7' } })
    assert.equal(await ok(consul.kv.get(key)), null)
    assert.deepEqual(await ok(consul.kv.list(prefix)), { index: 7n, entries: [] })
    assert.equal(await ok(consul.session.renew('00000000-0000-0000-0000-000000000000')), null)
    proxy.setMode({ status: 404, body: '' })
    for (const task of [consul.kv.get(key), consul.kv.list(prefix)]) {
      const error = await fails(task)
      assert.equal(error._tag, 'NotConsul', 'a 404 read without X-Consul-Index is not data')
      assert.match(
        error.message,
        /is not a Consul agent \(its answer to a KV read has no X-Consul-Index/,
      )
    }
    for (const task of [consul.kv.put(key, 'v'), consul.kv.txn([{ verb: 'get', key }])]) {
      const error = await fails(task)
      assert.equal(error._tag, 'NotConsul')
      assert.match(error.message, /is not a Consul agent \(it answered 404 to PUT \/v1\/(kv|txn)/)
    }
  })

  it('reports a socket closed without answer as Unreachable', async () => {
    proxy.setMode('close')
    for (const [name, task] of everyCall(consul)) {
      const error = await fails(task)
      assert.equal(error._tag, 'Unreachable', name)
      assert.match(
        error.message,
        /cannot reach the Consul agent at http:\/\/127\.0\.0\.1:\d+ \(ECONNRESET: socket hang up/,
      )
    }
  })

  it('reports a refused connection as Unreachable naming the address', async () => {
    const port = await freePort()
    const nowhere = createConsulClient({
      address: `127.0.0.1:${port}`,
      env: { CONSUL_HTTP_TOKEN: TOKEN },
    })
    try {
      for (const [name, task] of everyCall(nowhere)) {
        const error = await fails(task)
        assert.equal(error._tag, 'Unreachable', name)
        assert.ok(error.message.includes(`127.0.0.1:${port} (ECONNREFUSED`), error.message)
      }
    } finally {
      await nowhere.close()
    }
  })

  it('gives up on a silent agent with Timeout after the request timeout', async () => {
    proxy.setMode('blackhole')
    const started = Date.now()
    const error = await fails(consul.kv.get(key))
    const elapsed = Date.now() - started
    assert.equal(error._tag, 'Timeout')
    assert.ok(error._tag === 'Timeout' && error.timeoutMs === 400)
    assert.ok(elapsed >= 350 && elapsed < 2000, `${elapsed} ms`)
  })

  it('allows a blocking query its wait plus wait/16 before the timeout', async () => {
    proxy.setMode('blackhole')
    const error = await fails(consul.kv.list(prefix, { index: 1n, waitMs: 800 }))
    assert.ok(error._tag === 'Timeout' && error.timeoutMs === 800 + 50 + 400, JSON.stringify(error))
  })

  it('reports an aborted call as Aborted, at once', async () => {
    proxy.setMode('blackhole')
    const controller = new AbortController()
    const sent = proxy.requests().length
    const pending = consul.kv.get(key, { signal: controller.signal })()
    // Aborted once the request is in flight (it has reached the proxy), not after a fixed 50 ms.
    await until(() => proxy.requests().length > sent, 'the request at the proxy')
    controller.abort()
    const started = Date.now()
    const result = await pending
    assert.ok(E.isLeft(result) && result.left._tag === 'Aborted', JSON.stringify(result))
    assert.match(result.left.message, /aborted by the caller/)
    assert.ok(Date.now() - started < 300)
    const already = await fails(consul.kv.get(key, { signal: AbortSignal.abort() }))
    assert.equal(already._tag, 'Aborted')
  })

  it('names the request and the field path of an answer that does not decode', async () => {
    proxy.setMode({
      status: 200,
      body: '[{"LockIndex":0,"Key":"k","Flags":"abc","Value":null,"CreateIndex":1,"ModifyIndex":2}]',
      headers: { 'X-Consul-Index': '2' },
    })
    const error = await fails(consul.kv.get(key))
    assert.equal(error._tag, 'DecodeError')
    assert.equal(error.message, `GET /v1/kv/${key}: [0].Flags: expected uint64 decimal, got "abc"`)
    proxy.setMode({ garbage: 'maybe' })
    const notBoolean = await fails(consul.kv.put(key, 'v'))
    assert.match(
      notBoolean.message,
      /^PUT \/v1\/kv\/.*: \(root\): expected true or false, got "maybe"/,
    )
    proxy.setMode({ garbage: '{"ID": 42}' })
    const badSession = await fails(consul.session.create({ ttl: '10s' }))
    assert.equal(badSession.message, 'PUT /v1/session/create: ID: expected string, got 42')
    proxy.setMode({ garbage: '<html>oops' })
    for (const [name, task] of everyCall(consul)) {
      // KV reads without X-Consul-Index are NotConsul: reported first, tested above.
      if (name.startsWith('kv.list') || name.startsWith('kv.get')) continue
      assert.equal((await fails(task))._tag, 'DecodeError', name)
    }
  })

  it('fails calls in flight and after close() with Aborted', async () => {
    const closing = createConsulClient({ address: proxy.addr, env: {} })
    proxy.setMode('blackhole')
    const sent = proxy.requests().length
    const pending = closing.kv.list(prefix, { index: 1n, waitMs: 10_000 })()
    await until(() => proxy.requests().length > sent, 'the long poll at the proxy')
    await closing.close()
    const inFlight = await pending
    assert.ok(E.isLeft(inFlight) && inFlight.left._tag === 'Aborted', JSON.stringify(inFlight))
    assert.match(inFlight.left.message, /the client is closed/)
    assert.equal((await fails(closing.kv.get(key)))._tag, 'Aborted')
    await closing.close() // idempotent
  })

  it('sends the token only in the X-Consul-Token header, never in a URL', async () => {
    proxy.setMode('pass')
    proxy.resetCounts()
    await ok(consul.kv.get(key))
    await ok(consul.kv.list(prefix))
    const requests = proxy.requests()
    assert.equal(requests.length, 2)
    for (const r of requests) assert.ok(!`${r.path}?${r.query}`.includes(TOKEN))
  })

  it('never shows the token in an error message or its JSON, even when the server echoes it', async () => {
    proxy.setMode({ status: 500, body: `ACL token ${TOKEN} rejected` })
    const echoed = await fails(consul.kv.get(key))
    assert.match(echoed.message, /ACL token <redacted> rejected/)
    proxy.setMode({ garbage: `{"Key":"${TOKEN}"}` })
    await fails(consul.kv.get(key))
    assert.ok(seen.length > 50)
    for (const error of seen) {
      assert.ok(!error.message.includes(TOKEN), error.message)
      assert.ok(!errorJson(error).includes(TOKEN), errorJson(error))
    }
  })

  it('left no unhandled rejection behind', async () => {
    await new Promise((done) => setTimeout(done, 20))
    assert.deepEqual(unhandled, [])
  })
})
