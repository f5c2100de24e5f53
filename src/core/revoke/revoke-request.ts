/**
 * Cooperative revoke, the part that depends only on KV data: what a revoke key says, and how it
 * is written. An operator (`rxsem evict --grace`, `evict({ grace })`) writes
 * `<prefix>/.lock.revoke/<session>` under a session of its own; the holder `session` sees the key
 * in its next snapshot of the prefix (a leader, in its next answer of its long poll of `.lock`)
 * and may give its slot back before the grace ends, after which the operator forces the eviction.
 */
import * as E from 'fp-ts/lib/Either.js'
import * as t from 'io-ts'
import type { KVEntry } from '../../base/kv-snapshot.js'

/**
 * A request that the holder give its slot back, as its holder sees it (`state$`'s
 * `revokeRequested`).
 *
 * @example
 * ```ts
 * sem.state$.subscribe(({ revokeRequested }) => {
 *   if (revokeRequested) void stopWork().then(() => sem.close())
 * })
 * ```
 */
export interface RevokeRequest {
  /**
   * How long the holder has to give the slot back (ms) from when the request was written, before
   * the eviction is forced; undefined when the request does not say.
   */
  readonly graceMs: number | undefined
  /** Why, in the words of whoever asked; undefined when none was given. */
  readonly reason: string | undefined
}

/** The JSON of a revoke key's value. Every field is optional: the key's presence is the request. */
const RevokeBody = t.partial({
  graceMs: t.number,
  reason: t.string,
})

const utf8 = new TextEncoder()
const utf8Decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * The value `evict` writes to a revoke key.
 *
 * @example
 * encodeRevokeRequest({ graceMs: 30_000, reason: 'deploy' }) // {"graceMs":30000,"reason":"deploy"}
 * @param request - The grace and the reason.
 * @returns The value, UTF-8 JSON.
 */
export function encodeRevokeRequest(request: RevokeRequest): Uint8Array {
  const body: t.TypeOf<typeof RevokeBody> = {}
  if (request.graceMs !== undefined) body.graceMs = request.graceMs
  if (request.reason !== undefined) body.reason = request.reason
  return utf8.encode(JSON.stringify(body))
}

/**
 * What a revoke key asks. The key's presence is the request, whatever its value: a value that is
 * not this library's JSON (written by hand, by another tool) reads as a request with no grace and
 * no reason, never as no request. The same entry always gives the same object, so that a holder's
 * state does not change on a snapshot that did not change the key.
 *
 * @example
 * ```ts
 * const entry = snapshot.entries.find((e) => e.key === revokeKey(prefix, session))
 * if (entry) console.log(readRevokeRequest(entry).reason ?? 'no reason given')
 * ```
 * @param entry - The revoke key's entry.
 * @returns Its grace and reason, each undefined when the value does not give it.
 */
export function readRevokeRequest(entry: KVEntry): RevokeRequest {
  const known = read.get(entry)
  if (known !== undefined) return known
  const request = decodeValue(entry.value)
  read.set(entry, request)
  return request
}
const read = new WeakMap<KVEntry, RevokeRequest>()

const NO_DETAILS: RevokeRequest = { graceMs: undefined, reason: undefined }

function decodeValue(value: Uint8Array | null): RevokeRequest {
  if (value === null || value.length === 0) return NO_DETAILS
  let json: unknown
  try {
    json = JSON.parse(utf8Decoder.decode(value))
  } catch {
    return NO_DETAILS
  }
  const body = RevokeBody.decode(json)
  if (E.isLeft(body)) return NO_DETAILS
  const { graceMs, reason } = body.right
  return {
    graceMs:
      graceMs !== undefined && Number.isFinite(graceMs) && graceMs >= 0 ? graceMs : undefined,
    reason,
  }
}

/**
 * Whether two requests say the same (for the state's `same`).
 *
 * @example
 * sameRevokeRequest(undefined, undefined) // true
 */
export function sameRevokeRequest(
  a: RevokeRequest | undefined,
  b: RevokeRequest | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b
  return a.graceMs === b.graceMs && a.reason === b.reason
}
