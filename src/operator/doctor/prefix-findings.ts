/**
 * `doctor`'s findings about a prefix: whether the token may read it and write it, checked without
 * writing anything, and what its `.lock` holds.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { Transport } from '../../consul/http.js'
import { createKv } from '../../consul/kv.js'
import { createTxn } from '../../consul/txn.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { contenderKey } from '../../core/keys/contender-key.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { POLICY_HINT, type Add, type Answered } from './finding.js'
import { lockFinding } from './lock-finding.js'

/** An index no key's ModifyIndex reaches: a CAS at it fails, or is refused for want of rights. */
const UNREACHABLE_INDEX = 2n ** 53n - 1n

/** A session id no contender has, to read "a contender key" that never exists. */
const PROBE_SESSION = '00000000-0000-0000-0000-000000000000'

/**
 * The token's rights to read and to write `<prefix>/`, and (when it may read it) `.lock`. A
 * read is refused key by key; the write is a check-and-set at an index no key has, which Consul
 * answers "index is stale" to a token that may write and "Permission denied" to one that may not.
 */
export async function prefixFindings(
  transport: Transport,
  prefix: string,
  answered: Answered,
  add: Add,
): Promise<void> {
  const kv = createKv(transport)
  const txn = createTxn(transport)
  // Read: a listing leaves out what the token may not read (answering 200 or 404), so `.lock`
  // and a contender key are read one by one, which Consul refuses with a 403 instead.
  const keys = [lockKey(prefix), contenderKey(prefix, PROBE_SESSION)]
  const denied: string[] = []
  for (const key of keys) {
    const read = await kv.get(key)()
    if (E.isLeft(read) && read.left._tag === 'PermissionDenied') denied.push(key)
    else answered(read)
  }
  let listing: KVSnapshot | undefined
  if (denied.length > 0) {
    add(
      'prefix-read',
      'problem',
      `the token may not read ${denied.join(' nor ')} (403): contenders cannot see the holders and waiters of ${prefix}/`,
      `give the token \`key_prefix "${prefix}/" { policy = "write" }\`; ${POLICY_HINT}`,
    )
  } else {
    const listed = await kv.list(`${prefix}/`)()
    listing = answered(listed)
    add('prefix-read', 'ok', `the token may read ${prefix}/`)
  }

  // Write, without writing: a CAS at an index no key has fails as "index is stale" when the token
  // may write, and as "Permission denied" when it may not, for a missing key and an existing one.
  const probe = answerOrDenied(
    await txn([{ verb: 'cas', key: lockKey(prefix), value: null, index: UNREACHABLE_INDEX }])(),
  )
  const refused =
    probe === 'denied' ||
    (probe !== undefined &&
      !probe.committed &&
      probe.errors.some((e) => /permission denied/i.test(e.what)))
  if (refused) {
    add(
      'prefix-write',
      'problem',
      `the token may not write ${prefix}/ (a check-and-set of ${lockKey(prefix)} was refused: Permission denied): contenders fail at once with PermissionDenied`,
      `give the token \`key_prefix "${prefix}/" { policy = "write" }\`; ${POLICY_HINT}`,
    )
  } else if (probe !== undefined && !probe.committed) {
    add(
      'prefix-write',
      'ok',
      `the token may write ${prefix}/ (checked with a check-and-set that cannot match, so nothing was written)`,
    )
  } else {
    add(
      'prefix-write',
      'warning',
      `the check of the right to write ${prefix}/ gave no answer doctor can read`,
      'run `rxsem run --timeout 0` on the prefix to see whether a contender is refused',
    )
  }

  if (listing !== undefined) {
    const lock = lockFinding(listing, prefix)
    add('lock', lock.severity, lock.found, lock.action)
  }

  /** A transaction's answer, 'denied' for a 403, or a stop for anything that is no answer. */
  function answerOrDenied<A>(result: E.Either<ConsulError, A>): A | 'denied' | undefined {
    if (E.isLeft(result) && result.left._tag === 'PermissionDenied') return 'denied'
    if (E.isLeft(result) && result.left._tag === 'BadRequest') return undefined
    return answered(result)
  }
}
