/**
 * Client configuration the way Consul users already write it: an options object, with defaults
 * from the environment variables Consul's Go client and CLI read (`api/api.go`, DefaultConfig).
 * Everything is checked when the client is constructed; a bad value throws a ConsulConfigError
 * naming the variable or option, so a typo never turns into a puzzling network error later.
 */
import { readdirSync, readFileSync, type Dirent } from 'node:fs'
import { join } from 'node:path'
import { ConsulConfigError } from './config-error.js'

/**
 * Consistency mode of reads: 'default' (the leader answers, which is almost always current),
 * 'consistent' (the leader first confirms it still leads: one more round trip) or 'stale' (any
 * server answers, possibly behind, but reads keep working without a leader).
 *
 * @example
 * ```ts
 * const consistency: Consistency = 'stale'
 * const consul = createConsulClient({ address: '127.0.0.1:8500', consistency })
 * ```
 */
export type Consistency = 'default' | 'consistent' | 'stale'

/**
 * TLS settings, used when the address is https (or `ssl` is true); files are read when the client
 * is constructed. Each unset setting falls back to its environment variable.
 *
 * @example
 * ```ts
 * const consul = createConsulClient({
 *   address: 'https://consul.internal:8501',
 *   tls: {
 *     caFile: '/etc/consul/ca.pem',
 *     certFile: '/etc/consul/client.pem',
 *     keyFile: '/etc/consul/client-key.pem',
 *   },
 * })
 * ```
 */
export interface ConsulTlsOptions {
  /** PEM of the CA to trust, as text or bytes; wins over `caFile`. Default: the system's CAs. */
  readonly ca?: string | Uint8Array
  /** File holding the PEM of the CA to trust (CONSUL_CACERT); wins over `caPath`. */
  readonly caFile?: string
  /**
   * Directory of PEM CA certificates, all trusted (CONSUL_CAPATH), as Consul's Go client reads it:
   * every file under it, subdirectories included, must hold at least one PEM certificate.
   */
  readonly caPath?: string
  /** Client certificate, PEM (text or bytes); wins over `certFile`. Needs a key too. */
  readonly cert?: string | Uint8Array
  /** File holding the client certificate (CONSUL_CLIENT_CERT). */
  readonly certFile?: string
  /** Client private key, PEM (text or bytes); wins over `keyFile`. Needs a certificate too. */
  readonly key?: string | Uint8Array
  /** File holding the client private key (CONSUL_CLIENT_KEY). */
  readonly keyFile?: string
  /** SNI and certificate name to verify (CONSUL_TLS_SERVER_NAME). */
  readonly serverName?: string
  /** false skips certificate verification (CONSUL_HTTP_SSL_VERIFY=false); warns once. */
  readonly verify?: boolean
}

/**
 * Options of `createConsulClient`. Each unset option falls back to its environment variable,
 * then to Consul's default.
 *
 * @example
 * ```ts
 * const consul = createConsulClient({ address: '127.0.0.1:8500', token: process.env.MY_TOKEN })
 * ```
 */
