// Hostile answers, on a real agent behind the fault proxy: an answer too large to hold, a request
// rate limit (429/503 with Retry-After), and a token the servers no longer know (500 "ACL not
// found"). Each ends in a typed error that says what to do, or in a retry that waits as asked;
// never in a process that swallows hundreds of megabytes or retries a dead token for ever.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { asyncScheduler, defer, filter, firstValueFrom, mergeMap } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  SemaphoreError,
  type SemaphoreState,
} from '../../src/index.js'
import type { ConsulHttpClient } from '../../src/consul/client.js'
import { DEFAULT_MAX_RESPONSE_BYTES } from '../../src/consul/config.js'
import type { WatchEvent } from '../../src/base/kv-snapshot.js'
import { fromCall, orThrow, retryTransient } from '../../src/effects/call-policy.js'
import { sessionLease, type LeaseEvent } from '../../src/effects/session-lease.js'
import { sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../support/fault-proxy.js'
import { destroyRawSession, eventually, sessionsNamed } from '../support/observe.js'
import { errorJson, failure, ok } from './consul-test-kit.js'

const TOKEN = 'tok-h0stile-5ecret-91c2'
const MiB = 1024 * 1024
const RATE_LIMITED = 'rate limit exceeded, try again later or against a different server'
const LEADER_LIMITED =
  'rate limit exceeded for operation that can only be performed by the leader, try again later'

describe('hostile answers', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let direct: ConsulHttpClient
  const proxies: FaultProxy[] = []
  const clients: ConsulHttpClient[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }

  before(async () => {
    process.on('unhandledRejection', onUnhandled)
    agent = await sharedAgent()
    direct = createConsulClient({ address: agent.addr })
  })
  after(async () => {
    for (const c of clients) await c.close()
    await Promise.all(proxies.map((p) => p.close()))
    await direct.close()
    await agent.close()
    process.off('unhandledRejection', onUnhandled)
  })

  /** A fault proxy in front of the agent, and a client (with the test token) that goes through it. */
  const proxied = async (
    options: { maxResponseBytes?: number } = {},
  ): Promise<{ proxy: FaultProxy; client: ConsulHttpClient }> => {
    const proxy = await startFaultProxy(agent.addr)
    proxies.push(proxy)
    const client = createConsulClient({
      address: proxy.addr,
      env: { CONSUL_HTTP_TOKEN: TOKEN },
      ...options,
    })
    clients.push(client)
    return { proxy, client }
  }

  /** The requests the proxy saw for `path` (exact), oldest first. */
  const seenAt = (proxy: FaultProxy, method: string, path: string): SeenRequest[] =>
    proxy.requests().filter((r) => r.method === method && r.path === path)

  describe('an answer larger than maxResponseBytes', () => {
    it('defaults to 32 MiB, and refuses a size that is not a positive integer', () => {
      assert.equal(DEFAULT_MAX_RESPONSE_BYTES, 32 * MiB)
      assert.equal(direct.config.maxResponseBytes, 32 * MiB)
      assert.throws(() => createConsulClient({ maxResponseBytes: 0 }), /maxResponseBytes/)
    })

    it('stops reading a chunked answer at the cap: TooLarge naming the request, the cap and what to do', async (t) => {
      const { proxy, client } = await proxied({ maxResponseBytes: MiB })
      const prefix = testPrefix(t, agent.url, 'too-large')
      proxy.setMode({ oversized: 512 * MiB, chunked: true })
      const started = Date.now()
      const error = await failure(client.kv.list(prefix))
      assert.equal(error._tag, 'TooLarge', error.message)
      assert.ok(error._tag === 'TooLarge' && error.limitBytes === MiB)
      assert.equal(error.request, `GET /v1/kv/${prefix}`)
      assert.match(error.message, new RegExp(`^GET /v1/kv/${prefix}: `))
      assert.match(
        error.message,
        /larger than 1048576 bytes \(1 MiB, the client option maxResponseBytes\)/,
      )
      assert.match(error.message, /raise maxResponseBytes/)
      assert.match(error.message, /what wrote so much/)
      assert.ok(!errorJson(error).includes(TOKEN))
      // The proxy stops writing once the client stopped reading: far from the 512 MiB it offered.
      const [seen] = seenAt(proxy, 'GET', `/v1/kv/${prefix}`)
      await eventually('the proxy to stop writing', async () => {
        const before = seen?.oversizedWritten
        await new Promise((done) => setTimeout(done, 100))
        return before === seen?.oversizedWritten ? true : undefined
      })
      const written = seen?.oversizedWritten ?? 0
      assert.ok(written < 64 * MiB, `the client read ${written} bytes of 512 MiB`)
      assert.ok(Date.now() - started < 10_000)
      // The client is still usable: the next request goes on another connection.
      proxy.setMode('pass')
      assert.deepEqual((await ok(client.kv.list(prefix))).entries, [])
    })

    it('refuses an answer whose Content-Length is past the cap without reading it', async () => {
      const { proxy, client } = await proxied({ maxResponseBytes: MiB })
      proxy.setMode({ oversized: 2 * MiB })
      const error = await failure(client.kv.get('anything'))
      assert.equal(error._tag, 'TooLarge', error.message)
      assert.equal(error.request, 'GET /v1/kv/anything')
    })

    it('reads a real listing of large values under the cap, and refuses it with a smaller cap', async (t) => {
      const prefix = testPrefix(t, agent.url, 'large-values')
      // 24 values of 400 kB (under Consul's 512 KiB default): a listing of about 12.8 MB.
      const value = Buffer.alloc(400_000, 'v')
      for (let i = 0; i < 24; i++) {
        value.write(String(i).padStart(4, '0'))
        assert.equal(await ok(direct.kv.put(`${prefix}/k${i}`, new Uint8Array(value))), true)
      }
      const { client } = await proxied()
      const listed = await ok(client.kv.list(prefix))
      assert.equal(listed.entries.length, 24)
      assert.ok(listed.entries.every((e) => e.value?.length === 400_000))
      const { client: small } = await proxied({ maxResponseBytes: 4 * MiB })
      const error = await failure(small.kv.list(prefix))
      assert.equal(error._tag, 'TooLarge', error.message)
    })

    it("ends a holder's semaphore with a Consul error naming the cap, holding$ false", async (t) => {
      const { proxy, client } = await proxied({ maxResponseBytes: MiB })
      const prefix = testPrefix(t, agent.url, 'too-large-held')
      const name = `too-large-held ${prefix}`
      const sem = semaphore({
        prefix,
        limit: 1,
        consul: client,
        sessionName: name,
        watchWait: '1s',
      })
      let error: unknown
      const states: SemaphoreState[] = []
      const subscription = sem.state$.subscribe({
        next: (s) => states.push(s),
        error: (e: unknown) => (error = e),
      })
      try {
        await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
        proxy.setMode({
          when: { method: 'GET', pathPrefix: '/v1/kv/' },
          then: { oversized: 64 * MiB, chunked: true },
        })
        await eventually('an error', () => (error === undefined ? undefined : true))
        assert.ok(error instanceof SemaphoreError, String(error))
        assert.equal(error.kind, 'Consul')
        assert.match(error.message, /maxResponseBytes/)
        assert.equal(states.at(-1)?.holding, false)
      } finally {
        subscription.unsubscribe()
        proxy.setMode('pass')
        await sem.close().catch(() => undefined)
        for (const s of await sessionsNamed(agent.url, name))
          await destroyRawSession(agent.url, s.ID)
      }
    })
  })

  describe('429 and 503 with Retry-After', () => {
    it('reads Retry-After into the ServerError, and says to slow down', async () => {
      const { proxy, client } = await proxied()
      proxy.setMode({ status: 429, body: RATE_LIMITED, headers: { 'Retry-After': '30' } })
      const error = await failure(client.kv.get('anything'))
      assert.ok(error._tag === 'ServerError' && error.status === 429)
      assert.equal(error.retryAfterMs, 30_000)
      assert.match(error.message, /slow down/)
      proxy.setMode({ status: 503, body: LEADER_LIMITED })
      const leader = await failure(client.kv.put('anything', 'v'))
      assert.ok(leader._tag === 'ServerError' && leader.retryAfterMs === undefined)
    })

    it('the watch waits what Retry-After asks before its next request', async (t) => {
      const { proxy, client } = await proxied()
      const prefix = testPrefix(t, agent.url, 'watch-429')
      const events: WatchEvent[] = []
      const subscription = client
        .watchPrefix(prefix, { waitMs: 200 })
        .subscribe((e) => events.push(e))
      try {
        await eventually('a snapshot', () => (events.length > 0 ? true : undefined))
        proxy.setMode({ status: 429, body: RATE_LIMITED, headers: { 'Retry-After': '2' } })
        const disconnected = await eventually('a disconnect', () =>
          events.find((e) => e.type === 'disconnected'),
        )
        const sent = seenAt(proxy, 'GET', `/v1/kv/${prefix}`).length
        proxy.setMode('pass')
        assert.ok(disconnected.type === 'disconnected' && disconnected.retryInMs >= 2000)
        const count = events.length
        await eventually('the next snapshot', () => (events.length > count ? true : undefined))
        const [refused, next] = seenAt(proxy, 'GET', `/v1/kv/${prefix}`).slice(sent - 1)
        assert.ok(refused !== undefined && next !== undefined)
        assert.ok(next.at - refused.at >= 1500, `next request ${next.at - refused.at} ms later`)
      } finally {
        subscription.unsubscribe()
      }
    })

    it('a write waits what a 503 Retry-After asks before it tries again', async (t) => {
      const { proxy, client } = await proxied()
      const key = `${testPrefix(t, agent.url, 'write-503')}/k`
      proxy.setMode({
        when: { method: 'PUT' },
        then: { status: 503, body: LEADER_LIMITED, headers: { 'Retry-After': '2' } },
      })
      const written = firstValueFrom(
        defer(() => fromCall((signal) => client.kv.put(key, 'v', { signal }))).pipe(
          mergeMap(orThrow),
          retryTransient(asyncScheduler),
        ),
      )
      await eventually('the first PUT', () => (proxy.requests().length > 0 ? true : undefined))
      proxy.setMode('pass')
      assert.equal(await written, true)
      const [refused, next] = seenAt(proxy, 'PUT', `/v1/kv/${key}`)
      assert.ok(refused !== undefined && next !== undefined)
      assert.ok(next.at - refused.at >= 1500, `retried ${next.at - refused.at} ms later`)
    })

    it('a renewal answered 429 Retry-After: 30 is tried again sooner, before the lease deadline', async () => {
      const { proxy, client } = await proxied()
      const session = await ok(direct.session.create({ ttl: '10s', name: 'renew-429' }))
      const ttlMs = 10_000
      // As if created 4.5 s ago: the first renewal is due at once, the deadline (TTL - 10 %) in 4.5 s.
      const createdAt = asyncScheduler.now() - 4500
      const deadline = createdAt + ttlMs - 1000
      proxy.setMode({
        when: { method: 'PUT', pathPrefix: '/v1/session/renew/' },
        then: { status: 429, body: RATE_LIMITED, headers: { 'Retry-After': '30' } },
      })
      const events: LeaseEvent[] = []
      let leaseError: unknown
      const subscription = sessionLease({ client, session, ttlMs, createdAt }).subscribe({
        next: (e) => events.push(e),
        error: (e: unknown) => (leaseError = e),
      })
      try {
        const renewals = () => seenAt(proxy, 'PUT', `/v1/session/renew/${session}`)
        await eventually(
          'a second renewal',
          () => (renewals().length >= 2 ? true : undefined),
          8000,
        )
        const [first, second] = renewals()
        assert.ok(first !== undefined && second !== undefined)
        // Not the plain 1 s retry, nor the 30 s asked: half the time left until the deadline.
        assert.ok(second.at - first.at >= 1500, `retried ${second.at - first.at} ms later`)
        assert.ok(second.at < deadline, `retried ${second.at - deadline} ms after the deadline`)
        assert.ok(!events.some((e) => e.type === 'session-renewed'), 'a 429 never renews')
        proxy.setMode('pass')
        const renewed = await eventually('a renewal', () =>
          events.find((e) => e.type === 'session-renewed'),
        )
        assert.ok(renewed.type === 'session-renewed')
        assert.equal(leaseError, undefined)
      } finally {
        subscription.unsubscribe()
        await ok(direct.session.destroy(session))
      }
    })
    it('a contender whose session create is answered 429 waits what Retry-After asks, and says why in state$', async (t) => {
      const { proxy, client } = await proxied()
      const prefix = testPrefix(t, agent.url, 'create-429')
      proxy.setMode({
        when: { method: 'PUT', pathPrefix: '/v1/session/create' },
        then: { status: 429, body: RATE_LIMITED, headers: { 'Retry-After': '2' } },
      })
      const sem = semaphore({ prefix, limit: 1, consul: client })
      const states: SemaphoreState[] = []
      const subscription = sem.state$.subscribe((s) => states.push(s))
      try {
        const throttledState = await eventually('a state with lastError', () =>
          states.find((s) => s.lastError !== undefined),
        )
        proxy.setMode('pass')
        assert.equal(throttledState.lastError?.during, 'session')
        assert.equal(throttledState.lastError?.status, 429)
        assert.match(throttledState.lastError?.message ?? '', /slow down/)
        const held = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
        assert.equal(held.lastError, undefined, 'cleared once a session was made')
        const [refused, next] = seenAt(proxy, 'PUT', '/v1/session/create')
        assert.ok(refused !== undefined && next !== undefined)
        assert.ok(next.at - refused.at >= 1500, `retried ${next.at - refused.at} ms later`)
      } finally {
        subscription.unsubscribe()
        await sem.close()
      }
    })
  })

  describe('a token deleted on the servers (500 ACL not found)', () => {
    const aclGone = { status: 500, body: 'rpc error making call: ACL not found' }

    it('ends a new contender with PermissionDenied naming CONSUL_HTTP_TOKEN, after a few tries shown in state$', async (t) => {
      const { proxy, client } = await proxied()
      proxy.setMode(aclGone)
      const sem = semaphore({
        prefix: testPrefix(t, agent.url, 'acl-gone'),
        limit: 1,
        consul: client,
      })
      const states: SemaphoreState[] = []
      let error: unknown
      const subscription = sem.state$.subscribe({
        next: (s) => states.push(s),
        error: (e: unknown) => (error = e),
      })
      try {
        await eventually('an error', () => (error === undefined ? undefined : true), 15_000)
        assert.ok(error instanceof SemaphoreError, String(error))
        assert.equal(error.kind, 'PermissionDenied')
        assert.match(error.message, /CONSUL_HTTP_TOKEN/)
        assert.match(error.message, /deleted/)
        const tries = seenAt(proxy, 'PUT', '/v1/session/create').length
        assert.equal(tries, 5, 'given up after ACL_FAILURES_BEFORE_PERMANENT tries')
        const failing = states.find((s) => s.lastError !== undefined)
        assert.ok(failing?.lastError, 'state$ said why while it retried')
        assert.equal(failing.lastError.during, 'session')
        assert.equal(failing.lastError.kind, 'ServerError')
        assert.equal(failing.lastError.status, 500)
        assert.match(failing.lastError.message, /ACL not found.*CONSUL_HTTP_TOKEN/)
        assert.ok(states.every((s) => !s.holding))
      } finally {
        subscription.unsubscribe()
      }
    })

    it('ends a holder with PermissionDenied once its watch and renewals keep answering so; state$ says why first', async (t) => {
      const { proxy, client } = await proxied()
      const prefix = testPrefix(t, agent.url, 'acl-gone-held')
      const name = `acl-gone-held ${prefix}`
      const sem = semaphore({
        prefix,
        limit: 1,
        consul: client,
        sessionName: name,
        watchWait: '1s',
      })
      const states: SemaphoreState[] = []
      let error: unknown
      const subscription = sem.state$.subscribe({
        next: (s) => states.push(s),
        error: (e: unknown) => (error = e),
      })
      try {
        await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
        proxy.setMode(aclGone)
        const failing = await eventually('a state with lastError', () =>
          states.find((s) => s.lastError !== undefined),
        )
        assert.equal(failing.holding, false)
        assert.equal(failing.connected, false)
        assert.match(failing.lastError?.message ?? '', /ACL not found/)
        await eventually('an error', () => (error === undefined ? undefined : true), 15_000)
        assert.ok(error instanceof SemaphoreError, String(error))
        assert.equal(error.kind, 'PermissionDenied')
        assert.match(error.message, /CONSUL_HTTP_TOKEN/)
        assert.match(error.message, /times in a row/)
      } finally {
        subscription.unsubscribe()
        proxy.setMode('pass')
        await sem.close().catch(() => undefined)
        for (const s of await sessionsNamed(agent.url, name))
          await destroyRawSession(agent.url, s.ID)
      }
    })

    it('keeps retrying a 500 that names no ACL problem (no error)', async (t) => {
      const { proxy, client } = await proxied()
      proxy.setMode({ status: 500, body: 'No cluster leader' })
      const events: WatchEvent[] = []
      let watchError: unknown
      const subscription = client
        .watchPrefix(testPrefix(t, agent.url, 'no-leader'), {
          backoff: { initialMs: 20, maxMs: 50 },
        })
        .subscribe({ next: (e) => events.push(e), error: (e: unknown) => (watchError = e) })
      try {
        await eventually('ten disconnects', () => (events.length >= 10 ? true : undefined))
        assert.equal(watchError, undefined)
      } finally {
        subscription.unsubscribe()
      }
    })
  })

  it('left no unhandled rejection behind, and no token in any message', async () => {
    await new Promise((done) => setTimeout(done, 20))
    assert.deepEqual(unhandled, [])
    const { proxy, client } = await proxied()
    proxy.setMode({ status: 500, body: `ACL not found for ${TOKEN}` })
    const result = await client.kv.get('anything')()
    assert.ok(E.isLeft(result) && !errorJson(result.left).includes(TOKEN))
  })
})
