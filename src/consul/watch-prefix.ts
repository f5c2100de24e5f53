/**
 * `watchPrefix`: a KV prefix as a stream of snapshots, from a blocking-query long-poll loop
 * (consul-http-semantics §4). Transient failures are reported at once as `disconnected` events
 * and retried with capped, fully jittered exponential backoff (`BACKOFF.watch`, or the caller's
 * numbers); permanent ones end the stream.
 */
import { asyncScheduler, Observable, timer, type Subscription } from 'rxjs'
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient, WatchOptions } from './client-api.js'
import {
  filteredListingError,
  isDeadlineCut,
  rejectedBeforeSending,
  type ConsulError,
} from '../base/consul-error.js'
import { judgeFailure } from '../base/failure-verdict.js'
import { BACKOFF, MAX_RETRY_AFTER_MS, backoffDelay, type BackoffPolicy } from '../base/backoff.js'
import { EntryCache } from './entry-cache.js'
import type { KVSnapshot, WatchEvent } from '../base/kv-snapshot.js'

/**
 * 30 s: an idle watch costs two requests a minute, and a connection that silently stopped
 * answering (dropped by a firewall or NAT, no RST) is noticed within about 30 s + 30/16 s + 1 s
 * (`OVERDUE_POLL_GRACE_MS`), which is what a semaphore holder can afford to sit on a stale view.
 * Longer waits (Consul's default is 5 min) would hide such a dead connection for minutes.
 */
export const DEFAULT_WAIT_MS = 30_000
export const DEFAULT_BACKOFF_INITIAL_MS = BACKOFF.watch.initialMs
export const DEFAULT_BACKOFF_MAX_MS = BACKOFF.watch.maxMs
/**
 * 10 ms: under sustained churn (many contenders coming and going) a watch polls at most 100 times
 * a second, and a contender learns of a freed slot within about 10 ms. At 50 ms, measured with 30
 * contenders of limit 3 holding 50 ms each, slots stood idle for most of a poll interval and
 * contenders decided on stale snapshots: 43 % of the CAS writes lost and 26 acquisitions/s, against
 * 4.5 % and 47/s at 10 ms.
 */
export const DEFAULT_MIN_INTERVAL_MS = 10
/** Polls after progress that may start at once before the minimum interval applies (default). */
const PROGRESS_BURST = 5
/**
 * 1 s: after a blocking read the agent cut short (`isDeadlineCut`), the next blocking read starts
 * no sooner than this after the cut one did, so an agent that cuts every wait at once costs two
 * requests a second rather than a hundred.
 */
export const CUT_POLL_SPACING_MS = 1000
/**
 * 1 s: Consul answers a blocking read within its wait and a sixteenth more; one still unanswered
 * this long after that is overdue, and a non-blocking read checks the prefix (see `watchPrefix`).
 */
export const OVERDUE_POLL_GRACE_MS = 1000