export interface ConsulClientConfig {
  /** `host:port`, `http://…`, `https://…` or `unix:///path.sock` (CONSUL_HTTP_ADDR); default 127.0.0.1:8500. */
  readonly address?: string
  /** Use https for a `host:port` address (CONSUL_HTTP_SSL). */
  readonly ssl?: boolean
  /** ACL token, sent only in the X-Consul-Token header (CONSUL_HTTP_TOKEN). */
  readonly token?: string
  /** File holding the ACL token; wins over `token` (CONSUL_HTTP_TOKEN_FILE). */
  readonly tokenFile?: string
  /** HTTP basic auth, `user:pass` (CONSUL_HTTP_AUTH). */
  readonly auth?: string
  /** TLS settings for an https address; see ConsulTlsOptions. */
  readonly tls?: ConsulTlsOptions
  /** Enterprise namespace, sent as `ns` (CONSUL_NAMESPACE). */
  readonly namespace?: string
  /** Enterprise admin partition (Consul Enterprise 1.11+), sent as `partition` (CONSUL_PARTITION). */
  readonly partition?: string
  /** Datacenter, sent as `dc`; default the agent's. */
  readonly datacenter?: string
  /** Consistency mode of reads; default 'default' (served by the leader). */
  readonly consistency?: Consistency
  /**
   * Most connections the client opens to the agent; default 16 (see semantics §9 trap 15). Long
   * polls (one per watched prefix) hold at most all but one of them; the last is kept for the
   * other calls (renewals, writes, reads). Give a client that watches more than `connections - 1`
   * prefixes more connections, or some of its watches wait for a turn.
   */
  readonly connections?: number
  /**
   * Timeout of a non-blocking request in ms, from when it has a connection (a call waiting for one
   * of the `connections`, all busy, is not timed meanwhile); default 10000.
   */
  readonly requestTimeoutMs?: number
  /**
   * Largest answer the client reads, in bytes; default 32 MiB (DEFAULT_MAX_RESPONSE_BYTES). Past
   * it, the client stops reading, drops the connection and fails the call with TooLarge, so a
   * broken or hostile agent cannot make it hold hundreds of megabytes. Raise it only for a prefix
   * that really holds that much (32 MiB is about 150 000 contender keys, or 48 values of 512 KiB).
   */
  readonly maxResponseBytes?: number
  /** Where the environment variables are read; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
}

/**
 * The checked configuration the transport runs on: options and environment merged, defaults
 * filled in, files read. A ConsulHttpClient shows it as `config`, without the secrets.
 *
 * @example
 * ```ts
 * const { origin, socketPath, requestTimeoutMs } = createConsulClient().config
 * console.log(socketPath ?? origin, requestTimeoutMs) // e.g. 'http://127.0.0.1:8500 10000'
 * ```
 */
export interface ResolvedConfig {
  /**
   * Origin of the agent's HTTP API, e.g. `http://127.0.0.1:8500` (`http://localhost` for a unix
   * socket).
   */
  readonly origin: string
  /** Path of the agent's unix socket, when the address is `unix://…`; undefined for TCP. */
  readonly socketPath: string | undefined
  /** TLS material and checks for an https origin; undefined for http. */
  readonly tls:
    | {
        /** PEM of the CAs to trust (one or more); undefined: the system's CAs. */
        readonly ca: string | undefined
        /** Client certificate, PEM. */
        readonly cert: string | undefined
        /** Client private key, PEM. */
        readonly key: string | undefined
        /** Name for SNI and certificate verification; undefined: the address's host. */
        readonly servername: string | undefined
        /** False only when verification was turned off (`verify: false`). */
        readonly rejectUnauthorized: boolean
      }
    | undefined
  /** The ACL token (from `tokenFile`, else `token`); undefined for none. */
  readonly token: string | undefined
  /** HTTP basic auth split from `user:pass`; undefined for none. */
  readonly basicAuth:
    | {
        /** User name, before the first ':'. */
        readonly user: string
        /** Password, after the first ':' ('' when there is none). */
        readonly password: string
      }
    | undefined
  /** Enterprise namespace sent as `ns`; undefined for none. */
  readonly namespace: string | undefined
  /** Enterprise admin partition sent as `partition`; undefined for none. */
  readonly partition: string | undefined
  /** Datacenter sent as `dc`; undefined: the agent's. */
  readonly datacenter: string | undefined
  /** Consistency mode of reads that do not choose their own. */
  readonly consistency: Consistency
  /** Most connections to the agent (default 16). */
  readonly connections: number
  /** Timeout of a non-blocking request, in ms (default 10000). */
  readonly requestTimeoutMs: number
  /** Largest answer read, in bytes (default 32 MiB). */
  readonly maxResponseBytes: number
}

/**
 * 32 MiB: a prefix of this library holds one contender key of a few hundred bytes per contender,
 * so 1000 contenders list in about 250 kB and 32 MiB leaves a hundredfold margin (or room for 48
 * values at Consul's default 512 KiB limit), while a runaway answer costs at most this much
 * buffered, plus its decoding, instead of all of it.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

interface Setting<A> {
  readonly value: A
  /** The name a person would look for: `CONSUL_HTTP_ADDR` or `options.address`. */
  readonly name: string
}

type Env = Readonly<Record<string, string | undefined>>

function pick<A>(
  option: A | undefined,
  optionName: string,
  env: Env,
  variable: string,
  fromEnv: (text: string, name: string) => A,
): Setting<A> | undefined {
  if (option !== undefined) return { value: option, name: `options.${optionName}` }
  const text = env[variable]
  // Like the Go client, an empty variable counts as unset.
  if (text === undefined || text === '') return undefined
  return { value: fromEnv(text, variable), name: variable }
}

const asText = (text: string): string => text

/** Go's strconv.ParseBool, which is what Consul's tools accept for CONSUL_HTTP_SSL(_VERIFY). */
function parseBool(text: string, name: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false
  throw new ConsulConfigError(name, `"${text}" is not a boolean; use true or false`)
}

function readSecretFile(path: string, name: string, what: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as { code?: unknown }).code
    throw new ConsulConfigError(
      name,
      `cannot read the ${what} file ${JSON.stringify(path)} (${String(code ?? error)}); fix the path or unset it`,
    )
  }
}

interface Address {
  readonly origin: string
  readonly socketPath: string | undefined
  readonly https: boolean | undefined
}

