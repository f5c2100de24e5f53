/**
 * KV key names in URLs. Each segment is percent-encoded and `/` kept (Consul decodes the path);
 * keys that Go's HTTP mux would redirect instead of serving (`//`, `.`/`..` segments) and keys
 * with a leading `/` are refused before sending (consul-http-semantics §2.1, §9 trap 9).
 */
import * as E from 'fp-ts/lib/Either.js'
import { rejectedBeforeSending, type BadRequest } from '../base/consul-error.js'

/** A `.` or `..` segment (the first), captured. */
const DOTTED_SEGMENT = /(?:^|\/)(\.\.?)(?:\/|$)/

/** Why `key` cannot be sent, or undefined when it can. */
export function keyProblem(key: string, allowEmpty: boolean): string | undefined {
  if (key === '') return allowEmpty ? undefined : 'the key is empty'
  if (key.startsWith('/')) return `the key ${JSON.stringify(key)} begins with "/"; drop it`
  if (key.includes('//')) return `the key ${JSON.stringify(key)} contains "//" (an empty segment)`
  const dotted = DOTTED_SEGMENT.exec(key)?.[1]
  if (dotted !== undefined) {
    return `the key ${JSON.stringify(key)} has a "${dotted}" segment, which HTTP path cleaning would rewrite`
  }
  return undefined
}

/** `/v1/kv/<encoded key>`, or the BadRequest that says why the key is refused. */
export function kvPath(
  method: string,
  key: string,
  allowEmpty = false,
): E.Either<BadRequest, string> {
  const problem = keyProblem(key, allowEmpty)
  if (problem !== undefined) return E.left(rejectedBeforeSending(`${method} /v1/kv/`, problem))
  return E.right(`/v1/kv/${key.split('/').map(encodeURIComponent).join('/')}`)
}
