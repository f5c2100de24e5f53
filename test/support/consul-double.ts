/**
 * An in-memory double of the Consul client (`ConsulClient`), for tests of the effects layer in
 * virtual time. It is the real client layer (`src/consul/kv.ts`, `txn.ts`, `sessions.ts`,
 * `watch-prefix.ts`) over a transport that answers from an in-memory Consul 1.8 agent
 * (`consul-double/server.ts`) instead of HTTP: requests are built, checked and decoded by the
 * library's own code, and only the agent is modelled. The shared scenario table
 * (`consul-scenarios.ts`) runs against it and against a real agent, so the two cannot drift.
 *
 * Time: every timer of the double (session TTLs, blocking waits, the watch loop's pauses) is on
 * the scheduler it is given. Its answers are Promises, so it runs in virtual time on a
 * `VirtualTimeScheduler` (or a `TestScheduler` used outside `run()`) driven by `advanceBy` /
 * `autoAdvance` (`consul-double/virtual-time.ts`), which let promise continuations settle
 * between virtual instants. It does NOT run inside `TestScheduler.run(...)`: `run` flushes every
 * virtual timer synchronously when its callback returns, before any answer's continuation can
 * run, so all of virtual time would pass at once. Without a scheduler it runs on `asyncScheduler`
 * (real time).
 */
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import { asyncScheduler, type SchedulerLike } from 'rxjs'
import type { ConsulClient, SessionInfo, TxnOp, WatchOptions } from '../../src/consul/client-api.js'
import { resolveConfig } from '../../src/consul/config.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import {
  statusError,
  type HttpAnswer,
  type HttpRequest,
  type Transport,
} from '../../src/consul/http.js'
import { createKv } from '../../src/consul/kv.js'
import { requestFeed } from '../../src/consul/request-feed.js'
import { createSessions } from '../../src/consul/sessions.js'
import { createTxn } from '../../src/consul/txn.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { watchPrefix } from '../../src/consul/watch-prefix.js'
import { DoubleServer } from './consul-double/server.js'

export {
  advanceBy,
  advanceUntil,
  autoAdvance,
  closeInVirtualTime,
  settle,
} from './consul-double/virtual-time.js'

/** The client calls a test can fail, hold and find in the call log. */
export type DoubleMethod =
  | 'kv.get'
  | 'kv.list'
  | 'kv.put'
  | 'kv.delete'
  | 'kv.txn'
  | 'session.create'
  | 'session.renew'
  | 'session.destroy'
  | 'session.info'

/** One call a client of the double made, as the call log shows it. */
export interface DoubleCall {
  /** The client's name (`connect(name)`; the first client is 'client'). */
  readonly client: string
  readonly method: DoubleMethod
  /** The keys (or prefix, or session id) the call is about. */
  readonly keys: readonly string[]
  /** A short summary of the arguments, e.g. `cas .lock@12` or `lock p/s1, cas p/.lock@12`. */
  readonly args: string
  /** The scheduler's time when the call was made. */
  readonly at: number
  /** How it ended: 'ok', 'false', 'rolled back', or the error's tag; undefined while in flight. */
  answer?: string
}

/** One HTTP request the client layer sent to the double's agent, as the request log shows it. */
export interface DoubleRequest {
  /** The client's name (`connect(name)`; the first client is 'client'). */
  readonly client: string
  /** The request line as the agent sees it, e.g. `PUT /v1/txn` or `GET /v1/kv/p/?recurse&index=12`. */
  readonly line: string
  /** The scheduler's time when it reached the agent. */
  readonly at: number
}

/** Which calls a `fail` or `hold` applies to (default: every call of the method). */
export type CallFilter = (call: DoubleCall) => boolean

/** A held call (see `ConsulDouble.hold`). */
export interface CallGate {
  /** Resolves with the call once a matching call arrived and is being held. */
  readonly reached: Promise<DoubleCall>
  /** Lets the held call go on to the agent (applied now); a gate not yet reached lets it pass. */
  release(): void
  /** Answers the held call (or the next matching one) with `error`, unapplied. */
  fail(error: ConsulError): void
}

/** Options of `createConsulDouble`. */
export interface ConsulDoubleOptions {
  /** Scheduler of every timer of the double and of its watches; default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike
  /** Name of the agent's node; default 'consul-double'. */
  readonly node?: string
  /** The raft index before the first write; default 10 (a real agent starts above 1). */
  readonly startIndex?: bigint
  /** A TTL session expires this many TTLs after its last renewal; Consul's 2 (the default). */
  readonly ttlMultiplier?: number
  /** Jitter source of the watches' backoff, unless a watch is given its own; default random. */
  readonly random?: () => number
}

