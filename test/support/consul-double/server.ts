/**
 * The double's agent: answers the HTTP requests of the real client layer (`src/consul/kv.ts`,
 * `txn.ts`, `sessions.ts`) from the in-memory state, as a Consul 1.8 dev agent answers them:
 * same statuses, bodies and `X-Consul-Index` headers. Blocking lists wait on the scheduler.
 */
import { randomUUID } from 'node:crypto'
import * as E from 'fp-ts/lib/Either.js'
import type { SchedulerLike, Subscription } from 'rxjs'
import { durationMs, parseGoDuration } from '../../../src/consul/durations.js'
import type { ConsulError } from '../../../src/base/consul-error.js'
import type { HttpAnswer, HttpRequest } from '../../../src/consul/http.js'
import { parseConsulJson, parseUint64 } from '../../../src/consul/uint64-json.js'
import {
  ConsulState,
  malformedSessionId,
  type StoredEntry,
  type StoredSession,
  type Touched,
} from './state.js'
import { applyTxn, type TxnOpBody } from './txn.js'

/** The agent's knobs. */
export interface ServerOptions {
  readonly scheduler: SchedulerLike
  /** The node name of the agent (sessions are tied to it). */
  readonly node: string
  /** First raft index (a real cluster starts above 1). */
  readonly startIndex: bigint
  /** A TTL session expires this many TTLs after its last renewal; Consul's is 2. */
  readonly ttlMultiplier: number
}

/** Consul's bounds of `wait` (`max_query_time`) and its default (`default_query_time`). */
const MAX_WAIT_MS = 600_000
const DEFAULT_WAIT_MS = 300_000
const SESSION_TTL_MIN_MS = 10_000
const SESSION_TTL_MAX_MS = 86_400_000

interface BlockedList {
  readonly prefix: string
  readonly min: bigint
  last: ReturnType<ConsulState['list']>
  readonly answer: (listing: ReturnType<ConsulState['list']>) => void
  /** Ends the listing with a failure instead (the agent went away). */
  readonly fail: (error: ConsulError) => void
}

function entryJson(entry: StoredEntry, withValue = true): string {
  const value =
    withValue && entry.value !== null
      ? JSON.stringify(Buffer.from(entry.value).toString('base64'))
      : 'null'
  const session = entry.session === undefined ? '' : `,"Session":${JSON.stringify(entry.session)}`
  return (
    `{"LockIndex":${entry.lockIndex},"Key":${JSON.stringify(entry.key)},"Flags":${entry.flags},` +
    `"Value":${value}${session},"CreateIndex":${entry.createIndex},"ModifyIndex":${entry.modifyIndex}}`
  )
}

function sessionJson(session: StoredSession): string {
  return (
    `{"ID":${JSON.stringify(session.id)},"Name":${JSON.stringify(session.name)},` +
    `"Node":${JSON.stringify(session.node)},"LockDelay":${session.lockDelayMs * 1e6},` +
    `"Behavior":"${session.behavior}","TTL":${JSON.stringify(session.ttl)},` +
    `"NodeChecks":["serfHealth"],"ServiceChecks":null,` +
    `"CreateIndex":${session.createIndex},"ModifyIndex":${session.createIndex}}`
  )
}

const text = (body: HttpRequest['body']): string =>
  body === undefined ? '' : typeof body === 'string' ? body : Buffer.from(body).toString('utf8')

const bytes = (body: HttpRequest['body']): Uint8Array | null =>
  body === undefined
    ? null
    : typeof body === 'string'
      ? new Uint8Array(Buffer.from(body))
      : new Uint8Array(body)

/** The agent of a double: one state, one scheduler, any number of clients. */
export class DoubleServer {
  state: ConsulState
  private readonly blocked = new Set<BlockedList>()
  private readonly ttlTimers = new Map<string, Subscription>()

  constructor(private readonly options: ServerOptions) {
    this.state = new ConsulState(options.startIndex)
  }

  private now(): number {
    return this.options.scheduler.now()
  }

  /** Wakes the blocked listings that cover a changed key; they answer if their index moved. */
  private wake(touched: Touched): void {
    if (touched.size === 0) return
    for (const waiter of [...this.blocked]) {
      if (![...touched].some((key) => key.startsWith(waiter.prefix))) continue
      waiter.last = this.state.list(waiter.prefix)
      if (waiter.last.index > waiter.min) waiter.answer(waiter.last)
    }
  }

  /** Runs a write on the state and wakes the listings it concerns. */
  private writing<A>(write: (touched: Touched) => A): A {
    const touched: Touched = new Set()
    const result = write(touched)
    this.wake(touched)
    return result
  }

