/**
 * One frame of `rxsem watch`: the connection, the semaphore's counts, the holders (with the time
 * each took its slot when this view saw it happen, else the time it first saw them, marked as a
 * bound) and the waiters, laid out for a terminal `width` columns wide (80 is
 * the design width). Pure: the time and everything shown come in as arguments.
 */
import type { HolderStatus, PrefixStatus } from '../status/prefix-status.js'
import { askedToGiveBack, heldFor, shortSession, waitFor } from '../report.js'
import {
  estimatedWaitMs,
  handOverIntervalMs,
  type HandOverLog,
} from '../../core/semaphore/hand-overs.js'

/** The watch's connection to Consul. */
export type Connection =
  | { readonly type: 'connecting' }
  | { readonly type: 'connected'; readonly index: bigint }
  | {
      readonly type: 'disconnected'
      readonly attempt: number
      readonly retryInMs: number
      readonly message: string
    }

export interface WatchView {
  readonly prefix: string
  /** Where Consul is, for the connection line (never carries the token). */
  readonly address: string
  readonly connection: Connection
  /** The last status read, undefined before the first snapshot. */
  readonly status: PrefixStatus | undefined
  /** A problem that makes the prefix unusable for a semaphore (conflict, corrupt .lock...). */
  readonly problem: string | undefined
  /** Why what is shown may be incomplete (an ACL token that may not read the prefix). */
  readonly warning?: string | undefined
  /** When this view first saw each live holder hold. */
  readonly firstSeen: ReadonlyMap<string, HeldSince>
  /** When the watch started (ms since the epoch), for the wait before the first answer. */
  readonly startedAt?: number
  /** The hand-overs this view saw (ms since the epoch), for the waiters' estimated waits. */
  readonly handOvers?: HandOverLog
}

/**
 * When a holder was first seen holding. Consul records no time of acquisition (KV entries and
 * sessions carry Raft indexes, not times), so a time is only known when this view saw the slot
 * taken: the holder was absent from the answer before, with no gap in between.
 */
export interface HeldSince {
  /** When this view first saw it hold (ms since the epoch). */
  readonly at: number
  /**
   * True when this view saw the acquisition (so `at` is when it happened, to within one answer);
   * false when it held already in the first answer, or in the first after a disconnection: then
   * it took its slot at `at` or before.
   */
  readonly seenTaken: boolean
}

/** `hh:mm:ss` in local time. */
const clock = (ms: number): string => new Date(ms).toTimeString().slice(0, 8)

/** `text` cut to `width` columns (with an ellipsis), padded when `pad`. */
function fit(text: string, width: number, pad = true): string {
  const cut = text.length > width ? `${text.slice(0, Math.max(0, width - 1))}…` : text
  return pad ? cut.padEnd(width) : cut
}

function connectionLine(view: WatchView, now: number): string {
  const c = view.connection
  switch (c.type) {
    case 'connecting': {
      const waited = view.startedAt === undefined ? '' : ` (${heldFor(now - view.startedAt)})`
      return `Consul ${view.address}: waiting for the first answer${waited}...`
    }
    case 'connected':
      return `Consul ${view.address}: connected (index ${c.index})`
    case 'disconnected':
      return `Consul ${view.address}: DISCONNECTED, attempt ${c.attempt}, retry in ${(c.retryInMs / 1000).toFixed(1)}s (showing the last state read): ${c.message}`
  }
}

/**
 * The frame as lines, none wider than `width`. `keyHint` is the last line, on a terminal (how to
 * quit); a frame printed to a pipe or a file has none.
 *
 * @example
 * renderFrame(view, Date.now(), 80, 'q or Ctrl-C: quit').join('\n')
 */