function parseAddress(text: string, name: string): Address {
  const fail = (why: string): never => {
    throw new ConsulConfigError(
      name,
      `${why} in ${JSON.stringify(text)}; use host:port, http://host:port, https://host:port or unix:///path/to/consul.sock`,
    )
  }
  if (text.startsWith('unix://')) {
    const socketPath = text.slice('unix://'.length)
    if (!socketPath.startsWith('/')) fail('the unix socket path is not absolute')
    return { origin: 'http://localhost', socketPath, https: undefined }
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase()
  if (scheme !== undefined && scheme !== 'http' && scheme !== 'https') {
    fail(`unsupported scheme "${scheme}"`)
  }
  let url: URL
  try {
    url = new URL(scheme === undefined ? `http://${text}` : text)
  } catch {
    return fail('not a valid address')
  }
  if (url.hostname === '') fail('no host')
  if (url.username !== '' || url.password !== '') {
    fail('credentials in the address (use CONSUL_HTTP_AUTH or options.auth)')
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') fail('a path or query')
  if (scheme === undefined && url.port === '' && !/:\d+$/.test(text)) {
    // Consul users always give a port; a bare host would silently mean port 80.
    fail('no port')
  }
  return {
    origin: `${scheme ?? 'http'}://${url.host}`,
    socketPath: undefined,
    https: scheme === undefined ? undefined : scheme === 'https',
  }
}

function positiveInteger(value: number, name: string, what: string): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConsulConfigError(name, `${what} must be a positive integer, got ${value}`)
  }
  return value
}

let verifyWarningEmitted = false
function warnVerifyDisabled(name: string): void {
  if (verifyWarningEmitted) return
  verifyWarningEmitted = true
  process.emitWarning(
    `${name} disables TLS certificate verification of the Consul agent; anyone on the path can read the ACL token`,
    { code: 'RXSEM_CONSUL_TLS_VERIFY_DISABLED' },
  )
}

/** The PEM given as an option (text or bytes; PEM is ASCII text), else read from its file. */
function pemOrFile(
  pem: string | Uint8Array | undefined,
  file: Setting<string> | undefined,
  what: string,
): string | undefined {
  if (pem !== undefined) return typeof pem === 'string' ? pem : new TextDecoder().decode(pem)
  return file === undefined ? undefined : readSecretFile(file.value, file.name, what)
}

/**
 * The PEM certificates of every file under the directory `dir` names (CONSUL_CAPATH), joined: as
 * Consul's Go client (go-rootcerts' LoadCAPath) reads it, each file must hold a PEM certificate,
 * subdirectories are read too (a symbolic link to a file is followed, one to a directory is not).
 * A directory that cannot be read, a file without a certificate, or no file at all is an error.
 */
function readCaDirectory(dir: Setting<string>): string {
  const fail = (why: string): never => {
    throw new ConsulConfigError(
      dir.name,
      `${why}; give a directory of PEM CA certificates, or use CONSUL_CACERT for one file`,
    )
  }
  const pems: string[] = []
  const walk = (path: string): void => {
    let entries: Dirent[]
    try {
      entries = readdirSync(path, { withFileTypes: true })
    } catch (error) {
      const code = (error as { code?: unknown }).code
      return fail(`cannot read the CA directory ${JSON.stringify(path)} (${String(code ?? error)})`)
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const file = join(path, entry.name)
      if (entry.isDirectory()) {
        walk(file)
        continue
      }
      const pem = readSecretFile(file, dir.name, 'CA certificate')
      if (!/-----BEGIN CERTIFICATE-----/.test(pem)) {
        fail(`${JSON.stringify(file)} in the CA directory holds no PEM certificate`)
      }
      pems.push(pem.trimEnd())
    }
  }
  walk(dir.value)
  if (pems.length === 0) fail(`the CA directory ${JSON.stringify(dir.value)} holds no certificate`)
  return `${pems.join('\n')}\n`
}