  /**
   * Answers one request. A blocking list answers when its prefix's index passes `index`, or at
   * the end of its wait; `signal` (the caller's, or the client's close) ends it with its reason,
   * the Aborted error the client answers.
   */
  handle(
    request: HttpRequest,
    label: string,
    signal: AbortSignal,
  ): Promise<E.Either<ConsulError, HttpAnswer>> {
    const answer = (
      status: number,
      body: string,
      headers: Record<string, string> = {},
    ): Promise<E.Either<ConsulError, HttpAnswer>> =>
      Promise.resolve(E.right({ status, body, headers, label, origin: 'consul-double' }))
    const q = request.query ?? {}
    const param = (name: string): string | undefined => {
      const v = q[name]
      return v === undefined ? undefined : v === true ? '' : v
    }
    const path = request.path
    const uint64 = (name: string): bigint | undefined | 'bad' => {
      const v = param(name)
      return v === undefined ? undefined : (parseUint64(v) ?? 'bad')
    }

    if (path.startsWith('/v1/kv/')) {
      const key = path.slice('/v1/kv/'.length).split('/').map(decodeURIComponent).join('/')
      const kvAnswer = (listing: { index: bigint; entries: readonly StoredEntry[] }) =>
        answer(
          listing.entries.length === 0 ? 404 : 200,
          listing.entries.length === 0
            ? ''
            : `[${listing.entries.map((e) => entryJson(e)).join(',')}]`,
          { 'x-consul-index': listing.index.toString() },
        )
      if (request.method === 'GET' && q['recurse'] === undefined) {
        if (key === '') return answer(400, 'Missing key name')
        const { index, entry } = this.state.get(key)
        return kvAnswer({ index, entries: entry === undefined ? [] : [entry] })
      }
      if (request.method === 'GET') {
        const index = uint64('index')
        if (index === 'bad') return answer(400, 'Invalid index')
        const listing = this.state.list(key)
        if (index === undefined || index === 0n || listing.index > index) return kvAnswer(listing)
        const wait = param('wait')
        const waitMs = wait === undefined ? DEFAULT_WAIT_MS : parseGoDuration(wait)
        if (waitMs === undefined) return answer(400, 'Invalid wait time')
        return this.block(key, index, Math.min(waitMs, MAX_WAIT_MS), signal).then((listing) =>
          E.isLeft(listing) ? listing : kvAnswer(listing.right),
        )
      }
      if (request.method === 'PUT') return this.put(key, request, answer, param, uint64)
      return this.remove(key, answer, param, uint64)
    }
    if (path === '/v1/txn') return this.txn(text(request.body), answer)
    if (path === '/v1/session/create') return this.createSession(text(request.body), answer)
    const action = /^\/v1\/session\/(renew|destroy|info)\/(.+)$/.exec(path)
    if (action !== null) {
      const [, verb = '', encoded = ''] = action
      const id = decodeURIComponent(encoded)
      const malformed = malformedSessionId(id)
      if (malformed !== undefined) {
        return answer(500, `failed session lookup: index error: ${malformed}`)
      }
      const session = this.state.sessions.get(id)
      if (verb === 'info') return answer(200, session ? `[${sessionJson(session)}]` : '[]')
      if (verb === 'renew') {
        if (session === undefined) return answer(404, `Session id '${id}' not found`)
        this.armTtl(session)
        return answer(200, `[${sessionJson(session)}]`)
      }
      this.destroySession(id)
      return answer(200, 'true')
    }
    return answer(404, '')
  }

