/**
 * Keeping the client's secrets out of its errors: the ACL token and the basic-auth password are
 * replaced wherever an error carries them (a message quoting an agent's answer, a cause, a body).
 */
import type { ResolvedConfig } from './config.js'
import type { ConsulError } from '../base/consul-error.js'

/** The secrets of `config` that no error may show: its token and its basic-auth password. */
export function secretsOf(config: ResolvedConfig): readonly string[] {
  return [
    config.token,
    config.basicAuth && config.basicAuth.password !== '' ? config.basicAuth.password : undefined,
  ].filter((s): s is string => s !== undefined && s !== '')
}

/** A copy of `error` with every occurrence of a secret replaced, in every string it carries. */
export function redact(error: ConsulError, secrets: readonly string[]): ConsulError {
  if (secrets.length === 0) return error
  const clean = (value: unknown): unknown =>
    typeof value === 'string'
      ? replaceAll(value, secrets)
      : Array.isArray(value)
        ? value.map(clean)
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clean(v)]))
          : value
  return clean(error) as ConsulError
}

function replaceAll(text: string, secrets: readonly string[]): string {
  return secrets.reduce((acc, secret) => acc.split(secret).join('<redacted>'), text)
}