/** Checks `options` against the environment; throws ConsulConfigError on the first bad value. */
export function resolveConfig(options: ConsulClientConfig = {}): ResolvedConfig {
  const env: Env = options.env ?? process.env
  const address = pick(options.address, 'address', env, 'CONSUL_HTTP_ADDR', asText)
  const parsed = parseAddress(address?.value ?? '127.0.0.1:8500', address?.name ?? 'default')
  const ssl = pick(options.ssl, 'ssl', env, 'CONSUL_HTTP_SSL', parseBool)
  // An explicit scheme in the address wins over CONSUL_HTTP_SSL, as in the Go client.
  const https = parsed.socketPath === undefined && (parsed.https ?? ssl?.value ?? false)
  const origin = https ? parsed.origin.replace(/^http:/, 'https:') : parsed.origin

  const tokenFile = pick(options.tokenFile, 'tokenFile', env, 'CONSUL_HTTP_TOKEN_FILE', asText)
  const tokenSetting = pick(options.token, 'token', env, 'CONSUL_HTTP_TOKEN', asText)
  // The token file wins over the token (Go client); an empty file is ignored, as there.
  const fileToken = tokenFile && readSecretFile(tokenFile.value, tokenFile.name, 'token').trim()
  const token = fileToken || tokenSetting?.value || undefined
  // It goes in a header line: no line break, no other control character, nothing past U+00FF.
  const unsendable = token === undefined ? null : /[^\t\x20-\x7e\x80-\xff]/.exec(token)
  if (unsendable !== null) {
    const what = /[\r\n]/.test(unsendable[0])
      ? 'a line break'
      : `the character U+${(unsendable[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}, which cannot go in an HTTP header`
    throw new ConsulConfigError(
      tokenFile && fileToken ? tokenFile.name : (tokenSetting?.name ?? 'token'),
      `the ACL token contains ${what}; remove it`,
    )
  }

  const auth = pick(options.auth, 'auth', env, 'CONSUL_HTTP_AUTH', asText)
  const colon = auth?.value.indexOf(':') ?? -1
  const basicAuth =
    auth === undefined
      ? undefined
      : colon < 0
        ? { user: auth.value, password: '' }
        : { user: auth.value.slice(0, colon), password: auth.value.slice(colon + 1) }

  const t = options.tls ?? {}
  // As in Go's client, a CA file wins over a CA directory; an option wins over any variable.
  const caOption = t.ca !== undefined || t.caFile !== undefined || t.caPath !== undefined
  const caFile =
    caOption && t.caFile === undefined
      ? undefined
      : pick(t.caFile, 'tls.caFile', env, 'CONSUL_CACERT', asText)
  const caPath =
    caOption && t.caPath === undefined
      ? undefined
      : pick(t.caPath, 'tls.caPath', env, 'CONSUL_CAPATH', asText)
  const certFile = pick(t.certFile, 'tls.certFile', env, 'CONSUL_CLIENT_CERT', asText)
  const keyFile = pick(t.keyFile, 'tls.keyFile', env, 'CONSUL_CLIENT_KEY', asText)
  const hasCert = t.cert !== undefined || certFile !== undefined
  const hasKey = t.key !== undefined || keyFile !== undefined
  if (hasCert !== hasKey) {
    throw new ConsulConfigError(
      hasCert ? 'CONSUL_CLIENT_KEY' : 'CONSUL_CLIENT_CERT',
      `a client certificate needs both CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY (or tls.cert/tls.certFile and tls.key/tls.keyFile); set the missing one`,
    )
  }
  const serverName = pick(t.serverName, 'tls.serverName', env, 'CONSUL_TLS_SERVER_NAME', asText)
  const verify = pick(t.verify, 'tls.verify', env, 'CONSUL_HTTP_SSL_VERIFY', parseBool)
  if (https && verify?.value === false) warnVerifyDisabled(verify.name)

  const namespace = pick(options.namespace, 'namespace', env, 'CONSUL_NAMESPACE', asText)
  const partition = pick(options.partition, 'partition', env, 'CONSUL_PARTITION', asText)
  const consistency = options.consistency ?? 'default'
  if (!['default', 'consistent', 'stale'].includes(consistency)) {
    throw new ConsulConfigError(
      'options.consistency',
      `"${String(consistency)}" is not a consistency mode; use default, consistent or stale`,
    )
  }
  if (options.datacenter !== undefined && !/^[A-Za-z0-9_.-]+$/.test(options.datacenter)) {
    throw new ConsulConfigError(
      'options.datacenter',
      `${JSON.stringify(options.datacenter)} is not a datacenter name; use letters, digits, - _ .`,
    )
  }

  return {
    origin,
    socketPath: parsed.socketPath,
    tls: https
      ? {
          ca:
            pemOrFile(t.ca, caFile, 'CA certificate') ??
            (caPath === undefined ? undefined : readCaDirectory(caPath)),
          cert: pemOrFile(t.cert, certFile, 'client certificate'),
          key: pemOrFile(t.key, keyFile, 'client key'),
          servername: serverName?.value,
          rejectUnauthorized: verify?.value ?? true,
        }
      : undefined,
    token,
    basicAuth,
    namespace: namespace?.value,
    partition: partition?.value,
    datacenter: options.datacenter,
    consistency,
    connections: positiveInteger(options.connections ?? 16, 'options.connections', 'connections'),
    requestTimeoutMs: positiveInteger(
      options.requestTimeoutMs ?? 10_000,
      'options.requestTimeoutMs',
      'the request timeout',
    ),
    maxResponseBytes: positiveInteger(
      options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      'options.maxResponseBytes',
      'the largest answer (bytes)',
    ),
  }
}