export function renderFrame(
  view: WatchView,
  now: number,
  width: number,
  keyHint?: string,
): string[] {
  const w = Math.max(40, width)
  const title = `rxsem watch ${view.prefix}`
  const lines = [`${fit(title, w - 10)}  ${clock(now)}`, ...wrap(connectionLine(view, now), w)]
  const status = view.status
  if (view.problem !== undefined) {
    lines.push('', ...wrap(`PROBLEM: ${view.problem}`, w))
  }
  if (view.warning !== undefined) {
    lines.push('', ...wrap(`INCOMPLETE: ${view.warning}`, w))
  }
  if (status === undefined) {
    if (view.problem === undefined) lines.push('', 'nothing read yet')
  } else {
    const live = status.holders.filter((h) => h.alive).length
    // A limit lowered under its holders (`rxsem set-limit`): say what it means for the queue.
    const over =
      status.limit !== null && live > status.limit
        ? ` (over the limit: no one is admitted until ${releases(live - status.limit + 1)})`
        : ''
    const kind =
      status.shape === 'lock' ? 'leader lock (consul lock)' : `shape ${status.shape ?? 'none yet'}`
    const waiting =
      status.waiting === null ? 'waiters not visible' : `${status.waiting.length} waiting`
    lines.push(
      fit(
        `limit ${status.limit ?? '?'}, ${kind}: ${live}${status.limit === null ? '' : ` of ${status.limit}`} held${over}, ${waiting}`,
        w,
        false,
      ),
      '',
      fit(
        `${'HOLDER'.padEnd(10)}${'SINCE'.padEnd(10)}${'FOR'.padEnd(9)}${'VALUE'.padEnd(22)}NAME`,
        w,
        false,
      ),
    )
    if (status.holders.length === 0) lines.push('(none)')
    for (const holder of status.holders) {
      lines.push(holderRow(holder, view.firstSeen, now, w))
      if (holder.revoke !== null)
        lines.push(fit(`${' '.repeat(10)}${askedToGiveBack(holder.revoke)}`, w, false))
    }
    lines.push(
      '',
      fit(
        `${'WAITING'.padEnd(10)}${'AHEAD'.padEnd(7)}${'EST. WAIT'.padEnd(12)}${'VALUE'.padEnd(22)}NAME`,
        w,
        false,
      ),
    )
    if (status.waiting === null) {
      lines.push(...wrap(`(not visible: ${status.waitingNote ?? 'unknown'})`, w))
    } else if (status.waiting.length === 0) lines.push('(none)')
    const intervalMs = view.handOvers && handOverIntervalMs(view.handOvers, now)
    for (const waiter of status.waiting ?? []) {
      const wait =
        intervalMs === undefined ? '-' : `~${waitFor(estimatedWaitMs(waiter.rank, intervalMs))}`
      const row =
        `${shortSession(waiter.session).padEnd(10)}${String(waiter.rank).padEnd(7)}` +
        `${wait.padEnd(12)}${fit(waiter.value ?? '-', 20)}  ${waiter.name ?? '-'}`
      lines.push(fit(row, w, false))
    }
    if (status.waiting !== null && status.waitingNote !== undefined) {
      lines.push(...wrap(`(${status.waitingNote})`, w))
    }
  }
  lines.push('', ...legend(view), ...(keyHint === undefined ? [] : [keyHint]))
  return lines.map((line) => fit(line, w, false))
}

/** What the SINCE and FOR columns mean, for the rows shown. */
function legend(view: WatchView): string[] {
  const live = view.status?.holders.filter((h) => h.alive) ?? []
  if (live.length === 0) return []
  const bounds = live.some((h) => view.firstSeen.get(h.session)?.seenTaken !== true)
  return bounds
    ? [
        'SINCE/FOR: when this watch saw the slot taken. ≤ and ≥: held already when the',
        'watch first saw it; Consul records no time of acquisition, so it took its slot',
        'at that time or before, and has held at least that long.',
      ]
    : ['SINCE/FOR: when this watch saw the slot taken.']
}

function holderRow(
  holder: HolderStatus,
  firstSeen: ReadonlyMap<string, HeldSince>,
  now: number,
  width: number,
): string {
  const id = shortSession(holder.session).padEnd(10)
  if (!holder.alive) {
    return fit(`${id}DEAD: listed in .lock, session gone (pruned by the next writer)`, width, false)
  }
  const since = firstSeen.get(holder.session)
  const [atMost, atLeast] = since?.seenTaken === true ? [' ', ''] : ['≤', '≥']
  const when =
    since === undefined
      ? '-'.padEnd(10) + '-'.padEnd(9)
      : `${atMost}${clock(since.at)} ${`${atLeast}${heldFor(now - since.at)}`.padEnd(9)}`
  return fit(`${id}${when}${fit(holder.value ?? '-', 20)}  ${holder.name ?? '-'}`, width, false)
}

/** Splits a long line at spaces so that none is wider than `width`. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = `  ${word}`
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  if (line !== '') lines.push(line)
  return lines
}

/** `1 holder releases`, `3 holders release`: what must happen before a lowered limit admits. */
function releases(n: number): string {
  return `${n} ${n === 1 ? 'holder releases' : 'holders release'}`
}
