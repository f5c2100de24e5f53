// The semaphore on an agent with ACLs on and default-deny: the policy of docs/operations.md is
// enough, a token without it (or none) fails fast with PermissionDenied, and the token never
// shows in a URL, an error, a warning or a state.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  SemaphoreError,
  type SemaphoreState,
} from '../../src/index.js'
import { startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { keep } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'

const MASTER = 'master-token-4e1f0a'

const json = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))

describe('semaphore on an agent with ACLs (default deny)', () => {
  let agent: ConsulAgent
  let proxy: FaultProxy
  const root = 'rxsem-acl'
  // The suite's own agent, stopped after it, is the only one to see this prefix: no other test
  // shares it, and nothing written under it outlives the suite.
  const prefix = `${root}/security`

  /** A call to the ACL API with the master token. */
  const admin = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: { 'X-Consul-Token': MASTER },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
    return text === '' ? undefined : (JSON.parse(text) as unknown)
  }
  /** Creates a policy with `rules` and a token holding it; returns the token's secret. */
  const tokenWith = async (name: string, rules: string): Promise<string> => {
    await admin('PUT', '/v1/acl/policy', { Name: name, Rules: rules })
    const token = (await admin('PUT', '/v1/acl/token', {
      Description: name,
      Policies: [{ Name: name }],
    })) as { SecretID: string }
    return token.SecretID
  }

  before(async () => {
    agent = await startAgent({
      hcl: [`acl { enabled = true, default_policy = "deny", tokens { master = "${MASTER}" } }`],
      token: MASTER,
    })
    // Every request passes through the proxy, which keeps its method, path and query.
    proxy = await startFaultProxy(agent.addr)
  })
  after(async () => {
    await admin('DELETE', `/v1/kv/${root}?recurse`)
    await proxy.close()
    await agent.stop()
  })

  it('works with exactly the policy of docs/operations.md, and never shows the token', async () => {
    // The policy as docs/operations.md gives it.
    const secret = await tokenWith(
      'rxsem-semaphore',
      `key_prefix "${prefix}/" { policy = "write" }\nsession_prefix "" { policy = "write" }`,
    )
    const warnings: string[] = []
    const onWarning = (w: Error): void => void warnings.push(`${w.name} ${w.message}`)
    process.on('warning', onWarning)
    const consul = createConsulClient({
      env: { CONSUL_HTTP_ADDR: proxy.addr, CONSUL_HTTP_TOKEN: secret },
    })
    const other = createConsulClient({ address: proxy.addr, token: secret })
    proxy.resetCounts()
    const seen: string[] = []
    try {
      const a = semaphore({ prefix, limit: 1, consul })
      const b = semaphore({ prefix, limit: 1, consul: other })
      const record = (sem: typeof a) =>
        sem.state$.subscribe({
          next: (s: SemaphoreState) => seen.push(json(s)),
          error: (e: unknown) => seen.push(json(e), String(e)),
        })
      record(a)
      await firstValueFrom(a.state$.pipe(filter((s) => s.holding)))
      // b starts once a holds, so that b is the one that waits.
      record(b)
      await firstValueFrom(b.state$.pipe(filter((s) => s.rank === 0)))
      await a.close()
      await firstValueFrom(b.state$.pipe(filter((s) => s.holding)))
      await b.close()
      seen.push(json(consul.config), json(other.config))
    } finally {
      process.off('warning', onWarning)
      await consul.close()
      await other.close()
    }
    const urls = proxy.requests().map((r) => `${r.method} ${r.path}?${r.query}`)
    assert.ok(urls.length > 5, 'requests went through the proxy')
    for (const [what, texts] of [
      ['a URL', urls],
      ['a state or error', seen],
      ['a warning', warnings],
    ] as const) {
      const leaked = texts.filter((t) => t.includes(secret))
      assert.deepEqual(leaked, [], `the token appears in ${what}`)
    }
  })

  for (const [what, token] of [
    ['a token without the policy', 'policy for another prefix'],
    ['an unknown token', 'unknown'],
    ['no token at all', undefined],
  ] as const) {
    it(`fails fast with PermissionDenied naming the refused request for ${what}`, async (t) => {
      const secret =
        token === 'policy for another prefix'
          ? await tokenWith(
              `rxsem-elsewhere-${Date.now()}`,
              `key_prefix "elsewhere/" { policy = "write" }`,
            )
          : token === 'unknown'
            ? '6a1e7c5b-0000-4000-8000-000000000000'
            : undefined
      const consul = createConsulClient({
        address: proxy.addr,
        env: secret === undefined ? {} : { CONSUL_HTTP_TOKEN: secret },
      })
      const started = Date.now()
      const texts: string[] = []
      try {
        const sem = semaphore({ prefix, limit: 1, consul })
        const holding: boolean[] = []
        const error = await new Promise<unknown>((resolve) =>
          keep(
            t,
            sem.state$.subscribe({
              next: (s) => {
                texts.push(json(s))
                holding.push(s.holding)
              },
              error: resolve,
            }),
          ),
        )
        assert.ok(error instanceof SemaphoreError, String(error))
        texts.push(json(error), error.message, String(error.cause && json(error.cause)))
        assert.equal(error.kind, 'PermissionDenied', error.message)
        // The refused request is named (session create comes first), and the one remedy that
        // applies: a token Consul knows for an unknown one, else the policy to give.
        assert.match(error.message, /PUT \/v1\/session\/create: permission denied/)
        if (token === 'unknown') {
          assert.match(error.message, /Consul does not know the ACL token/)
          assert.match(error.message, /Give the client a token that exists/)
          assert.doesNotMatch(error.message, /policy/)
        } else {
          assert.match(error.message, /session_prefix "" \{ policy = "write" \}/)
          assert.match(error.message, /docs\/operations\.md/)
        }
        assert.ok(Date.now() - started < 2000, `failed fast (${Date.now() - started} ms)`)
        assert.ok(
          holding.every((h) => !h),
          'never held',
        )
        if (secret !== undefined) {
          assert.deepEqual(
            texts.filter((t) => t.includes(secret)),
            [],
            'the token appears in a state or error',
          )
        }
      } finally {
        await consul.close()
      }
    })
  }

  it('fails with PermissionDenied naming the KV request when the token may create sessions but not write the prefix', async (t) => {
    const secret = await tokenWith(
      `rxsem-sessions-only-${Date.now()}`,
      `session_prefix "" { policy = "write" }`,
    )
    const consul = createConsulClient({ address: proxy.addr, token: secret })
    try {
      const sem = semaphore({ prefix, limit: 1, consul })
      const error = await new Promise<unknown>((resolve) =>
        keep(t, sem.state$.subscribe({ error: resolve })),
      )
      assert.ok(error instanceof SemaphoreError)
      assert.equal(error.kind, 'PermissionDenied', error.message)
      assert.match(error.message, /\/v1\/kv\//)
      // The policy to give names this prefix, never a placeholder.
      assert.ok(error.message.includes(`key_prefix "${prefix}/"`), error.message)
      assert.ok(!error.message.includes(secret) && !json(error).includes(secret))
      await sem.close().catch(() => undefined)
      // The session it could create is destroyed, though its contender key could not be written.
      const sessions = (await admin('GET', '/v1/session/list')) as { Name: string }[]
      assert.deepEqual(
        sessions.filter((x) => x.Name.includes(prefix)),
        [],
        'no session left behind',
      )
    } finally {
      await consul.close()
    }
  })
})
