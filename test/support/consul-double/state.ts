/**
 * The in-memory state of the Consul double: the KV table with its tombstones, the session table,
 * lock-delays and the raft index, with the state transitions of Consul 1.8's state store
 * (consul-http-semantics §2.6, §2.7, §3.5, §4.3). No I/O and no timers: time is `now()`, given.
 */

/** One KV entry as the store holds it. */
export interface StoredEntry {
  readonly key: string
  readonly value: Uint8Array | null
  readonly flags: bigint
  readonly session: string | undefined
  readonly lockIndex: bigint
  readonly createIndex: bigint
  readonly modifyIndex: bigint
}

/** One session as the store holds it. */
export interface StoredSession {
  readonly id: string
  readonly name: string
  readonly node: string
  readonly behavior: 'release' | 'delete'
  /** The TTL as given ('15s'), or '' for none. */
  readonly ttl: string
  readonly ttlMs: number | undefined
  readonly lockDelayMs: number
  readonly createIndex: bigint
}

/** What a write did to the KV table: the keys it created, changed or deleted. */
export type Touched = Set<string>

/** Consul caps an applied lock-delay at 60 s, whatever the session asked for (`MaxLockDelay`). */
export const MAX_LOCK_DELAY_MS = 60_000

const sameBytes = (a: Uint8Array | null, b: Uint8Array | null): boolean =>
  a === null || b === null
    ? (a?.length ?? 0) === 0 && (b?.length ?? 0) === 0
    : a.length === b.length && a.every((byte, i) => byte === b[i])

/** An empty value is stored as null, as Consul shows it. */
const stored = (value: Uint8Array | null): Uint8Array | null =>
  value === null || value.length === 0 ? null : new Uint8Array(value)

function sameEntry(a: StoredEntry, b: StoredEntry): boolean {
  return (
    a.key === b.key &&
    a.flags === b.flags &&
    a.session === b.session &&
    a.lockIndex === b.lockIndex &&
    sameBytes(a.value, b.value)
  )
}

/**
 * Why Consul 1.8 cannot look a session id up (its session table is indexed by UUID), as the text
 * after `failed session lookup: index error: `; undefined for a well-formed id.
 */