/** The double: a client, more clients on the same store, and the controls of a test. */
export interface ConsulDouble {
  /** The first client, named 'client'. */
  readonly client: ConsulClient
  /** Another client on the same store: a second "process" that can race the first. */
  connect(name?: string): ConsulClient
  /** The KV entries under `prefix` (all by default), sorted by key. */
  entries(prefix?: string): KVEntry[]
  /** The live sessions, oldest first. */
  sessions(): SessionInfo[]
  /** The last raft index used. */
  index(): bigint
  /** Expires a session now, as Consul's TTL timer does; false if it did not exist. */
  expireSession(id: string): boolean
  /**
   * Restarts the agent as a dev agent restarts: empty, every session gone, the raft index back
   * at `startIndex` (indexes go backwards); blocking lists in flight fail as Unreachable.
   */
  restart(): void
  /** An operator's plain write (`consul kv put`), outside every client. */
  put(key: string, value: Uint8Array | string | null, options?: { flags?: bigint }): void
  /** An operator's delete (`consul kv delete [-recurse]`), outside every client. */
  deleteKey(key: string, options?: { recurse?: boolean }): void
  /**
   * Answers the next `times` (default 1) matching calls with `error`. Unapplied by default (the
   * request never reached the agent); with `applied: true` the agent applies it and the answer is
   * lost on the way back.
   */
  fail(
    method: DoubleMethod,
    error: ConsulError,
    options?: { times?: number; when?: CallFilter; applied?: boolean },
  ): void
  /** Holds the next matching call before it reaches the agent, until the test releases it. */
  hold(method: DoubleMethod, options?: { when?: CallFilter }): CallGate
  /** Every call made so far, in order. */
  calls(): readonly DoubleCall[]
  /**
   * Every HTTP request that reached the agent so far, in order: what a real agent would have
   * served. A call failed unapplied by `fail`, or still held by `hold`, sent none.
   */
  requests(): readonly DoubleRequest[]
  /** Closes every client (in-flight calls answer Aborted) and stops the double's timers. */
  close(): Promise<void>
}

