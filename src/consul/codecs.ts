/**
 * io-ts codecs for the JSON answers of Consul's KV, session and txn endpoints, and the decoder
 * that turns a failure into a DecodeError naming the bad field's path and the request.
 *
 * uint64 members arrive as decimal strings (quoted by `parseConsulJson`) and become `bigint`.
 */
import * as E from 'fp-ts/lib/Either.js'
import { pipe } from 'fp-ts/lib/function.js'
import * as t from 'io-ts'
import { lastObjectEnd, objectEnd, skipSpace, type EntryCache } from './entry-cache.js'
import type { DecodeError } from '../base/consul-error.js'
import { bodyText } from './http-read-body.js'
import type { KVEntry } from '../base/kv-snapshot.js'
import { parseConsulJson, parseUint64 } from './uint64-json.js'

/** A uint64 carried as a decimal string (see uint64-json.ts), decoded to an exact `bigint`. */
export const Uint64 = new t.Type<bigint, string, unknown>(
  'uint64 decimal',
  (u): u is bigint => typeof u === 'bigint',
  (u, c) => {
    const value = typeof u === 'string' ? parseUint64(u) : undefined
    return value === undefined ? t.failure(u, c) : t.success(value)
  },
  (value) => value.toString(),
)

/** Whether a char code is in the standard base64 alphabet (A-Z a-z 0-9 + /). */
function isBase64Char(code: number): boolean {
  return (
    (code >= 65 && code <= 90) || // A-Z
    (code >= 97 && code <= 122) || // a-z
    (code >= 48 && code <= 57) || // 0-9
    code === 43 || // +
    code === 47 // /
  )
}

/**
 * Standard base64 with padding, checked in one loop over the text. (A regular expression such as
 * `^(?:[A-Za-z0-9+/]{4})*...$` backtracks through a stack of its own and throws "Maximum call
 * stack size exceeded" on values of a few megabytes, which a listing of large values reaches.)
 */
export function isPaddedBase64(text: string): boolean {
  const length = text.length
  if (length % 4 !== 0) return false
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0
  for (let i = 0; i < length - padding; i++) {
    if (!isBase64Char(text.charCodeAt(i))) return false
  }
  return true
}

/** Standard base64 with padding (Go's `[]byte` encoding), decoded to bytes. */
export const Base64Bytes = new t.Type<Uint8Array, string, unknown>(
  'base64',
  (u): u is Uint8Array => u instanceof Uint8Array,
  (u, c) =>
    typeof u === 'string' && isPaddedBase64(u)
      ? t.success(new Uint8Array(Buffer.from(u, 'base64')))
      : t.failure(u, c),
  (bytes) => Buffer.from(bytes).toString('base64'),
)

/** One KV entry (`DirEntry`); `Session` is only present while the key is locked. */
export const KVEntryJson = t.type({
  Key: t.string,
  Value: t.union([Base64Bytes, t.null]),
  Flags: Uint64,
  Session: t.union([t.string, t.undefined]),
  LockIndex: Uint64,
  CreateIndex: Uint64,
  ModifyIndex: Uint64,
})
export type KVEntryJson = t.TypeOf<typeof KVEntryJson>

/** `GET /v1/kv/<key>` and `?recurse` answers: an array of entries. */
export const KVEntriesJson = t.array(KVEntryJson)

/** `PUT /v1/session/create`: `{"ID": "<uuid>"}`. */
export const SessionCreatedJson = t.type({ ID: t.string })

/** One session as info and renew return it; `LockDelay` is int64 nanoseconds. */
export const SessionJson = t.type({
  ID: t.string,
  Name: t.string,
  Node: t.string,
  LockDelay: t.number,
  Behavior: t.union([t.literal('release'), t.literal('delete')]),
  TTL: t.string,
  CreateIndex: Uint64,
})
export type SessionJson = t.TypeOf<typeof SessionJson>

/** `GET /v1/session/info/<id>` and `PUT /v1/session/renew/<id>`: an array (empty when gone). */
export const SessionsJson = t.array(SessionJson)

/** `PUT /v1/txn` (200 or 409): KV results and/or the errors of the failed operations. */
export const TxnAnswerJson = t.type({
  Results: t.union([t.array(t.type({ KV: KVEntryJson })), t.null, t.undefined]),
  Errors: t.union([t.array(t.type({ OpIndex: t.number, What: t.string })), t.null, t.undefined]),
})
export type TxnAnswerJson = t.TypeOf<typeof TxnAnswerJson>

