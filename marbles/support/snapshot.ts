/** Test-only builders of KV entries and snapshots for the core's specs. */
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'

const utf8 = new TextEncoder()

/** Bytes of a string, as Consul's decoded values are. */
export const bytes = (text: string): Uint8Array => utf8.encode(text)

/** A contender key `<prefix>/<session>` locked by its own session. */
export function contenderEntry(
  prefix: string,
  session: string,
  createIndex: bigint,
  overrides: Partial<KVEntry> = {},
): KVEntry {
  return {
    key: `${prefix}/${session}`,
    value: null,
    flags: SEMAPHORE_FLAGS,
    session,
    lockIndex: 1n,
    createIndex,
    modifyIndex: createIndex,
    ...overrides,
  }
}

/** The `<prefix>/.lock` entry with a body (a string, or null for an empty value). */
export function lockEntry(
  prefix: string,
  body: string | null,
  modifyIndex: bigint,
  overrides: Partial<KVEntry> = {},
): KVEntry {
  return {
    key: `${prefix}/.lock`,
    value: body === null ? null : bytes(body),
    flags: SEMAPHORE_FLAGS,
    lockIndex: 0n,
    createIndex: 1n,
    modifyIndex,
    ...overrides,
  }
}

/** A snapshot at an index (default: the largest ModifyIndex of the entries), sorted by key. */
export function snapshotOf(entries: readonly KVEntry[], index?: bigint): KVSnapshot {
  const sorted = [...entries].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  const top = sorted.reduce((max, e) => (e.modifyIndex > max ? e.modifyIndex : max), 1n)
  return { index: index ?? top, entries: sorted }
}

/** The text of a body, for readable assertions. */
export const text = (body: Uint8Array): string => new TextDecoder().decode(body)