/**
 * Watches every key under `prefix` with blocking queries.
 *
 * ```
 * writes:      ----a-------b----------(agent down)------(back)--c---
 * watchPrefix: s0--s1------s2---------d1----d2----------s2'----s3--
 *              s = snapshot (index changed), d = disconnected (attempt n, retryInMs)
 * ```
 *
 * Cold: each subscription runs its own loop; unsubscribing cancels any pending timer and aborts
 * the request in flight (one event-loop turn later, so that a write made in the same turn leaves
 * first). The first read does not block; each next one blocks on the index of
 * the previous answer. A snapshot is emitted when the index changes, on the first answer, on the
 * first answer after a `disconnected` (even with an unchanged index: the consumer dropped its
 * state), and after the index went backwards (agent restart, snapshot restore: the loop resets
 * to a non-blocking read and emits what it reads). Those two non-blocking reads, which a consumer
 * takes as the truth, are made in `consistent` mode unless the watch reads `stale`: right after a
 * Consul leader election, a default read could come from a leader that has not applied the last
 * writes yet. Each answer parses and decodes only the entries whose JSON changed since the answer
 * before (`EntryCache`): the others are the same objects as in the snapshot before.
 *
 * A blocking read answered 500 `rpc error making call: i/o deadline reached` (a Consul client
 * agent of 1.11.9 to 1.14.x whose RPC to the servers hit its deadline, `isDeadlineCut`) is a wait
 * cut short, not a failure: no `disconnected` is emitted, the loop re-reads at once without
 * blocking (in `consistent` mode unless the watch reads `stale`), which shows any change and proves
 * the agent answers, then blocks again. A failure of that re-read, like any 500 on a read that did
 * not block, is a failure as above.
 *
 * ```
 * agent:       ---cut-----cut-----cut------
 * requests:    b--b'r-b---b'r-b---b'r-b----   b = blocking read, b' = its 500, r = re-read
 * watchPrefix: s0-----------------------s1-   (s1 only when a re-read saw a change)
 * ```
 *
 * A blocking read still unanswered a second past its wait and a sixteenth (the most Consul takes)
 * may have lost its answer on the way, with no other request failing to say so: a read that does
 * not block (in `consistent` mode unless the watch reads `stale`) checks the prefix and, if it
 * answers first, stands for the late read, which is given up. If it fails, nothing is emitted and
 * the late read keeps its own timeout.
 *
 * @example
 * ```ts
 * watchPrefix(consul, 'service/web/lock').subscribe((event) => {
 *   if (event.type === 'snapshot') console.log(event.snapshot.index, event.snapshot.entries.length)
 *   else console.warn(`disconnected (${event.error._tag}), retry in ${event.retryInMs} ms`)
 * })
 * ```
 *
 * @param client - A client (its `kv.list`, and its `network` when it has one).
 * @param prefix - The KV prefix, listed with `?recurse` (a plain string prefix).
 * @param options - Wait, consistency, backoff, rate limit, scheduler.
 * @returns A cold Observable of snapshots and disconnects; it errors with a permanent ConsulError
 *   (PermissionDenied, also for a 500 naming an ACL problem several times in a row; BadRequest,
 *   DecodeError, TooLarge, or Aborted when the client is closed).
 */
