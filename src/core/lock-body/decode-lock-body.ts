import * as E from 'fp-ts/lib/Either.js'
import { pipe } from 'fp-ts/lib/function.js'
import { describeValidationErrors } from './describe-validation-errors.js'
import type { LockBodyShape, PrefixProblem } from '../events.js'
import {
  CapitalisedLimit,
  HolderFlag,
  HolderList,
  JsonObject,
  LowercaseLimit,
  PositiveInt,
} from './lock-body-codec.js'
import type { LockBodyRecord } from './lock-body-record.js'

/** A `.lock` whose body cannot be read: the library never writes over it. */
export type CorruptLock = Extract<PrefixProblem, { readonly type: 'CorruptLock' }>

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Decodes the body of `<prefix>/.lock` in any of the shapes found in the wild, remembering which:
 * `{"Limit":3,"Holders":{"<s>":true}}` ('go-map'), `{"Limit":2,"Holders":["<s>"]}`
 * ('guide-list'), `{"limit":3,"holders":["<s>"]}` ('java-list'). Extra fields and any key order
 * are accepted; `Holders` null or absent is empty; a holder listed twice counts once. In a map,
 * each key is a holder whether its value is true, false or null; any other value makes the body
 * corrupt, as it is for Go's client. A lowercase body with a map of holders is read as 'go-map'
 * (Go reads it too, its JSON field matching ignores case).
 *
 * @example
 * decodeLockBody(new TextEncoder().encode('{"Limit":2,"Holders":["a"]}'), 'svc/.lock')
 * // right({ limit: 2, holders: ['a'], shape: 'guide-list' })
 * @param value - The raw value of the key (`null` or empty: no record yet).
 * @param key - The `.lock` key, named in the problem.
 * @returns The record (`undefined` for an empty value), or a CorruptLock saying what is wrong.
 */
export function decodeLockBody(
  value: Uint8Array | null,
  key: string,
): E.Either<CorruptLock, LockBodyRecord | undefined> {
  if (value === null || value.length === 0) return E.right(undefined)
  // Each step in turn, without fp-ts's `pipe`: a holder reads `.lock` on every re-fence.
  const json = parseJson(value)
  const body = E.isLeft(json) ? json : asObject(json.right)
  const record = E.isLeft(body) ? body : recordOf(body.right)
  return E.isLeft(record) ? E.left(corruptLockBody(key, record.left)) : record
}

function parseJson(value: Uint8Array): E.Either<string, unknown> {
  let text: string
  try {
    text = utf8.decode(value)
  } catch {
    return E.left('body is not UTF-8')
  }
  try {
    return E.right(JSON.parse(text))
  } catch (error) {
    return E.left(`body is not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
}

function asObject(json: unknown): E.Either<string, Record<string, unknown>> {
  return JsonObject.is(json)
    ? E.right(json)
    : E.left(`the body is ${JSON.stringify(json).slice(0, 60)}, but it must be a JSON object`)
}

function recordOf(body: Record<string, unknown>): E.Either<string, LockBodyRecord> {
  const capitalised = Object.hasOwn(body, 'Limit') || Object.hasOwn(body, 'Holders')
  const lowercase = Object.hasOwn(body, 'limit') || Object.hasOwn(body, 'holders')
  if (capitalised && lowercase) {
    return E.left('body mixes "Limit"/"Holders" with "limit"/"holders": which one counts?')
  }
  // The common body (a positive whole Limit) read without the codec, which runs to say what is
  // wrong with any other.
  const given = lowercase ? body['limit'] : body['Limit']
  const limit = PositiveInt.is(given)
    ? E.right(given)
    : lowercase
      ? pipe(
          LowercaseLimit.decode(body),
          E.map((b) => b.limit),
        )
      : pipe(
          CapitalisedLimit.decode(body),
          E.map((b) => b.Limit),
        )
  if (E.isLeft(limit)) return E.left(describeValidationErrors(limit.left))
  const holdersField = lowercase ? 'holders' : 'Holders'
  const listed = holdersOf(body[holdersField], holdersField, lowercase)
  if (E.isLeft(listed)) return listed
  const { holders, shape } = listed.right
  return E.right({ limit: limit.right, holders, shape })
}

function holdersOf(
  holders: unknown,
  field: string,
  lowercase: boolean,
): E.Either<string, { holders: readonly string[]; shape: LockBodyShape }> {
  const listShape: LockBodyShape = lowercase ? 'java-list' : 'guide-list'
  if (holders === null || holders === undefined) {
    return E.right({ holders: [], shape: lowercase ? 'java-list' : 'go-map' })
  }
  if (Array.isArray(holders)) {
    return pipe(
      HolderList.decode(holders),
      E.mapLeft((errors) => describeValidationErrors(errors, field)),
      E.map((list) => ({ holders: [...new Set(list)], shape: listShape })),
    )
  }
  if (JsonObject.is(holders)) {
    // A map used as a set (Go's shape): what counts is the keys, every value a flag. Checked in
    // place rather than by a record codec: this runs on every `.lock` read.
    const keys = Object.keys(holders)
    if (!keys.every((key) => HolderFlag.is(holders[key]))) {
      return E.left(nonBooleanHolders(holders, field))
    }
    return E.right({ holders: keys, shape: 'go-map' })
  }
  return E.left(
    `${field} is ${JSON.stringify(holders).slice(0, 60)}, but it must be a list of session ids or a map of session ids to true`,
  )
}

// Why map values are judged, and why false and null pass: what `consul lock -n 2` (Consul 1.8.7)
// was seen doing with `{"Limit":2,"Holders":{"<id>":<value>}}` under the semaphore's flags.
// - A number, a string (even "true"), an object or an array: it exits 1 with `lock decoding failed:
//   json: cannot unmarshal number into Go struct field semaphoreLock.Holders of type bool` (the
//   word after "unmarshal" names the JSON type), runs nothing and leaves `.lock` as it was. So do
//   we: CorruptLock, nothing written.
// - false and null: read without error, and the key counts as a holder all the same. A key whose
//   session has no live contender key is pruned; a live one keeps its slot (two live holders with
//   false or null values keep `consul lock -n 2` waiting), and Go writes it back as false.
// We write every kept holder back as true: Go reads both alike.
function nonBooleanHolders(holders: Record<string, unknown>, field: string): string {
  const bad = Object.entries(holders).filter(([, value]) => !HolderFlag.is(value))
  const [first] = bad
  if (first === undefined) return `${field}: expected a map of session ids to true or false`
  const [holder, value] = first
  const others = bad.length > 1 ? ` (and ${bad.length - 1} more holders like it)` : ''
  return (
    `${field}: holder ${JSON.stringify(holder)} has ${aJsonType(value)} value ` +
    `(${preview(value)})${others}, but Go's client reads ${field} as map[string]bool and refuses ` +
    'the whole body ("lock decoding failed"); each value must be true or false'
  )
}

/** The JSON type of a parsed value other than a boolean or null, with its article. */
function aJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

function preview(value: unknown): string {
  const text = JSON.stringify(value)
  return text.length > 40 ? `${text.slice(0, 37)}...` : text
}

/**
 * Builds the CorruptLock problem for a key.
 *
 * @example
 * corruptLockBody('svc/lock/.lock', 'not JSON')
 * @param key - The `.lock` key.
 * @param reason - What is wrong with its body.
 * @returns The problem.
 */
function corruptLockBody(key: string, reason: string): CorruptLock {
  return { type: 'CorruptLock', key, reason }
}
