/**
 * The Consul connection flags every command takes, named like `consul`'s own (`-http-addr`,
 * `-ca-file`, ...). Each overrides its CONSUL_* variable; unset ones fall back to it. There is no
 * `--token`: see `parseFlags`.
 */
import type { ConsulClientConfig } from '../../consul/config.js'
import type { OptionSpec, ParsedValues } from './parse-flags.js'

/** parseArgs spec of the connection flags. */
export const consulFlagSpec = {
  'http-addr': { type: 'string' },
  'token-file': { type: 'string' },
  'ca-file': { type: 'string' },
  'ca-path': { type: 'string' },
  'client-cert': { type: 'string' },
  'client-key': { type: 'string' },
  'tls-server-name': { type: 'string' },
  datacenter: { type: 'string' },
  namespace: { type: 'string' },
  partition: { type: 'string' },
} as const satisfies OptionSpec

/** Usage lines of the connection flags, shared by every command's help. */
export const consulFlagHelp = `Consul connection (each overrides its environment variable):
  --http-addr <addr>        agent address, host:port or https://host:port (CONSUL_HTTP_ADDR)
  --token-file <path>       file holding the ACL token (CONSUL_HTTP_TOKEN_FILE); a token is
                            never taken on the command line, use CONSUL_HTTP_TOKEN instead
  --ca-file <path>          CA certificate for TLS (CONSUL_CACERT)
  --ca-path <dir>           folder of CA certificates for TLS (CONSUL_CAPATH)
  --client-cert <path>      client certificate (CONSUL_CLIENT_CERT)
  --client-key <path>       client key (CONSUL_CLIENT_KEY)
  --tls-server-name <name>  name to verify in the agent's certificate (CONSUL_TLS_SERVER_NAME)
  --datacenter <dc>         datacenter to use; default the agent's
  --namespace <ns>          Enterprise namespace (CONSUL_NAMESPACE)
  --partition <name>        Enterprise admin partition (CONSUL_PARTITION)`

/** The option names of ConsulConfigError messages, as the flags a CLI user typed. */
export const flagOfSetting: Readonly<Record<string, string>> = {
  'options.address': '--http-addr',
  'options.tokenFile': '--token-file',
  'options.datacenter': '--datacenter',
  'options.namespace': '--namespace',
  'options.partition': '--partition',
  'tls.caFile': '--ca-file',
  'tls.caPath': '--ca-path',
  'tls.certFile': '--client-cert',
  'tls.keyFile': '--client-key',
  'tls.serverName': '--tls-server-name',
}

/**
 * The client configuration the flags ask for; what they leave unset (undefined) comes from the
 * environment when the client is created.
 */
export function consulConfigFrom(values: ParsedValues): ConsulClientConfig {
  const text = (name: keyof typeof consulFlagSpec): string | undefined => {
    const value = values[name]
    return typeof value === 'string' ? value : undefined
  }
  return {
    address: text('http-addr'),
    tokenFile: text('token-file'),
    datacenter: text('datacenter'),
    namespace: text('namespace'),
    partition: text('partition'),
    tls: {
      caFile: text('ca-file'),
      caPath: text('ca-path'),
      certFile: text('client-cert'),
      keyFile: text('client-key'),
      serverName: text('tls-server-name'),
    },
  }
}