export function malformedSessionId(id: string): string | undefined {
  if (id.length !== 36) return 'UUID must be 36 characters'
  const hyphen = [8, 13, 18, 23].find((at) => id[at] !== '-')
  if (hyphen !== undefined) return `UUID should have a hyphen at index ${hyphen}`
  const bad = [...id.replace(/-/g, '')].find((c) => !/[0-9a-fA-F]/.test(c))
  if (bad === undefined) return undefined
  const code = `U+${(bad.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
  return `Invalid UUID: encoding/hex: invalid byte: ${code} '${bad}'`
}

/** The answer of a lock or unlock: done, refused (false), or Consul's error text. */
export type LockOutcome = { readonly ok: boolean } | { readonly error: string }

/**
 * Consul's state for one datacenter with one server. Every write request takes the next raft
 * index (`nextIndex`), also one that changes nothing; the KV indexes move only with real changes.
 */
export class ConsulState {
  /** The last raft index used. */
  raftIndex: bigint
  /** The highest index that changed a KV entry (`kvs` table index). */
  kvTableIndex = 0n
  /** The highest index of a tombstone (`tombstones` table index). */
  tombstoneTableIndex = 0n
  /** The highest index that changed the session table. */
  sessionsTableIndex = 0n
  entries = new Map<string, StoredEntry>()
  /** Key (or deleted prefix) → index of its deletion. */
  tombstones = new Map<string, bigint>()
  readonly sessions = new Map<string, StoredSession>()
  /** Key → the time (ms, scheduler clock) until which `acquire`/`lock` is refused. */
  readonly lockDelays = new Map<string, number>()

  constructor(startIndex: bigint) {
    this.raftIndex = startIndex
  }

  /** The raft index of the next write request. */
  nextIndex(): bigint {
    this.raftIndex += 1n
    return this.raftIndex
  }

  /** `max(kvs, tombstones)` table index: what an empty listing answers (kvsMaxIndex). */
  kvMaxIndex(): bigint {
    return this.kvTableIndex > this.tombstoneTableIndex
      ? this.kvTableIndex
      : this.tombstoneTableIndex
  }

  /** A listing of `prefix` (`?recurse`): entries sorted by key, and the index Consul answers. */
  list(prefix: string): { readonly index: bigint; readonly entries: readonly StoredEntry[] } {
    const entries = [...this.entries.values()]
      .filter((e) => e.key.startsWith(prefix))
      .sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)))
    let index = 0n
    for (const e of entries) if (e.modifyIndex > index) index = e.modifyIndex
    if (prefix === '') index = this.kvMaxIndex()
    else {
      for (const [key, at] of this.tombstones) if (key.startsWith(prefix) && at > index) index = at
      if (index === 0n) index = this.kvMaxIndex()
    }
    return { index: index < 1n ? 1n : index, entries }
  }

  /** A single key, with the index a GET answers. */
  get(key: string): { readonly index: bigint; readonly entry: StoredEntry | undefined } {
    const entry = this.entries.get(key)
    const index = entry?.modifyIndex ?? this.kvMaxIndex()
    return { index: index < 1n ? 1n : index, entry }
  }

  private write(entry: StoredEntry, idx: bigint, touched: Touched): StoredEntry {
    const existing = this.entries.get(entry.key)
    if (existing !== undefined && sameEntry(existing, entry)) return existing
    const written = { ...entry, modifyIndex: idx }
    this.entries.set(entry.key, written)
    this.kvTableIndex = idx
    touched.add(entry.key)
    return written
  }

  /** Plain set: keeps the lock holder, resets LockIndex to the request's (0). */
  set(
    key: string,
    value: Uint8Array | null,
    flags: bigint,
    idx: bigint,
    touched: Touched,
  ): StoredEntry {
    const existing = this.entries.get(key)
    return this.write(
      {
        key,
        value: stored(value),
        flags,
        session: existing?.session,
        lockIndex: 0n,
        createIndex: existing?.createIndex ?? idx,
        modifyIndex: idx,
      },
      idx,
      touched,
    )
  }

  /** Check-and-set: 0 creates only; otherwise the key's ModifyIndex must be `cas`. */
  cas(
    key: string,
    value: Uint8Array | null,
    flags: bigint,
    cas: bigint,
    idx: bigint,
    touched: Touched,
  ): StoredEntry | undefined {
    const existing = this.entries.get(key)
    if (cas === 0n ? existing !== undefined : existing?.modifyIndex !== cas) return undefined
    return this.set(key, value, flags, idx, touched)
  }

  /** `?acquire=` / txn `lock`, after the lock-delay check (which the caller makes first). */
  lock(
    key: string,
    value: Uint8Array | null,
    flags: bigint,
    session: string,
    idx: bigint,
    touched: Touched,
  ): LockOutcome {
    if (session === '') return { error: 'missing session' }
    const malformed = malformedSessionId(session)
    if (malformed !== undefined)
      return { error: `failed session lookup: index error: ${malformed}` }
    if (!this.sessions.has(session)) return { error: `invalid session ${JSON.stringify(session)}` }
    const existing = this.entries.get(key)
    if (existing?.session !== undefined && existing.session !== session) return { ok: false }
    const lockIndex =
      existing === undefined
        ? 1n
        : existing.session === session
          ? existing.lockIndex
          : existing.lockIndex + 1n
    this.write(
      {
        key,
        value: stored(value),
        flags,
        session,
        lockIndex,
        createIndex: existing?.createIndex ?? idx,
        modifyIndex: idx,
      },
      idx,
      touched,
    )
    return { ok: true }
  }

  /** `?release=` / txn `unlock`: value and flags are replaced; LockIndex kept; no lock-delay. */
  unlock(
    key: string,
    value: Uint8Array | null,
    flags: bigint,
    session: string,
    idx: bigint,
    touched: Touched,
  ): LockOutcome {
    if (session === '') return { error: 'missing session' }
    const existing = this.entries.get(key)
    if (existing === undefined || existing.session !== session) return { ok: false }
    this.write(
      { ...existing, value: stored(value), flags, session: undefined, modifyIndex: idx },
      idx,
      touched,
    )
    return { ok: true }
  }

  /** Whether a lock-delay set by an invalidation still refuses `acquire` on the key. */
  lockDelayed(key: string, now: number): boolean {
    const until = this.lockDelays.get(key)
    return until !== undefined && until > now
  }

  /** Deletes one key, leaving a tombstone; nothing happens when it does not exist. */
  delete(key: string, idx: bigint, touched: Touched): void {
    if (!this.entries.delete(key)) return
    this.tombstones.set(key, idx)
    this.tombstoneTableIndex = idx
    this.kvTableIndex = idx
    touched.add(key)
  }

  /** Deletes the key if its ModifyIndex is `cas`; a missing key counts as deleted. */
  deleteCas(key: string, cas: bigint, idx: bigint, touched: Touched): boolean {
    const existing = this.entries.get(key)
    if (existing === undefined) return true
    if (existing.modifyIndex !== cas) return false
    this.delete(key, idx, touched)
    return true
  }

  /** `?recurse`: every key under the prefix; one tombstone for the prefix itself (not per key). */
  deleteTree(prefix: string, idx: bigint, touched: Touched): void {
    const doomed = [...this.entries.keys()].filter((key) => key.startsWith(prefix))
    if (doomed.length === 0) return
    for (const key of doomed) {
      this.entries.delete(key)
      touched.add(key)
    }
    if (prefix !== '') {
      this.tombstones.set(prefix, idx)
      this.tombstoneTableIndex = idx
    }
    this.kvTableIndex = idx
  }

  /**
   * Invalidates a session at raft index `idx` (destroy, TTL expiry): its keys are released or
   * deleted per its behavior, and each gets the session's lock-delay (at most 60 s) from `now`.
   * Answers false when the session does not exist.
   */
  invalidate(id: string, idx: bigint, now: number, touched: Touched): boolean {
    const session = this.sessions.get(id)
    if (session === undefined) return false
    this.sessions.delete(id)
    this.sessionsTableIndex = idx
    const held = [...this.entries.values()].filter((e) => e.session === id)
    for (const entry of held) {
      if (session.behavior === 'delete') this.delete(entry.key, idx, touched)
      else this.write({ ...entry, session: undefined }, idx, touched)
      if (session.lockDelayMs > 0) {
        this.lockDelays.set(entry.key, now + Math.min(session.lockDelayMs, MAX_LOCK_DELAY_MS))
      }
    }
    return true
  }

  /** The KV part, to roll a failed transaction back. */
  saveKv(): () => void {
    const entries = new Map(this.entries)
    const tombstones = new Map(this.tombstones)
    const { kvTableIndex, tombstoneTableIndex } = this
    return () => {
      this.entries = entries
      this.tombstones = tombstones
      this.kvTableIndex = kvTableIndex
      this.tombstoneTableIndex = tombstoneTableIndex
    }
  }
}
