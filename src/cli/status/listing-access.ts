/**
 * Whether Consul may have filtered a listing of the prefix. With ACLs on, a listing (`?recurse`)
 * leaves out the keys the token may not read and answers 200 (or 404 when nothing is left), so an
 * empty prefix and a denied one look the same. A read of one key is refused with a 403 instead,
 * whether the key exists or not (Consul 1.8.7, `default_policy = "deny"`): so `rxsem status` and
 * `rxsem watch` read the two kinds of key a semaphore has, `.lock` and a contender key, and a
 * refusal of either says the listing cannot be trusted. No `acl:read` is needed.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../../consul/client-api.js'
import { contenderKey } from '../../core/keys/contender-key.js'
import { lockKey } from '../../core/keys/lock-key.js'

/** A session id no contender has: the probe of "a contender key" reads a key that never exists. */
const PROBE_SESSION = '00000000-0000-0000-0000-000000000000'

/**
 * The keys of `<prefix>/` that the client's token may not read, found by reading `.lock` and a
 * contender key; empty when both reads were allowed (or failed for another reason, which the
 * listing itself reports).
 *
 * @example
 * const denied = await unreadableKeys(client, 'service/db/lock') // ['service/db/lock/.lock', ...]
 */
export async function unreadableKeys(
  client: Pick<ConsulClient, 'kv'>,
  prefix: string,
): Promise<string[]> {
  const keys = [lockKey(prefix), contenderKey(prefix, PROBE_SESSION)]
  const answers = await Promise.all(keys.map((key) => client.kv.get(key)()))
  return keys.filter((_, i) => {
    const answer = answers[i]
    return answer !== undefined && E.isLeft(answer) && answer.left._tag === 'PermissionDenied'
  })
}

/**
 * The warning `rxsem status` and `rxsem watch` give when the token may not read the prefix.
 *
 * @example
 * filteredWarning('service/db/lock', ['service/db/lock/.lock'])
 */
export function filteredWarning(prefix: string, denied: readonly string[]): string {
  return (
    `the ACL token may not read ${denied.join(' nor ')}, so Consul leaves out of the listing of ` +
    `${prefix}/ what the token may not read: holders and waiters may be missing, and an empty ` +
    `prefix proves nothing. Give the token (CONSUL_HTTP_TOKEN or CONSUL_HTTP_TOKEN_FILE) ` +
    `\`key_prefix "${prefix}/" { policy = "read" }\` at least: see "ACL policy" in docs/operations.md.`
  )
}
