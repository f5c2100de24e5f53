// The telemetry's fixed parts: the scope's version is the package's, every Consul request has a
// bounded endpoint kind (never a key or a session id), and the names docs/observability.md lists
// are the ones the code uses.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'
import { endpointOf } from '../../src/consul/request-feed.js'
import { ATTRIBUTES, METRICS, SPANS } from '../../src/telemetry/metric-names.js'
import { SCOPE_NAME, SCOPE_VERSION } from '../../src/telemetry/scope.js'

const root = resolve(import.meta.dirname, '../..')

describe('telemetry names', () => {
  it('reports the scope with the name and version of package.json', () => {
    const manifest = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
      name: string
      version: string
    }
    assert.deepEqual([SCOPE_NAME, SCOPE_VERSION], [manifest.name, manifest.version])
  })

  it('names the kind of every request the client makes, from its method, path and query', () => {
    const session = 'b1220201-589c-0a92-7390-f2e9a836d9aa'
    const cases: [Parameters<typeof endpointOf>[0], string][] = [
      [{ method: 'GET', path: '/v1/kv/svc/lock/.lock' }, 'kv.get'],
      [{ method: 'GET', path: '/v1/kv/svc/lock', query: { recurse: true } }, 'kv.list'],
      [
        { method: 'GET', path: '/v1/kv/svc/lock', query: { recurse: true, index: '7' } },
        'kv.watch',
      ],
      [{ method: 'PUT', path: '/v1/kv/svc/lock/.lock', query: { cas: '7' } }, 'kv.cas'],
      [
        { method: 'PUT', path: `/v1/kv/svc/lock/${session}`, query: { acquire: session } },
        'kv.acquire',
      ],
      [
        { method: 'PUT', path: `/v1/kv/svc/lock/${session}`, query: { release: session } },
        'kv.release',
      ],
      [{ method: 'PUT', path: '/v1/kv/svc/state' }, 'kv.put'],
      [{ method: 'DELETE', path: '/v1/kv/svc/lock', query: { recurse: true } }, 'kv.delete'],
      [{ method: 'PUT', path: '/v1/txn' }, 'txn'],
      [{ method: 'PUT', path: '/v1/session/create' }, 'session.create'],
      [{ method: 'PUT', path: `/v1/session/renew/${session}` }, 'session.renew'],
      [{ method: 'PUT', path: `/v1/session/destroy/${session}` }, 'session.destroy'],
      [{ method: 'GET', path: `/v1/session/info/${session}` }, 'session.info'],
      [{ method: 'GET', path: '/v1/agent/self' }, 'other'],
    ]
    for (const [request, kind] of cases) assert.equal(endpointOf(request), kind, request.path)
  })

  it('lists in docs/observability.md every metric, span and attribute it reports', () => {
    const page = readFileSync(resolve(root, 'docs/observability.md'), 'utf8')
    for (const name of [
      ...Object.values(METRICS),
      ...Object.values(SPANS),
      ...Object.values(ATTRIBUTES),
    ]) {
      assert.ok(page.includes(`\`${name}\``), `docs/observability.md does not name \`${name}\``)
    }
  })
})
