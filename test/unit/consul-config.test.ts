// Client configuration from options and Consul's environment variables, checked at construction.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ConsulConfigError } from '../../src/consul/config-error.js'
import { resolveConfig, type ConsulClientConfig } from '../../src/consul/config.js'

const dir = mkdtempSync(join(tmpdir(), 'rxsem-config-'))
const tokenFile = join(dir, 'token')
writeFileSync(tokenFile, 'file-token\n')
const emptyTokenFile = join(dir, 'empty-token')
writeFileSync(emptyTokenFile, '  \n')
const caFile = join(dir, 'ca.pem')
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')

const env = (vars: Record<string, string>): ConsulClientConfig => ({ env: vars })

describe('Consul client configuration', () => {
  after(() => rmSync(dir, { recursive: true, force: true }))

  const valid: readonly [string, ConsulClientConfig, Partial<ReturnType<typeof resolveConfig>>][] =
    [
      [
        'defaults to 127.0.0.1:8500 over http',
        env({}),
        {
          origin: 'http://127.0.0.1:8500',
          token: undefined,
          consistency: 'default',
          connections: 16,
          requestTimeoutMs: 10000,
        },
      ],
      [
        'reads host:port from CONSUL_HTTP_ADDR',
        env({ CONSUL_HTTP_ADDR: '10.0.0.5:8501' }),
        { origin: 'http://10.0.0.5:8501', socketPath: undefined },
      ],
      [
        'reads http:// addresses',
        env({ CONSUL_HTTP_ADDR: 'http://consul.local:8500' }),
        { origin: 'http://consul.local:8500' },
      ],
      [
        'reads https:// addresses and turns TLS on',
        env({ CONSUL_HTTP_ADDR: 'https://consul.local:8501' }),
        { origin: 'https://consul.local:8501' },
      ],
      [
        'reads unix:// addresses as a socket path',
        env({ CONSUL_HTTP_ADDR: 'unix:///var/run/consul.sock' }),
        { origin: 'http://localhost', socketPath: '/var/run/consul.sock', tls: undefined },
      ],
      [
        'turns TLS on for host:port with CONSUL_HTTP_SSL=true',
        env({ CONSUL_HTTP_ADDR: '127.0.0.1:8501', CONSUL_HTTP_SSL: 'true' }),
        { origin: 'https://127.0.0.1:8501' },
      ],
      [
        'lets an explicit http:// win over CONSUL_HTTP_SSL, like the Go client',
        env({ CONSUL_HTTP_ADDR: 'http://127.0.0.1:8500', CONSUL_HTTP_SSL: '1' }),
        { origin: 'http://127.0.0.1:8500' },
      ],
      [
        'reads the token from CONSUL_HTTP_TOKEN',
        env({ CONSUL_HTTP_TOKEN: 'env-token' }),
        { token: 'env-token' },
      ],
      [
        'lets CONSUL_HTTP_TOKEN_FILE win over CONSUL_HTTP_TOKEN (trimmed)',
        env({ CONSUL_HTTP_TOKEN: 'env-token', CONSUL_HTTP_TOKEN_FILE: tokenFile }),
        { token: 'file-token' },
      ],
      [
        'ignores an empty token file, like the Go client',
        env({ CONSUL_HTTP_TOKEN: 'env-token', CONSUL_HTTP_TOKEN_FILE: emptyTokenFile }),
        { token: 'env-token' },
      ],
      [
        'lets options win over the environment',
        {
          token: 'option-token',
          address: '127.0.0.2:9500',
          env: { CONSUL_HTTP_TOKEN: 'env-token', CONSUL_HTTP_ADDR: '127.0.0.1:1' },
        },
        { token: 'option-token', origin: 'http://127.0.0.2:9500' },
      ],
      [
        'reads user:pass from CONSUL_HTTP_AUTH',
        env({ CONSUL_HTTP_AUTH: 'alice:s3:cret' }),
        { basicAuth: { user: 'alice', password: 's3:cret' } },
      ],
      [
        'reads a user without password from CONSUL_HTTP_AUTH',
        env({ CONSUL_HTTP_AUTH: 'bob' }),
        { basicAuth: { user: 'bob', password: '' } },
      ],
      [
        'reads the namespace from CONSUL_NAMESPACE',
        env({ CONSUL_NAMESPACE: 'team-a' }),
        { namespace: 'team-a' },
      ],
      [
        'takes datacenter and consistency from options',
        { datacenter: 'dc2', consistency: 'stale', env: {} },
        { datacenter: 'dc2', consistency: 'stale' },
      ],
      [
        'treats an empty variable as unset',
        env({ CONSUL_HTTP_ADDR: '', CONSUL_HTTP_TOKEN: '' }),
        { origin: 'http://127.0.0.1:8500', token: undefined },
      ],
    ]
  for (const [name, options, expected] of valid) {
    it(name, () => {
      const resolved = resolveConfig(options)
      for (const [key, value] of Object.entries(expected)) {
        assert.deepEqual(resolved[key as keyof typeof resolved], value, key)
      }
    })
  }

  it('reads CONSUL_CACERT, CONSUL_TLS_SERVER_NAME and CONSUL_HTTP_SSL_VERIFY into the TLS options', () => {
    const resolved = resolveConfig(
      env({
        CONSUL_HTTP_ADDR: 'https://127.0.0.1:8501',
        CONSUL_CACERT: caFile,
        CONSUL_TLS_SERVER_NAME: 'server.dc1.consul',
      }),
    )
    assert.match(String(resolved.tls?.ca), /BEGIN CERTIFICATE/)
    assert.equal(resolved.tls?.servername, 'server.dc1.consul')
    assert.equal(resolved.tls?.rejectUnauthorized, true)
  })

  it('takes PEM given as bytes (a Uint8Array or a Buffer) and hands it to TLS as text', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
    const resolved = resolveConfig({
      address: 'https://127.0.0.1:8501',
      tls: { ca: new TextEncoder().encode(pem), cert: Buffer.from(pem), key: pem },
      env: {},
    })
    assert.deepEqual([resolved.tls?.ca, resolved.tls?.cert, resolved.tls?.key], [pem, pem, pem])
  })

  it('warns once, and only once, when CONSUL_HTTP_SSL_VERIFY=false', async () => {
    const warnings: Error[] = []
    const listen = (w: Error): void => {
      if ((w as { code?: string }).code === 'RXSEM_CONSUL_TLS_VERIFY_DISABLED') warnings.push(w)
    }
    process.on('warning', listen)
    try {
      const options = env({
        CONSUL_HTTP_ADDR: 'https://127.0.0.1:8501',
        CONSUL_HTTP_SSL_VERIFY: 'false',
      })
      assert.equal(resolveConfig(options).tls?.rejectUnauthorized, false)
      assert.equal(resolveConfig(options).tls?.rejectUnauthorized, false)
      await new Promise((done) => setImmediate(done))
      assert.equal(warnings.length, 1)
      assert.match(
        warnings[0]?.message ?? '',
        /CONSUL_HTTP_SSL_VERIFY disables TLS certificate verification/,
      )
    } finally {
      process.off('warning', listen)
    }
  })

  const invalid: readonly [string, ConsulClientConfig, string, RegExp][] = [
    [
      'an address with an unknown scheme',
      env({ CONSUL_HTTP_ADDR: 'ftp://x:1' }),
      'CONSUL_HTTP_ADDR',
      /unsupported scheme "ftp".*use host:port/,
    ],
    [
      'an address without a port',
      env({ CONSUL_HTTP_ADDR: 'consul.local' }),
      'CONSUL_HTTP_ADDR',
      /no port/,
    ],
    [
      'an address with a bad port',
      env({ CONSUL_HTTP_ADDR: '127.0.0.1:99999' }),
      'CONSUL_HTTP_ADDR',
      /not a valid address/,
    ],
    [
      'an address with a path',
      env({ CONSUL_HTTP_ADDR: 'http://127.0.0.1:8500/v1' }),
      'CONSUL_HTTP_ADDR',
      /a path or query/,
    ],
    [
      'an address with credentials',
      env({ CONSUL_HTTP_ADDR: 'http://u:p@127.0.0.1:8500' }),
      'CONSUL_HTTP_ADDR',
      /use CONSUL_HTTP_AUTH/,
    ],
    [
      'a relative unix socket',
      env({ CONSUL_HTTP_ADDR: 'unix://consul.sock' }),
      'CONSUL_HTTP_ADDR',
      /not absolute/,
    ],
    [
      'an option address',
      { address: 'gopher://x:1', env: {} },
      'options.address',
      /unsupported scheme/,
    ],
    [
      'a CONSUL_HTTP_SSL that is not a boolean',
      env({ CONSUL_HTTP_SSL: 'yes' }),
      'CONSUL_HTTP_SSL',
      /"yes" is not a boolean; use true or false/,
    ],
    [
      'a CONSUL_HTTP_SSL_VERIFY that is not a boolean',
      env({ CONSUL_HTTP_SSL_VERIFY: 'nope' }),
      'CONSUL_HTTP_SSL_VERIFY',
      /not a boolean/,
    ],
    [
      'a token file that does not exist',
      env({ CONSUL_HTTP_TOKEN_FILE: join(dir, 'missing') }),
      'CONSUL_HTTP_TOKEN_FILE',
      /cannot read the token file .*ENOENT/,
    ],
    [
      'a CA file that does not exist',
      env({ CONSUL_HTTP_SSL: 'true', CONSUL_CACERT: join(dir, 'nope.pem') }),
      'CONSUL_CACERT',
      /cannot read the CA certificate file/,
    ],
    [
      'a client certificate without key',
      env({ CONSUL_CLIENT_CERT: caFile }),
      'CONSUL_CLIENT_KEY',
      /needs both CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY/,
    ],
    [
      'a client key without certificate',
      env({ CONSUL_CLIENT_KEY: caFile }),
      'CONSUL_CLIENT_CERT',
      /set the missing one/,
    ],
    [
      'a token with a line break',
      env({ CONSUL_HTTP_TOKEN: 'a\nb' }),
      'CONSUL_HTTP_TOKEN',
      /line break/,
    ],
    [
      'a token with a control character',
      env({ CONSUL_HTTP_TOKEN: 'a\u0001b' }),
      'CONSUL_HTTP_TOKEN',
      /U\+0001, which cannot go in an HTTP header/,
    ],
    [
      'an unknown consistency mode',
      { consistency: 'eventual' as never, env: {} },
      'options.consistency',
      /use default, consistent or stale/,
    ],
    [
      'a zero connection limit',
      { connections: 0, env: {} },
      'options.connections',
      /positive integer/,
    ],
    [
      'a fractional request timeout',
      { requestTimeoutMs: 1.5, env: {} },
      'options.requestTimeoutMs',
      /positive integer/,
    ],
    [
      'a datacenter with a slash',
      { datacenter: 'dc1/x', env: {} },
      'options.datacenter',
      /not a datacenter name/,
    ],
  ]
  for (const [what, options, setting, message] of invalid) {
    it(`refuses ${what}, naming ${setting}`, () => {
      assert.throws(
        () => resolveConfig(options),
        (error: unknown) => {
          assert.ok(error instanceof ConsulConfigError)
          assert.equal(error.setting, setting)
          assert.ok(error.message.startsWith(`${setting}: `), error.message)
          assert.match(error.message, message)
          return true
        },
      )
    })
  }

  it('never puts the token into the message of a configuration error', () => {
    assert.throws(
      () =>
        resolveConfig(env({ CONSUL_HTTP_TOKEN: 'sekrit\nline', CONSUL_HTTP_ADDR: '127.0.0.1:1' })),
      (error: unknown) => error instanceof ConsulConfigError && !error.message.includes('sekrit'),
    )
  })
})