export function watchPrefix(
  client: Pick<ConsulClient, 'kv' | 'network'>,
  prefix: string,
  options: WatchOptions = {},
): Observable<WatchEvent> {
  const waitMs = options.waitMs ?? DEFAULT_WAIT_MS
  const initialMs = options.backoff?.initialMs ?? DEFAULT_BACKOFF_INITIAL_MS
  const maxMs = options.backoff?.maxMs ?? DEFAULT_BACKOFF_MAX_MS
  const minIntervalMs = options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS
  const progressBurst = options.progressBurst ?? PROGRESS_BURST
  const scheduler = options.scheduler ?? asyncScheduler
  const random = options.random ?? Math.random
  // BACKOFF.watch with the caller's numbers; a Retry-After may ask for up to 60 s, or maxMs if
  // the caller allows longer.
  const policy: BackoffPolicy = {
    ...BACKOFF.watch,
    initialMs,
    maxMs,
    throttleCapMs: Math.max(maxMs, MAX_RETRY_AFTER_MS),
  }
  // A prefix that ends in '/' is listed without it and the answer filtered: Consul 1.8 keys the
  // tombstone of `DELETE <prefix>?recurse` (what `consul kv delete -recurse` sends) without the
  // slash, and only a listing that covers that key is woken by the delete.
  const listed = prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix
  const within = (snapshot: KVSnapshot): KVSnapshot =>
    listed === prefix || snapshot.entries.every((e) => e.key.startsWith(prefix))
      ? snapshot
      : { ...snapshot, entries: snapshot.entries.filter((e) => e.key.startsWith(prefix)) }

  return new Observable<WatchEvent>((subscriber) => {
    const invalid = (
      [
        ['waitMs', waitMs, 1],
        ['backoff.initialMs', initialMs, 0],
        ['backoff.maxMs', maxMs, 0],
        ['minIntervalMs', minIntervalMs, 0],
        ['progressBurst', progressBurst, 0],
      ] as const
    ).find(([, n, least]) => typeof n !== 'number' || !Number.isFinite(n) || n < least)
    if (invalid !== undefined) {
      const [name, value] = invalid
      subscriber.error(
        rejectedBeforeSending('GET /v1/kv/', `watch option ${name} = ${String(value)} is invalid`),
      )
      return
    }

    const abort = new AbortController()
    // Each answer decodes only the entries that changed since the one before.
    const reuse = options.reuse ?? new EntryCache()
    let pending: Subscription | undefined
    const start =
      options.startIndex !== undefined && options.startIndex >= 1n ? options.startIndex : undefined
    /** Index of the last emitted snapshot (the caller's own, given as startIndex). */
    let emittedIndex: bigint | undefined = start
    /** Emit the next answer whatever its index (first read, after a disconnect or a reset). */
    let mustEmit = start === undefined
    /** Index to block on; undefined means the next read does not block (never index=0). */
    let blockOn: bigint | undefined = start
    let failuresInRow = 0
    /**
     * Highest index emitted in this subscription: an answer below it (agent restart, snapshot
     * restore, or Consul 1.8's answer after a recursive delete of the prefix, which carries the
     * index of an older tombstone) is emitted as a reset.
     */
    let highest: bigint | undefined = start
    /** Entries of the last emitted snapshot. */
    let emitted: KVSnapshot['entries'] | undefined =
      start === undefined ? undefined : options.startEntries
    let aclFailuresInRow = 0
    /**
     * The next read follows a failure or an index that went back: it does not block, so a server
     * that became leader a moment ago could answer it from a state that lacks the last writes it
     * has not applied yet (Consul's default mode serves reads from the leader's state without
     * waiting for its first barrier), and a consumer takes such an answer as the truth. It is
     * read in `consistent` mode, which Consul answers only once the leader has applied everything
     * (a 500 "Not ready to serve consistent reads" before, retried like any failure), unless the
     * watch was asked for `stale` reads. A blocking read cannot be stale this way: it waits for
     * an index past the one it blocks on.
     */
    let recovering = false
    /**
     * The last blocking read was cut short by the agent (`isDeadlineCut`): the next read does not
     * block. The wait is not shortened after cuts: a cut costs one extra read, which a shorter
     * wait would cost as well, and Consul's own fixes (a longer RPC deadline for blocking queries)
     * make the full wait right again without the loop having to find out.
     */
    let rereadAfterCut = false
    /** When the blocking read before the cut started (for `CUT_POLL_SPACING_MS`). */
    let cutPollStart: number | undefined
    let lastStart = Number.NEGATIVE_INFINITY
    // Token bucket for the polls that follow progress (the index moved): a token every
    // minIntervalMs, at most progressBurst saved up (one with progressBurst 0), and every such
    // poll takes one, waiting for it when there is none. A burst of changes, such as a hand-over
    // (release, then the next holder's CAS), is followed at once while saved tokens last;
    // sustained churn, at one poll per minIntervalMs, as Consul's blocking-query docs advise.
    // With progressBurst 0 the watch starts with none: each poll after progress starts at least
    // minIntervalMs after the one before it.
    const mostTokens = Math.max(1, progressBurst)
    let tokens = progressBurst
    let refilledAt = scheduler.now()

    const schedule = (delayMs: number): void => {
      if (subscriber.closed) return
      pending = timer(delayMs, scheduler).subscribe(poll)
    }
    /** Rate limit: a server answering at once with the same index cannot make the loop spin. */
    const untilNextStart = (): number => Math.max(0, lastStart + minIntervalMs - scheduler.now())

    /** Takes the token of a poll after progress: how long until it is there (0: at once). */
    const untilToken = (): number => {
      const now = scheduler.now()
      tokens = Math.min(mostTokens, tokens + (now - refilledAt) / Math.max(1, minIntervalMs))
      refilledAt = now
      tokens -= 1
      return tokens >= 0 ? 0 : Math.ceil(-tokens * minIntervalMs)
    }

    const onFailure = (error: ConsulError): void => {
      const verdict = judgeFailure(error, aclFailuresInRow)
      if (verdict.verdict === 'permanent') {
        subscriber.error(verdict.error)
        return
      }
      aclFailuresInRow = verdict.aclInRow
      failuresInRow += 1
      const paced = backoffDelay(policy, failuresInRow, { random, error })
      const retryInMs = Math.max(Math.floor(paced), untilNextStart())
      // The next answer is a non-blocking read that is emitted even if its index did not move.
      mustEmit = true
      blockOn = undefined
      recovering = true
      cutPollStart = undefined
      subscriber.next({ type: 'disconnected', error, attempt: failuresInRow, retryInMs })
      schedule(retryInMs)
    }

    /** A blocking read cut short (started at `startedAt`): re-read at once, without blocking. */
    const onCutShort = (startedAt: number): void => {
      rereadAfterCut = true
      cutPollStart = startedAt
      schedule(untilNextStart())
    }

    const onSnapshot = (snapshot: KVSnapshot): void => {
      // Part of the prefix is no picture of it: a hidden holder would look like a free slot.
      if (snapshot.filteredByAcls === true) {
        subscriber.error(filteredListingError(prefix))
        return
      }
      failuresInRow = 0
      aclFailuresInRow = 0
      recovering = false
      if (blockOn !== undefined && snapshot.index < blockOn) {
        // The index went backwards (restart, restore, tombstone reaping): start over.
        blockOn = undefined
        mustEmit = true
        recovering = true
        schedule(untilNextStart())
        return
      }
      // Same index, other keys: Consul 1.8 answers a listing whose keys a delete of a parent
      // prefix removed with the index of the last tombstone under it, which may be the one seen.
      const changedInPlace =
        !mustEmit &&
        snapshot.index === emittedIndex &&
        emitted !== undefined &&
        !sameEntries(emitted, snapshot.entries)
      const progressed = mustEmit || snapshot.index !== emittedIndex || changedInPlace
      if (progressed) {
        const reset = changedInPlace || (highest !== undefined && snapshot.index < highest)
        emittedIndex = snapshot.index
        emitted = snapshot.entries
        highest =
          reset || highest === undefined || snapshot.index > highest ? snapshot.index : highest
        mustEmit = false
        subscriber.next(
          reset ? { type: 'snapshot', snapshot, reset: true } : { type: 'snapshot', snapshot },
        )
      }
      blockOn = snapshot.index < 1n ? 1n : snapshot.index
      const next = progressed ? untilToken() : untilNextStart()
      const spacing =
        cutPollStart === undefined ? 0 : cutPollStart + CUT_POLL_SPACING_MS - scheduler.now()
      cutPollStart = undefined
      schedule(Math.max(next, spacing))
    }

    const onAnswer = (
      answer: E.Either<ConsulError, KVSnapshot>,
      blocked: boolean,
      startedAt: number,
    ): void => {
      if (subscriber.closed) return
      if (answer._tag === 'Right') onSnapshot(answer.right)
      else if (blocked && isDeadlineCut(answer.left)) onCutShort(startedAt)
      else onFailure(answer.left)
    }

    /** The long poll in flight, and the network failures the client had seen when it left. */
    let inFlight: { readonly stop: AbortController; readonly failuresBefore: number } | undefined
    /** The check of the blocking read in flight, due once it is overdue. */
    let overdue: Subscription | undefined
    const overdueAfterMs = waitMs + Math.ceil(waitMs / 16) + OVERDUE_POLL_GRACE_MS

    /** A request's own stop, which the watch's end also pulls; `detach` once it has answered. */
    const stopOfRequest = (): { readonly stop: AbortController; readonly detach: () => void } => {
      const stop = new AbortController()
      const stopWithWatch = (): void => stop.abort()
      abort.signal.addEventListener('abort', stopWithWatch, { once: true })
      return { stop, detach: () => abort.signal.removeEventListener('abort', stopWithWatch) }
    }
    const cancelOverdue = (): void => {
      overdue?.unsubscribe()
      overdue = undefined
    }

    /**
     * The blocking read `late` is overdue: its answer may have been lost on the way. A read that
     * does not block checks the prefix; if it answers before `late` does, it stands for it and
     * `late` is given up (its answer, if any, means nothing then). If it fails, nothing is
     * reported: `late` keeps its own timeout, after which it fails as usual.
     */
    const checkOverdue = (late: NonNullable<typeof inFlight>): void => {
      overdue = undefined
      if (inFlight !== late) return
      const consistency = options.consistency === 'stale' ? 'stale' : 'consistent'
      const { stop, detach } = stopOfRequest()
      const startedAt = scheduler.now()
      client.kv
        .list(listed, { signal: stop.signal, reuse, consistency })()
        .then((answer) => {
          detach()
          if (inFlight !== late || E.isLeft(answer)) return
          inFlight = undefined
          late.stop.abort()
          onAnswer(E.map(within)(answer), false, startedAt)
        })
        .catch((error: unknown) => subscriber.error(error))
    }

    function poll(): void {
      pending = undefined
      cancelOverdue()
      if (subscriber.closed) return
      lastStart = scheduler.now()
      const { stop, detach } = stopOfRequest()
      const mine = { stop, failuresBefore: client.network?.failures() ?? 0 }
      inFlight = mine
      const startedAt = lastStart
      const reread = rereadAfterCut
      rereadAfterCut = false
      const blocking = blockOn !== undefined && !reread
      const request = client.kv.list(listed, {
        signal: stop.signal,
        reuse,
        consistency:
          (recovering || reread) && options.consistency !== 'stale'
            ? 'consistent'
            : options.consistency,
        ...(blocking ? { index: blockOn, waitMs } : {}),
      })
      if (blocking) overdue = scheduler.schedule(() => checkOverdue(mine), overdueAfterMs)
      // The TaskEither never rejects; the catch only guards against a bug in this file.
      request()
        .then((answer) => {
          detach()
          // A poll replaced after a network failure: its late answer (Aborted) means nothing.
          if (inFlight !== mine) return
          inFlight = undefined
          cancelOverdue()
          onAnswer(E.map(within)(answer), blocking, startedAt)
        })
        .catch((error: unknown) => subscriber.error(error))
    }

    // A long poll that left before the network failed may never be answered, even once the
    // network is back (its answer lost, its connection forgotten by a firewall): when the client
    // hears from the agent again, such a poll is replaced at once rather than waited out until
    // its timeout (the wait plus the request timeout, about 40 s by default), during which a
    // waiter would miss a free slot, or a slot handed to it. The new poll reads at once, as
    // after any failure: while the network was away the agent may have lost its state (a dev
    // agent restarted, a restore), and Consul holds a poll on an index it has not reached for the
    // whole wait, so blocking on the old index would hide the reset until the wait runs out.
    const stopListening = client.network?.onRecovered(() => {
      const silenced = inFlight
      if (silenced === undefined || (client.network?.failures() ?? 0) <= silenced.failuresBefore) {
        return
      }
      inFlight = undefined
      silenced.stop.abort()
      pending?.unsubscribe()
      blockOn = undefined
      recovering = true
      rereadAfterCut = false
      poll()
    })

    poll()
    return () => {
      stopListening?.()
      pending?.unsubscribe()
      pending = undefined
      cancelOverdue()
      // Aborting the request in flight is synchronous work in the HTTP client; an
      // unsubscribe is often part of a release whose write should leave first. The answer of a
      // poll is ignored from now on (the subscriber is closed), so the abort can wait a turn.
      setImmediate(() => abort.abort())
    }
  })
}

/** Whether two listings hold the same keys at the same ModifyIndex. */
function sameEntries(a: KVSnapshot['entries'], b: KVSnapshot['entries']): boolean {
  return (
    a.length === b.length &&
    a.every((e, i) => e.key === b[i]?.key && e.modifyIndex === b[i]?.modifyIndex)
  )
}