/**
 * `KVEntryJson.decode` of an entry it accepts, without io-ts's bookkeeping (a context and an
 * errors array per field, a copy per level): a busy prefix decodes thousands of entries a second.
 * Undefined for anything else, which the codec then decodes to say what is wrong.
 */
export function kvEntryJsonOf(u: unknown): KVEntryJson | undefined {
  if (typeof u !== 'object' || u === null) return undefined
  const { Key, Value, Flags, Session, LockIndex, CreateIndex, ModifyIndex } = u as Record<
    string,
    unknown
  >
  if (typeof Key !== 'string' || (Session !== undefined && typeof Session !== 'string')) {
    return undefined
  }
  const value =
    Value === null
      ? null
      : typeof Value === 'string' && isPaddedBase64(Value)
        ? new Uint8Array(Buffer.from(Value, 'base64'))
        : undefined
  const flags = uint64Of(Flags)
  const lockIndex = uint64Of(LockIndex)
  const createIndex = uint64Of(CreateIndex)
  const modifyIndex = uint64Of(ModifyIndex)
  if (
    value === undefined ||
    flags === undefined ||
    lockIndex === undefined ||
    createIndex === undefined ||
    modifyIndex === undefined
  ) {
    return undefined
  }
  return {
    Key,
    Value: value,
    Flags: flags,
    Session,
    LockIndex: lockIndex,
    CreateIndex: createIndex,
    ModifyIndex: modifyIndex,
  }
}

const uint64Of = (u: unknown): bigint | undefined =>
  typeof u === 'string' ? parseUint64(u) : undefined

/** `KVEntriesJson.decode` of a listing it accepts (see `kvEntryJsonOf`), else undefined. */
export function kvEntriesJsonOf(u: unknown): KVEntryJson[] | undefined {
  if (!Array.isArray(u)) return undefined
  const entries: KVEntryJson[] = []
  for (let i = 0; i < u.length; i++) {
    const entry = kvEntryJsonOf(u[i])
    if (entry === undefined) return undefined
    entries.push(entry)
  }
  return entries
}

/** `TxnAnswerJson.decode` of an answer it accepts (see `kvEntryJsonOf`), else undefined. */
export function txnAnswerJsonOf(u: unknown): TxnAnswerJson | undefined {
  if (typeof u !== 'object' || u === null) return undefined
  const { Results, Errors } = u as Record<string, unknown>
  let results: { KV: KVEntryJson }[] | null | undefined
  if (Array.isArray(Results)) {
    results = []
    for (let i = 0; i < Results.length; i++) {
      const result: unknown = Results[i]
      const kv =
        typeof result === 'object' && result !== null
          ? kvEntryJsonOf((result as Record<string, unknown>)['KV'])
          : undefined
      if (kv === undefined) return undefined
      results.push({ KV: kv })
    }
  } else if (Results === null || Results === undefined) {
    results = Results
  } else {
    return undefined
  }
  if (Errors === null || Errors === undefined) return { Results: results, Errors }
  if (!Array.isArray(Errors)) return undefined
  const errors: { OpIndex: number; What: string }[] = []
  for (let i = 0; i < Errors.length; i++) {
    const error: unknown = Errors[i]
    if (typeof error !== 'object' || error === null) return undefined
    const { OpIndex, What } = error as Record<string, unknown>
    if (typeof OpIndex !== 'number' || typeof What !== 'string') return undefined
    errors.push({ OpIndex, What })
  }
  return { Results: results, Errors: errors }
}

