/**
 * KV calls: get one key, list a prefix (optionally as a blocking query), put, delete.
 * A 404 on a read is data (no such key / empty prefix), and Consul's `true`/`false` answers to
 * writes are booleans, not errors (consul-http-semantics §2, §9 traps 5-6).
 */
import * as E from 'fp-ts/lib/Either.js'
import { pipe } from 'fp-ts/lib/function.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type {
  ConsulClient,
  DeleteOptions,
  ListOptions,
  PutOptions,
  ReadOptions,
} from './client-api.js'
import {
  decodeError,
  decodeJson,
  decodeListing,
  KVEntriesJson,
  kvEntriesJsonOf,
  toKVEntry,
} from './codecs.js'
import { rejectedBeforeSending, type ConsulError } from '../base/consul-error.js'
import { statusError, unsent, type HttpAnswer, type Transport } from './http.js'
import { kvPath } from './keys.js'
import { notConsul } from './not-consul.js'
import type { KVEntry, KVSnapshot } from '../base/kv-snapshot.js'
import { parseUint64, UINT64_MAX } from './uint64-json.js'

/** The `X-Consul-Index` header as an exact bigint (every agent sends it with a KV read). */
export function indexOf(answer: HttpAnswer): E.Either<ConsulError, bigint> {
  const header = answer.headers['x-consul-index']
  if (header === undefined) {
    return E.left(notConsul(answer, 'its answer to a KV read has no X-Consul-Index header'))
  }
  const value = typeof header === 'string' ? parseUint64(header) : undefined
  return value === undefined
    ? E.left(
        decodeError(answer.label, [
          `X-Consul-Index header: expected uint64 decimal, got ${JSON.stringify(header) ?? 'nothing'}`,
        ]),
      )
    : E.right(value)
}

/** `{ filteredByAcls: true }` when Consul 1.11+ says its ACLs left keys out of a listing. */
function filtered(answer: HttpAnswer): { filteredByAcls?: true } {
  const header = answer.headers['x-consul-results-filtered-by-acls']
  return header === 'true' ? { filteredByAcls: true } : {}
}

/** `true`/`false` bodies (dev agents add a newline). Anything else is a DecodeError. */
export function booleanAnswer(answer: HttpAnswer): E.Either<ConsulError, boolean> {
  if (answer.status !== 200) return E.left(statusError(answer))
  const text = answer.body.trim()
  if (text === 'true') return E.right(true)
  if (text === 'false') return E.right(false)
  return E.left(
    decodeError(answer.label, [
      `(root): expected true or false, got ${JSON.stringify(text.slice(0, 80))}`,
    ]),
  )
}

function uint64Problem(name: string, value: bigint | undefined): string | undefined {
  if (value === undefined || (value >= 0n && value <= UINT64_MAX)) return undefined
  return `${name} ${value} is not a uint64 (0..${UINT64_MAX})`
}

function kvBody(value: Uint8Array | string | null): Uint8Array {
  if (value === null) return new Uint8Array(0)
  return typeof value === 'string' ? new Uint8Array(Buffer.from(value, 'utf8')) : value
}

/** Extra time a blocking query may take beyond `wait`: Consul adds up to wait/16 of jitter. */
export function blockingTimeoutMs(waitMs: number, requestTimeoutMs: number): number {
  return waitMs + Math.ceil(waitMs / 16) + requestTimeoutMs
}

function get(transport: Transport) {
  return (key: string, options: ReadOptions = {}): TE.TaskEither<ConsulError, KVEntry | null> =>
    pipe(
      kvPath('GET', key),
      E.match(unsent, (path) =>
        transport.call(
          {
            method: 'GET',
            path,
            signal: options.signal,
            consistency: options.consistency ?? transport.config.consistency,
          },
          (answer) => {
            if (answer.status !== 200 && answer.status !== 404) return E.left(statusError(answer))
            // Only an agent's 404 is data: another server's says nothing about the key.
            const index = indexOf(answer)
            if (E.isLeft(index)) return index
            if (answer.status === 404) return E.right(null)
            return pipe(
              decodeJson(KVEntriesJson, answer.body, answer.label, kvEntriesJsonOf),
              E.map((entries) => (entries[0] === undefined ? null : toKVEntry(entries[0]))),
            )
          },
        ),
      ),
    )
}

