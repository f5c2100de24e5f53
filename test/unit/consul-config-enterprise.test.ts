// The settings a user of Consul 1.11+ reaches for: an admin partition (CONSUL_PARTITION, sent as
// `partition` beside `ns`), a directory of CA certificates (CONSUL_CAPATH), and the 400 a
// Community Edition agent answers to an Enterprise namespace or partition, told as what to unset.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ConsulConfigError } from '../../src/consul/config-error.js'
import { resolveConfig } from '../../src/consul/config.js'
import { queryOf } from '../../src/consul/http-request.js'
import { httpFailure } from '../support/consul-double.js'

const dir = mkdtempSync(join(tmpdir(), 'rxsem-capath-'))
const pem = (name: string): string =>
  `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`
const certs = join(dir, 'certs')
mkdirSync(join(certs, 'nested'), { recursive: true })
writeFileSync(join(certs, 'a.pem'), pem('A'))
writeFileSync(join(certs, 'nested', 'b.crt'), pem('B'))
symlinkSync(join(certs, 'a.pem'), join(certs, 'c.0'))
const empty = join(dir, 'empty')
mkdirSync(empty)
const mixed = join(dir, 'mixed')
mkdirSync(mixed)
writeFileSync(join(mixed, 'a.pem'), pem('A'))
writeFileSync(join(mixed, 'README'), 'not a certificate\n')
const caFile = join(dir, 'ca.pem')
writeFileSync(caFile, pem('FILE'))

const https = { CONSUL_HTTP_ADDR: 'https://127.0.0.1:8501' }

/** The ConsulConfigError `make` throws. */
function configError(make: () => unknown): ConsulConfigError {
  try {
    make()
  } catch (error) {
    assert.ok(error instanceof ConsulConfigError, String(error))
    return error
  }
  return assert.fail('no ConsulConfigError')
}

describe('CONSUL_PARTITION and the partition option', () => {
  it('reads the partition from CONSUL_PARTITION, and the option wins over it', () => {
    assert.equal(resolveConfig({ env: { CONSUL_PARTITION: 'team-a' } }).partition, 'team-a')
    assert.equal(
      resolveConfig({ partition: 'team-b', env: { CONSUL_PARTITION: 'team-a' } }).partition,
      'team-b',
    )
    assert.equal(resolveConfig({ env: { CONSUL_PARTITION: '' } }).partition, undefined)
  })

  it('sends the partition beside ns and dc, on reads and writes alike', () => {
    const config = resolveConfig({
      datacenter: 'dc1',
      env: { CONSUL_NAMESPACE: 'ns a', CONSUL_PARTITION: 'team-a' },
    })
    assert.equal(
      queryOf({ method: 'GET', path: '/v1/kv/p', query: { recurse: true } }, config),
      '?recurse&dc=dc1&ns=ns%20a&partition=team-a',
    )
    assert.equal(
      queryOf({ method: 'PUT', path: '/v1/session/create' }, config),
      '?dc=dc1&ns=ns%20a&partition=team-a',
    )
  })
})

describe('CONSUL_CAPATH and tls.caPath', () => {
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('trusts every certificate under the directory, subdirectories and links included', () => {
    const ca = resolveConfig({ env: { ...https, CONSUL_CAPATH: certs } }).tls?.ca
    assert.equal(ca, `${pem('A').trimEnd()}\n${pem('A').trimEnd()}\n${pem('B').trimEnd()}\n`)
  })

  it('takes tls.caPath as an option over the variables', () => {
    const config = resolveConfig({
      tls: { caPath: certs },
      env: { ...https, CONSUL_CACERT: caFile, CONSUL_CAPATH: empty },
    })
    assert.match(config.tls?.ca ?? '', /\nA\n/)
    assert.doesNotMatch(config.tls?.ca ?? '', /FILE/)
  })

  it('lets a CA file win over a CA directory, as Consul does', () => {
    const ca = resolveConfig({ env: { ...https, CONSUL_CACERT: caFile, CONSUL_CAPATH: certs } }).tls
      ?.ca
    assert.equal(ca, pem('FILE'))
  })

  it('reads nothing for an http address', () => {
    assert.equal(resolveConfig({ env: { CONSUL_CAPATH: join(dir, 'missing') } }).tls, undefined)
  })

  it('names CONSUL_CAPATH when the directory cannot be read', () => {
    const error = configError(() =>
      resolveConfig({ env: { ...https, CONSUL_CAPATH: join(dir, 'missing') } }),
    )
    assert.equal(error.setting, 'CONSUL_CAPATH')
    assert.match(error.message, /cannot read the CA directory .*missing.*ENOENT/)
  })

  it('names CONSUL_CAPATH when the directory holds no certificate', () => {
    const error = configError(() => resolveConfig({ env: { ...https, CONSUL_CAPATH: empty } }))
    assert.equal(error.setting, 'CONSUL_CAPATH')
    assert.match(error.message, /holds no certificate/)
  })

  it('names the file that holds no certificate, as Consul refuses it', () => {
    const error = configError(() => resolveConfig({ env: { ...https, CONSUL_CAPATH: mixed } }))
    assert.equal(error.setting, 'CONSUL_CAPATH')
    assert.match(error.message, /README" in the CA directory holds no PEM certificate/)
  })

  it('names tls.caPath when the option is at fault', () => {
    const error = configError(() => resolveConfig({ tls: { caPath: empty }, env: https }))
    assert.equal(error.setting, 'options.tls.caPath')
  })
})

describe('a Community Edition agent refusing an Enterprise parameter', () => {
  const refused = (body: string) => httpFailure(400, body, 'GET /v1/kv/p?ns=a')

  it('tells the namespace 400 of Consul 1.8 and of later versions as "unset CONSUL_NAMESPACE"', () => {
    for (const body of [
      'Bad request: Invalid query parameter: "ns" - Namespaces are a Consul Enterprise feature',
      'Invalid query parameter: "ns" - Namespaces are a Consul Enterprise feature',
    ]) {
      const error = refused(body)
      assert.equal(error._tag, 'BadRequest')
      assert.equal(error._tag === 'BadRequest' && error.enterpriseOnly, 'namespace')
      assert.match(error.message, /Community Edition, which has no namespaces/)
      assert.match(error.message, /unset CONSUL_NAMESPACE \(or the namespace option\)/)
    }
  })

  it('tells the partition 400 as "unset CONSUL_PARTITION"', () => {
    const error = refused(
      'Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature',
    )
    assert.equal(error._tag === 'BadRequest' && error.enterpriseOnly, 'partition')
    assert.match(error.message, /unset CONSUL_PARTITION \(or the partition option\)/)
  })

  it('leaves any other 400 a plain bad request', () => {
    const error = refused('Missing session')
    assert.equal(error._tag, 'BadRequest')
    assert.equal(error._tag === 'BadRequest' && error.enterpriseOnly, undefined)
    assert.match(error.message, /Consul refused the request \(400: Missing session\)/)
  })
})