/** The library's KVEntry from the decoded JSON. */
export function toKVEntry(json: KVEntryJson): KVEntry {
  return {
    key: json.Key,
    value: json.Value,
    flags: json.Flags,
    session: json.Session,
    lockIndex: json.LockIndex,
    createIndex: json.CreateIndex,
    modifyIndex: json.ModifyIndex,
  }
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (typeof value === 'bigint') return value.toString()
  const text = JSON.stringify(value) ?? typeof value
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/** `[0].Flags: expected uint64 decimal, got "abc"` for one io-ts validation error. */
function describeError(error: t.ValidationError): string {
  let path = ''
  let expected = error.context[0]?.type.name ?? 'a value'
  error.context.forEach((entry, i) => {
    const parent = error.context[i - 1]?.type
    if (parent === undefined) return
    // A union member is not a field: report the union ("base64 | null") at the field's path.
    if (parent instanceof t.UnionType) return
    path += parent instanceof t.ArrayType ? `[${entry.key}]` : `.${entry.key}`
    expected = entry.type.name
  })
  const where = path === '' ? '(root)' : path.replace(/^\./, '')
  return `${where}: expected ${expected}, got ${describeValue(error.value)}`
}

/** A DecodeError for `request` (e.g. `GET /v1/kv/p?recurse`) with one line per problem. */
export function decodeError(request: string, problems: readonly string[]): DecodeError {
  return {
    _tag: 'DecodeError',
    message: `${request}: ${problems.join('; ')}`,
    request: request.replace(/\?.*$/, ''),
    errors: problems,
  }
}

/**
 * Parses Consul's JSON (uint64 exact) and decodes it with `codec`, errors naming the path. With
 * `fast`, a decoder that gives what `codec` would for the answers it accepts (and undefined for
 * any other), the codec runs only when `fast` declines: to say what is wrong.
 */
export function decodeJson<A>(
  codec: t.Decoder<unknown, A>,
  body: string,
  request: string,
  fast?: (parsed: unknown) => A | undefined,
): E.Either<DecodeError, A> {
  let parsed: unknown
  try {
    parsed = parseConsulJson(body)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return E.left(decodeError(request, [`invalid JSON (${reason}): ${describeValue(body)}`]))
  }
  const quick = fast?.(parsed)
  if (quick !== undefined) return E.right(quick)
  return pipe(
    codec.decode(parsed),
    E.mapLeft((errors) => decodeError(request, [...new Set(errors.map(describeError))])),
  )
}

/**
 * A KV listing (`GET /v1/kv/<prefix>?recurse`) as entries, the same as `decodeJson(KVEntriesJson)`
 * then `toKVEntry`; with `reuse`, each entry whose JSON text the last listing decoded already is
 * taken from there (see EntryCache), and only the new and changed entries are parsed and decoded.
 * A body of another layout than Consul's (an array of flat objects) is decoded whole.
 *
 * @param body - The answer's body: its text, or its bytes as they arrived (read without making
 *   one string of them when `reuse` is given).
 * @param request - The request, for errors.
 * @param index - The answer's index (X-Consul-Index): below the last listing's, `reuse` is emptied.
 * @param reuse - The entries decoded by the last listing of the same watch.
 * @returns The entries, or a DecodeError naming the bad fields (nothing is kept then).
 */
export function decodeListing(
  body: string | readonly Uint8Array[],
  request: string,
  index: bigint,
  reuse?: EntryCache,
): E.Either<DecodeError, readonly KVEntry[]> {
  if (reuse === undefined) return decodeWhole(textOf(body), request)
  const listing = reuse.listing(index, typeof body === 'string' ? [Buffer.from(body)] : body)
  const { bytes } = listing
  let at = skipSpace(bytes, 0)
  if (bytes[at] !== OPEN_BRACKET) return decodeWhole(textOf(body), request)
  at = skipSpace(bytes, at + 1)
  if (bytes[at] === CLOSE_BRACKET) {
    return skipSpace(bytes, at + 1) === bytes.length
      ? E.right(listing.end())
      : decodeWhole(textOf(body), request)
  }
  for (;;) {
    if (bytes[at] !== OPEN_BRACE) return decodeWhole(textOf(body), request)
    let end = listing.reuse(at)
    if (end === undefined) {
      end = objectEnd(bytes, at) ?? lastObjectEnd(bytes)
      if (end === undefined || end <= at) return decodeWhole(textOf(body), request)
      let json: unknown
      try {
        json = parseConsulJson(bytes.toString('utf8', at, end))
      } catch {
        return decodeWhole(textOf(body), request)
      }
      const decoded = kvEntryJsonOf(json)
      // The whole listing again, for errors that name the entry's place in it.
      if (decoded === undefined) return decodeWhole(textOf(body), request)
      listing.keep(at, end, toKVEntry(decoded))
    }
    at = skipSpace(bytes, end)
    if (bytes[at] === COMMA) {
      at = skipSpace(bytes, at + 1)
      continue
    }
    if (bytes[at] === CLOSE_BRACKET && skipSpace(bytes, at + 1) === bytes.length) {
      return E.right(listing.end())
    }
    return decodeWhole(textOf(body), request)
  }
}

const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const COMMA = 0x2c

const textOf = (body: string | readonly Uint8Array[]): string =>
  typeof body === 'string' ? body : bodyText(body)

function decodeWhole(body: string, request: string): E.Either<DecodeError, readonly KVEntry[]> {
  return pipe(decodeJson(KVEntriesJson, body, request, kvEntriesJsonOf), E.map(toKVEntries))
}

const toKVEntries = (entries: readonly KVEntryJson[]): readonly KVEntry[] => entries.map(toKVEntry)