function list(transport: Transport) {
  return (prefix: string, options: ListOptions = {}): TE.TaskEither<ConsulError, KVSnapshot> => {
    const { index, waitMs } = options
    if (index !== undefined && (index < 1n || index > UINT64_MAX)) {
      // index=0 never blocks (§4.1); a caller sending it has lost track of the index.
      return unsent(
        rejectedBeforeSending('GET /v1/kv/', `blocking index ${index} is not in 1..2^64-1`),
      )
    }
    if (waitMs !== undefined && !(Number.isFinite(waitMs) && waitMs > 0)) {
      return unsent(
        rejectedBeforeSending('GET /v1/kv/', `wait ${waitMs} ms is not a positive duration`),
      )
    }
    const blocking = index !== undefined
    const wait = waitMs ?? 300_000 // the server's default_query_time when no wait is sent
    return pipe(
      kvPath('GET', prefix, true),
      E.match(unsent, (path) =>
        transport.call(
          {
            method: 'GET',
            path,
            query: {
              recurse: true,
              index: index?.toString(),
              wait: blocking && waitMs !== undefined ? `${Math.ceil(waitMs)}ms` : undefined,
            },
            signal: options.signal,
            consistency: options.consistency ?? transport.config.consistency,
            ...(blocking
              ? { timeoutMs: blockingTimeoutMs(wait, transport.config.requestTimeoutMs) }
              : {}),
          },
          (answer) => {
            if (answer.status !== 200 && answer.status !== 404) return E.left(statusError(answer))
            return pipe(
              indexOf(answer),
              E.flatMap((snapshotIndex) =>
                answer.status === 404
                  ? E.right<ConsulError, KVSnapshot>({
                      index: snapshotIndex,
                      entries: [],
                      ...filtered(answer),
                    })
                  : pipe(
                      decodeListing(
                        answer.bytes ?? answer.body,
                        answer.label,
                        snapshotIndex,
                        options.reuse,
                      ),
                      E.map((entries): KVSnapshot => ({
                        index: snapshotIndex,
                        entries,
                        ...filtered(answer),
                      })),
                    ),
              ),
            )
          },
        ),
      ),
    )
  }
}

function put(transport: Transport) {
  return (
    key: string,
    value: Uint8Array | string | null,
    options: PutOptions = {},
  ): TE.TaskEither<ConsulError, boolean> => {
    const modes = (['cas', 'acquire', 'release'] as const).filter((m) => options[m] !== undefined)
    const problem =
      modes.length > 1
        ? `use at most one of cas, acquire, release (got ${modes.join(', ')})`
        : (uint64Problem('flags', options.flags) ?? uint64Problem('cas', options.cas))
    if (problem !== undefined) return unsent(rejectedBeforeSending('PUT /v1/kv/', problem))
    return pipe(
      kvPath('PUT', key),
      E.match(unsent, (path) =>
        transport.call(
          {
            method: 'PUT',
            path,
            query: {
              // The exact decimal of the bigint: a rounded number would mismatch Go clients.
              flags: options.flags?.toString(),
              cas: options.cas?.toString(),
              acquire: options.acquire,
              release: options.release,
            },
            body: kvBody(value),
            signal: options.signal,
          },
          booleanAnswer,
        ),
      ),
    )
  }
}

function remove(transport: Transport) {
  return (key: string, options: DeleteOptions = {}): TE.TaskEither<ConsulError, boolean> => {
    const problem =
      options.recurse === true && options.cas !== undefined
        ? 'use cas or recurse, not both'
        : uint64Problem('cas', options.cas)
    if (problem !== undefined) return unsent(rejectedBeforeSending('DELETE /v1/kv/', problem))
    return pipe(
      // An empty key with recurse would wipe the whole store: refused like any empty key.
      kvPath('DELETE', key),
      E.match(unsent, (path) =>
        transport.call(
          {
            method: 'DELETE',
            path,
            query: {
              cas: options.cas?.toString(),
              recurse: options.recurse === true ? true : undefined,
            },
            signal: options.signal,
          },
          booleanAnswer,
        ),
      ),
    )
  }
}

/** The KV part of a ConsulClient, without txn (see txn.ts). */
export function createKv(transport: Transport): Omit<ConsulClient['kv'], 'txn'> {
  return {
    get: get(transport),
    list: list(transport),
    put: put(transport),
    delete: remove(transport),
  }
}