  private block(
    prefix: string,
    min: bigint,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<E.Either<ConsulError, ReturnType<ConsulState['list']>>> {
    return new Promise((resolve) => {
      const onAbort = (): void => {
        done()
        // The transport aborts with the Aborted error the client would answer.
        resolve(E.left(signal.reason as ConsulError))
      }
      const done = (): void => {
        this.blocked.delete(waiter)
        timer.unsubscribe()
        signal.removeEventListener('abort', onAbort)
      }
      const waiter: BlockedList = {
        prefix,
        min,
        last: this.state.list(prefix),
        answer: (listing) => {
          done()
          resolve(E.right(listing))
        },
        fail: (error) => {
          done()
          resolve(E.left(error))
        },
      }
      this.blocked.add(waiter)
      // On timeout Consul answers its last evaluation, not a fresh one.
      const timer: Subscription = this.options.scheduler.schedule(
        () => waiter.answer(waiter.last),
        waitMs,
      )
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  private put(
    key: string,
    request: HttpRequest,
    answer: (status: number, body: string) => Promise<E.Either<ConsulError, HttpAnswer>>,
    param: (name: string) => string | undefined,
    uint64: (name: string) => bigint | undefined | 'bad',
  ): Promise<E.Either<ConsulError, HttpAnswer>> {
    if (key === '') return answer(400, 'Missing key name')
    const flags = uint64('flags')
    const cas = uint64('cas')
    if (flags === 'bad' || cas === 'bad') return answer(500, 'strconv.ParseUint: invalid syntax')
    const acquire = param('acquire')
    const release = param('release')
    const value = bytes(request.body)
    const boolean = (ok: boolean) => answer(200, ok ? 'true' : 'false')
    if (acquire !== undefined) {
      // Lock-delay is checked before anything else, even before the session.
      if (this.state.lockDelayed(key, this.now())) return boolean(false)
      const idx = this.state.nextIndex()
      const outcome = this.writing((t) => this.state.lock(key, value, flags ?? 0n, acquire, idx, t))
      return 'error' in outcome ? answer(500, outcome.error) : boolean(outcome.ok)
    }
    if (release !== undefined) {
      const idx = this.state.nextIndex()
      const outcome = this.writing((t) =>
        this.state.unlock(key, value, flags ?? 0n, release, idx, t),
      )
      return 'error' in outcome ? answer(500, outcome.error) : boolean(outcome.ok)
    }
    const idx = this.state.nextIndex()
    if (cas !== undefined) {
      return boolean(
        this.writing((t) => this.state.cas(key, value, flags ?? 0n, cas, idx, t)) !== undefined,
      )
    }
    this.writing((t) => this.state.set(key, value, flags ?? 0n, idx, t))
    return boolean(true)
  }

  private remove(
    key: string,
    answer: (status: number, body: string) => Promise<E.Either<ConsulError, HttpAnswer>>,
    param: (name: string) => string | undefined,
    uint64: (name: string) => bigint | undefined | 'bad',
  ): Promise<E.Either<ConsulError, HttpAnswer>> {
    const recurse = param('recurse') !== undefined
    const cas = uint64('cas')
    if (cas === 'bad') return answer(500, 'strconv.ParseUint: invalid syntax')
    if (key === '' && !recurse) return answer(400, 'Missing key name')
    const idx = this.state.nextIndex()
    if (recurse) this.writing((t) => this.state.deleteTree(key, idx, t))
    else if (cas !== undefined) {
      return answer(200, String(this.writing((t) => this.state.deleteCas(key, cas, idx, t))))
    } else this.writing((t) => this.state.delete(key, idx, t))
    return answer(200, 'true')
  }

  private txn(
    body: string,
    answer: (status: number, body: string) => Promise<E.Either<ConsulError, HttpAnswer>>,
  ): Promise<E.Either<ConsulError, HttpAnswer>> {
    let ops: TxnOpBody[]
    try {
      const parsed = parseConsulJson(body) as { KV: Record<string, unknown> }[]
      ops = parsed.map(({ KV }) => ({
        Verb: String(KV['Verb']),
        Key: String(KV['Key']),
        Value:
          typeof KV['Value'] === 'string'
            ? new Uint8Array(Buffer.from(KV['Value'], 'base64'))
            : null,
        Flags: typeof KV['Flags'] === 'string' ? BigInt(KV['Flags']) : 0n,
        Index: typeof KV['Index'] === 'string' ? BigInt(KV['Index']) : 0n,
        Session: typeof KV['Session'] === 'string' ? KV['Session'] : '',
      }))
    } catch (error) {
      return answer(400, `Failed to parse body: ${String(error)}`)
    }
    if (ops.length > 64) {
      return answer(413, `Transaction contains too many operations (${ops.length} > 64)`)
    }
    const outcome = applyTxn(this.state, ops, this.now())
    if (!outcome.committed) {
      const errors = outcome.errors.map(
        (e) => `{"OpIndex":${e.opIndex},"What":${JSON.stringify(e.what)}}`,
      )
      return answer(409, `{"Results":null,"Errors":[${errors.join(',')}]}`)
    }
    this.wake(outcome.touched)
    const results = outcome.results.map((r) => `{"KV":${entryJson(r.entry, r.withValue)}}`)
    return answer(200, `{"Results":[${results.join(',')}],"Errors":null}`)
  }

  private createSession(
    body: string,
    answer: (status: number, body: string) => Promise<E.Either<ConsulError, HttpAnswer>>,
  ): Promise<E.Either<ConsulError, HttpAnswer>> {
    let fields: Record<string, unknown>
    try {
      fields = body === '' ? {} : (JSON.parse(body) as Record<string, unknown>)
    } catch (error) {
      return answer(400, `Request decode failed: ${String(error)}`)
    }
    const node = typeof fields['Node'] === 'string' ? fields['Node'] : this.options.node
    if (node !== this.options.node) return answer(500, 'Missing node registration')
    const list = (name: string): unknown[] =>
      Array.isArray(fields[name]) ? (fields[name] as unknown[]) : []
    const unknownCheck = [
      ...list('NodeChecks').filter((c) => c !== 'serfHealth'),
      ...list('ServiceChecks').map((c) => (c as { ID?: unknown }).ID),
    ][0]
    if (unknownCheck !== undefined) {
      return answer(
        500,
        `Missing check '${typeof unknownCheck === 'string' ? unknownCheck : JSON.stringify(unknownCheck)}' registration`,
      )
    }
    const behavior = fields['Behavior'] ?? 'release'
    if (behavior !== 'release' && behavior !== 'delete' && behavior !== '') {
      return answer(500, `Invalid Behavior setting '${JSON.stringify(behavior)}'`)
    }
    const ttl = typeof fields['TTL'] === 'string' ? fields['TTL'] : ''
    const ttlMs = ttl === '' ? 0 : parseGoDuration(ttl)
    if (ttlMs === undefined) return answer(500, `Session TTL '${ttl}' invalid`)
    if (ttlMs !== 0 && (ttlMs < SESSION_TTL_MIN_MS || ttlMs > SESSION_TTL_MAX_MS)) {
      return answer(500, `Invalid Session TTL '${ttlMs * 1e6}', must be between [10s=24h0m0s]`)
    }
    const delay = fields['LockDelay']
    const lockDelayMs =
      delay === undefined
        ? 15_000
        : typeof delay === 'number'
          ? delay < 1000
            ? delay * 1000
            : delay / 1e6
          : typeof delay === 'string'
            ? durationMs(delay)
            : undefined
    if (lockDelayMs === undefined) return answer(400, `Request decode failed: LockDelay`)
    const idx = this.state.nextIndex()
    const session: StoredSession = {
      id: randomUUID(),
      name: typeof fields['Name'] === 'string' ? fields['Name'] : '',
      node,
      behavior: behavior === 'delete' ? 'delete' : 'release',
      ttl: ttlMs === 0 ? '' : ttl,
      ttlMs: ttlMs === 0 ? undefined : ttlMs,
      lockDelayMs,
      createIndex: idx,
    }
    this.state.sessions.set(session.id, session)
    this.state.sessionsTableIndex = idx
    this.armTtl(session)
    return answer(200, `{"ID":"${session.id}"}`)
  }

  /** (Re)starts a TTL session's expiry: `ttlMultiplier` TTLs from now. */
  private armTtl(session: StoredSession): void {
    if (session.ttlMs === undefined) return
    this.ttlTimers.get(session.id)?.unsubscribe()
    this.ttlTimers.set(
      session.id,
      this.options.scheduler.schedule(
        () => this.destroySession(session.id),
        session.ttlMs * this.options.ttlMultiplier,
      ),
    )
  }

  /** Invalidates a session as destroy and TTL expiry do; false when it did not exist. */
  destroySession(id: string): boolean {
    this.ttlTimers.get(id)?.unsubscribe()
    this.ttlTimers.delete(id)
    if (!this.state.sessions.has(id)) return false
    const idx = this.state.nextIndex()
    return this.writing((t) => this.state.invalidate(id, idx, this.now(), t))
  }

  /** An operator's write outside any client: a plain set, or a delete (of a tree). */
  operatorPut(key: string, value: Uint8Array | null, flags: bigint): void {
    const idx = this.state.nextIndex()
    this.writing((t) => this.state.set(key, value, flags, idx, t))
  }

  operatorDelete(key: string, recurse: boolean): void {
    const idx = this.state.nextIndex()
    this.writing((t) =>
      recurse ? this.state.deleteTree(key, idx, t) : this.state.delete(key, idx, t),
    )
  }

  /**
   * A dev agent's restart: it comes back empty, every key and session gone, its raft index
   * started over (so indexes go backwards); the blocked listings fail with `dropped`, as their
   * connections do.
   */
  restart(dropped: ConsulError): void {
    this.close()
    for (const waiter of [...this.blocked]) waiter.fail(dropped)
    this.state = new ConsulState(this.options.startIndex)
  }

  /** Stops the TTL timers (blocked listings end with their clients, which abort them). */
  close(): void {
    for (const timer of this.ttlTimers.values()) timer.unsubscribe()
    this.ttlTimers.clear()
  }
}