/** A transient `Unreachable`, as the client answers when the agent cannot be reached. */
export function unreachable(request = 'GET /v1/kv/'): ConsulError {
  return {
    _tag: 'Unreachable',
    request,
    cause: { name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED (double)' },
    message: `${request}: cannot reach the Consul agent at consul-double (ECONNREFUSED)`,
  }
}

/** The ConsulError the client makes of an agent's answer with this status and body. */
export function httpFailure(status: number, body: string, request = 'PUT /v1/txn'): ConsulError {
  return statusError({ status, body, headers: {}, label: request, origin: 'consul-double' })
}

function queryString(query: HttpRequest['query']): string {
  const parts = Object.entries(query ?? {}).flatMap(([name, value]) =>
    value === undefined ? [] : [value === true ? name : `${name}=${encodeURIComponent(value)}`],
  )
  return parts.length === 0 ? '' : `?${parts.join('&')}`
}

function txnSummary(ops: readonly TxnOp[]): string {
  return ops
    .map((op) => ('index' in op ? `${op.verb} ${op.key}@${op.index}` : `${op.verb} ${op.key}`))
    .join(', ')
}

interface Fault {
  readonly method: DoubleMethod
  readonly error: ConsulError
  readonly when: CallFilter
  readonly applied: boolean
  left: number
}

interface Gate {
  readonly method: DoubleMethod
  readonly when: CallFilter
  readonly reached: (call: DoubleCall) => void
  /** Set by release()/fail(): what the held call does next. */
  decided?: { readonly error?: ConsulError }
  /** Wakes the held call, once it waits. */
  wake?: () => void
  taken: boolean
}

/**
 * Creates the double.
 *
 * @example
 * ```ts
 * const scheduler = new VirtualTimeScheduler()
 * const double = createConsulDouble({ scheduler })
 * const stop = autoAdvance(scheduler)
 * const a = double.client
 * const b = double.connect('b')
 * const gate = double.hold('kv.txn', { when: (call) => call.client === 'client' })
 * const first = a.kv.txn([{ verb: 'cas', key: 'p/.lock', value: null, index: 0n }])()
 * await gate.reached // a's write waits; b's lands first
 * await b.kv.put('p/.lock', 'b', { cas: 0n })()
 * gate.release()
 * assert.equal((await first)._tag, 'Right') // a rolled back: index is stale
 * stop()
 * await double.close()
 * ```
 * @param options - Scheduler, node name, start index, TTL multiplier, jitter source.
 * @returns The double: `client`, `connect()`, the controls and `close()`.
 */
export function createConsulDouble(options: ConsulDoubleOptions = {}): ConsulDouble {
  const scheduler = options.scheduler ?? asyncScheduler
  const server = new DoubleServer({
    scheduler,
    node: options.node ?? 'consul-double',
    startIndex: options.startIndex ?? 10n,
    ttlMultiplier: options.ttlMultiplier ?? 2,
  })
  const config = resolveConfig({ address: '127.0.0.1:8500', env: {} })
  const log: DoubleCall[] = []
  const requestLog: DoubleRequest[] = []
  const faults: Fault[] = []
  const gates: Gate[] = []
  /** One per client: aborted when the client (or the whole double) closes. */
  const closings = new Set<AbortController>()
  let count = 0

  const aborted = (request: string, why: 'caller' | 'closed'): ConsulError => ({
    _tag: 'Aborted',
    request: request.replace(/\?.*$/, ''),
    message: `${request}: ${why === 'caller' ? 'aborted by the caller' : 'the client is closed'}`,
  })

  /** Resolves with `why` once either signal fires (never, if neither does). */
  function whenAborted(
    caller: AbortSignal | undefined,
    closing: AbortSignal,
  ): { readonly fired: Promise<'caller' | 'closed'>; readonly stop: () => void } {
    let stop = (): void => undefined
    const fired = new Promise<'caller' | 'closed'>((resolve) => {
      const onCaller = (): void => resolve('caller')
      const onClose = (): void => resolve('closed')
      caller?.addEventListener('abort', onCaller, { once: true })
      closing.addEventListener('abort', onClose, { once: true })
      stop = () => {
        caller?.removeEventListener('abort', onCaller)
        closing.removeEventListener('abort', onClose)
      }
    })
    return { fired, stop }
  }

  /** The transport of one client: requests go to the double's agent, not to the network. */
  function transportFor(name: string, closing: AbortSignal): Transport {
    return {
      config,
      network: { failures: () => 0, onRecovered: () => () => undefined },
      requests: requestFeed(),
      call:
        <A>(
          request: HttpRequest,
          interpret: (answer: HttpAnswer) => E.Either<ConsulError, A>,
        ): TE.TaskEither<ConsulError, A> =>
        async () => {
          const label = `${request.method} ${request.path}${queryString(request.query)}`
          if (closing.aborted) return E.left(aborted(label, 'closed'))
          if (request.signal?.aborted) return E.left(aborted(label, 'caller'))
          requestLog.push({ client: name, line: label, at: scheduler.now() })
          const controller = new AbortController()
          const watch = whenAborted(request.signal, closing)
          void watch.fired.then((why) => controller.abort(aborted(label, why)))
          try {
            const answer = await server.handle(request, label, controller.signal)
            return E.isLeft(answer) ? answer : interpret(answer.right)
          } finally {
            watch.stop()
          }
        },
      close: () => Promise.resolve(),
    }
  }

  /** Fault injection, gates and the call log, around one call of a client. */
  function guarded<A>(
    client: { readonly name: string; readonly closing: AbortSignal },
    method: DoubleMethod,
    keys: readonly string[],
    args: string,
    signal: AbortSignal | undefined,
    run: TE.TaskEither<ConsulError, A>,
  ): TE.TaskEither<ConsulError, A> {
    return async () => {
      const call: DoubleCall = { client: client.name, method, keys, args, at: scheduler.now() }
      log.push(call)
      const settle = (answer: E.Either<ConsulError, A>): E.Either<ConsulError, A> => {
        call.answer = E.isLeft(answer)
          ? answer.left._tag
          : answer.right === false
            ? 'false'
            : typeof answer.right === 'object' &&
                answer.right !== null &&
                'committed' in answer.right &&
                answer.right.committed === false
              ? 'rolled back'
              : 'ok'
        return answer
      }
      const fault = faults.find((f) => f.method === method && f.left > 0 && f.when(call))
      if (fault !== undefined) {
        fault.left -= 1
        if (fault.applied) await run()
        return settle(E.left(fault.error))
      }
      const gate = gates.find((g) => !g.taken && g.method === method && g.when(call))
      if (gate !== undefined) {
        gate.taken = true
        gates.splice(gates.indexOf(gate), 1)
        gate.reached(call)
        const watch = whenAborted(signal, client.closing)
        const opened = new Promise<'go'>((resolve) => {
          if (gate.decided !== undefined) resolve('go')
          else gate.wake = () => resolve('go')
        })
        const outcome = await Promise.race([opened, watch.fired])
        watch.stop()
        if (outcome !== 'go') return settle(E.left(aborted(`${method} ${args}`, outcome)))
        if (gate.decided?.error !== undefined) return settle(E.left(gate.decided.error))
      }
      return settle(await run())
    }
  }

  function connect(name = count === 0 ? 'client' : `client-${count + 1}`): ConsulClient {
    count += 1
    const closing = new AbortController()
    closings.add(closing)
    const me = { name, closing: closing.signal }
    const transport = transportFor(name, closing.signal)
    const kv = { ...createKv(transport), txn: createTxn(transport) }
    const session = createSessions(transport)
    const client: ConsulClient = {
      kv: {
        get: (key, o) => guarded(me, 'kv.get', [key], key, o?.signal, kv.get(key, o)),
        list: (prefix, o) =>
          guarded(
            me,
            'kv.list',
            [prefix],
            o?.index === undefined ? prefix : `${prefix}@${o.index}`,
            o?.signal,
            kv.list(prefix, o),
          ),
        put: (key, value, o) =>
          guarded(
            me,
            'kv.put',
            [key],
            `${key}${o?.cas !== undefined ? `?cas=${o.cas}` : ''}${o?.acquire !== undefined ? `?acquire=${o.acquire}` : ''}${o?.release !== undefined ? `?release=${o.release}` : ''}`,
            o?.signal,
            kv.put(key, value, o),
          ),
        delete: (key, o) =>
          guarded(
            me,
            'kv.delete',
            [key],
            `${key}${o?.recurse === true ? '?recurse' : ''}${o?.cas !== undefined ? `?cas=${o.cas}` : ''}`,
            o?.signal,
            kv.delete(key, o),
          ),
        txn: (ops, o) =>
          guarded(
            me,
            'kv.txn',
            ops.map((op) => op.key),
            txnSummary(ops),
            o?.signal,
            kv.txn(ops, o),
          ),
      },
      session: {
        create: (o) =>
          guarded(me, 'session.create', [], o?.name ?? '', o?.signal, session.create(o)),
        renew: (id, o) => guarded(me, 'session.renew', [id], id, o?.signal, session.renew(id, o)),
        destroy: (id, o) =>
          guarded(me, 'session.destroy', [id], id, o?.signal, session.destroy(id, o)),
        info: (id, o) => guarded(me, 'session.info', [id], id, o?.signal, session.info(id, o)),
      },
      watchPrefix: (prefix: string, watchOptions?: WatchOptions) =>
        watchPrefix(client, prefix, {
          scheduler,
          ...(options.random === undefined ? {} : { random: options.random }),
          ...watchOptions,
        }),
      close: () => {
        closing.abort()
        closings.delete(closing)
        return Promise.resolve()
      },
    }
    return client
  }

  const toEntry = (e: KVEntry): KVEntry => ({ ...e })
  const client = connect('client')

  return {
    client,
    connect,
    entries: (prefix = '') => server.state.list(prefix).entries.map(toEntry),
    sessions: () =>
      [...server.state.sessions.values()].map((s) => ({
        id: s.id,
        name: s.name,
        node: s.node,
        behavior: s.behavior,
        ttl: s.ttl,
        ttlMs: s.ttlMs,
        lockDelayMs: s.lockDelayMs,
        createIndex: s.createIndex,
      })),
    index: () => server.state.raftIndex,
    expireSession: (id) => server.destroySession(id),
    restart: () => server.restart(unreachable('GET /v1/kv/')),
    put: (key, value, o) =>
      server.operatorPut(
        key,
        value === null
          ? null
          : typeof value === 'string'
            ? new Uint8Array(Buffer.from(value))
            : value,
        o?.flags ?? 0n,
      ),
    deleteKey: (key, o) => server.operatorDelete(key, o?.recurse === true),
    fail: (method, error, o) =>
      void faults.push({
        method,
        error,
        when: o?.when ?? (() => true),
        applied: o?.applied === true,
        left: o?.times ?? 1,
      }),
    hold: (method, o) => {
      let reached!: (call: DoubleCall) => void
      const gate: Gate = {
        method,
        when: o?.when ?? (() => true),
        reached: (call) => reached(call),
        taken: false,
      }
      const promise = new Promise<DoubleCall>((resolve) => (reached = resolve))
      gates.push(gate)
      const decide = (decided: Gate['decided']): void => {
        if (gate.decided !== undefined) return
        gate.decided = decided
        gate.wake?.()
      }
      return {
        reached: promise,
        release: () => {
          // Released before any call came: it no longer holds anything.
          if (!gate.taken) gates.splice(gates.indexOf(gate), 1)
          decide({})
        },
        fail: (error) => decide({ error }),
      }
    },
    calls: () => log,
    requests: () => requestLog,
    close: () => {
      for (const closing of closings) closing.abort()
      closings.clear()
      gates.length = 0
      server.close()
      return Promise.resolve()
    },
  }
}
