import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry } from '../../base/kv-snapshot.js'
import { LOCK_FLAGS } from '../../base/flags.js'
import { directChild } from '../keys/direct-child.js'
import { LOCK_KEY_NAME } from '../keys/lock-key.js'
import { decodeLockBody } from '../lock-body/decode-lock-body.js'

/**
 * Which session a typed session ID names among the sessions of a prefix: the commands print
 * short IDs (the first 8 characters), and an operator types what they print.
 *
 * - `found`: the ID itself, or the one session it is the start of;
 * - `ambiguous`: the start of more than one session (`candidates`, full IDs);
 * - `none`: neither (`known`: the sessions there are, full IDs);
 * - `short`: a start of fewer than MIN_SESSION_START characters, which names no session even
 *   when one session alone starts so: a stray character must not pick the session to evict.
 */
export type SessionMatch =
  | { readonly type: 'found'; readonly session: string }
  | { readonly type: 'short'; readonly known: readonly string[] }
  | { readonly type: 'ambiguous'; readonly candidates: readonly string[] }
  | { readonly type: 'none'; readonly known: readonly string[] }

/** The fewest characters of a session ID that name it. */
export const MIN_SESSION_START = 4

/** A session ID in full, as Consul makes them: a UUID. */
export const isFullSessionId = (text: string): boolean =>
  /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(text)

/**
 * The session `typed` names among `sessions`: itself when listed, else the one it is the start of
 * (letters in any case, at least MIN_SESSION_START of them); pure.
 *
 * @example
 * resolveSessionPrefix('49e92154', ['49e92154-0c4e-…', '4ca8e74b-…']) // { type: 'found', session: '49e92154-0c4e-…' }
 * @param typed - The ID or its start, as given.
 * @param sessions - The sessions it may name.
 * @returns The match.
 */
export function resolveSessionPrefix(typed: string, sessions: Iterable<string>): SessionMatch {
  const known = [...new Set(sessions)].sort()
  const wanted = typed.trim().toLowerCase()
  const exact = known.find((session) => session.toLowerCase() === wanted)
  if (exact !== undefined) return { type: 'found', session: exact }
  if (wanted.length < MIN_SESSION_START) return { type: 'short', known }
  const candidates =
    wanted === '' ? [] : known.filter((session) => session.toLowerCase().startsWith(wanted))
  if (candidates.length === 1) return { type: 'found', session: candidates[0] as string }
  if (candidates.length > 1) return { type: 'ambiguous', candidates }
  return { type: 'none', known }
}

/**
 * The sessions an operator can name at `prefix`, from a listing of it: `.lock`'s holders (a
 * semaphore's, live or dead), the session that holds `.lock` (a leader lock), and the sessions of
 * the contender keys `<prefix>/<session>`; in key order, without repeats. A `.lock` that cannot
 * be read adds no holders.
 *
 * @example
 * sessionsAt(snapshot.entries, 'svc/jobs') // ['4ca8e74b-…', '9f1c…']
 * @param entries - The entries of the prefix listing.
 * @param prefix - The prefix.
 * @returns The sessions.
 */
export function sessionsAt(entries: readonly KVEntry[], prefix: string): readonly string[] {
  const childOf = directChild(prefix)
  const sessions = new Set<string>()
  for (const entry of entries) {
    const name = childOf(entry.key)
    if (name === undefined) continue
    if (entry.session !== undefined && entry.session !== '') sessions.add(entry.session)
    if (name !== LOCK_KEY_NAME) {
      if (isFullSessionId(name)) sessions.add(name)
      continue
    }
    if (entry.flags === LOCK_FLAGS) continue
    const body = decodeLockBody(entry.value, entry.key)
    if (E.isRight(body)) for (const holder of body.right?.holders ?? []) sessions.add(holder)
  }
  return [...sessions]
}
