/**
 * The recent hand-over rate of a prefix, as one process sees it, and what it says about a waiter's
 * wait. A hand-over is a session that appears among `.lock`'s live holders; a waiter at rank r
 * (r waiters ahead of it) holds after r + 1 more of them, so its estimated wait is r + 1 times the
 * mean interval between the recent ones.
 *
 * ```
 * holders:  [a b]   [b c]    [c d]   [d e]        waiting: w at rank 1
 * seen at:   0 ms    100 ms   200 ms  300 ms       interval 100 ms → w's estimate 200 ms
 * ```
 *
 * Pure: the caller keeps the log (`HandOverLog`) and says when each view was seen.
 */

/** How many of the latest intervals between hand-overs the rate is taken over: 16. */
export const HAND_OVER_SAMPLES = 16

/** What a process has seen of a prefix's hand-overs. */
export interface HandOverLog {
  /**
   * The intervals between the latest hand-overs seen one after the other (ms, oldest first), at
   * most HAND_OVER_SAMPLES; 0 for each more seen at once.
   */
  readonly intervals: readonly number[]
  /** When the last hand-over was seen since the view was last taken up (`resumeHandOvers`). */
  readonly last: number | undefined
  /** The live holders of the last view noted; undefined before the first. */
  readonly holders: readonly string[] | undefined
}

/** A log that has seen nothing. */
export const NO_HAND_OVERS: HandOverLog = { intervals: [], last: undefined, holders: undefined }

/**
 * The log of a view taken up again after a time it did not look (a new watch, a reconnection):
 * its intervals stay, but what changed meanwhile is not a hand-over seen when it shows, nor is the
 * time since the last one seen an interval.
 *
 * @example
 * resumeHandOvers(log).holders // undefined
 */
export function resumeHandOvers(log: HandOverLog): HandOverLog {
  return { intervals: log.intervals, last: undefined, holders: undefined }
}

/**
 * The log after a view whose live holders are `holders`, seen at `at`: every holder the last view
 * did not list is a hand-over seen then. The first view noted only sets the holders, and the
 * first hand-over after it only the time the next interval starts from.
 *
 * @example
 * const seen = [[['a'], 0], [['b'], 120], [['c'], 300]] as const
 * seen.reduce((log, [holders, at]) => noteHandOvers(log, holders, at), NO_HAND_OVERS).intervals // [180]
 * @param log - The log so far.
 * @param holders - The live holders of the view seen.
 * @param at - When it was seen (ms).
 * @returns The new log; `log` itself when the holders are the same array.
 */
export function noteHandOvers(
  log: HandOverLog,
  holders: readonly string[],
  at: number,
): HandOverLog {
  const before = log.holders
  if (before === holders) return log
  if (before === undefined) return { intervals: log.intervals, last: log.last, holders }
  let added = 0
  for (let i = 0; i < holders.length; i++) if (!before.includes(holders[i] as string)) added++
  if (added === 0) return { intervals: log.intervals, last: log.last, holders }
  const intervals = [...log.intervals]
  if (log.last !== undefined) intervals.push(at - log.last)
  for (let i = 1; i < added; i++) intervals.push(0)
  return { intervals: intervals.slice(-HAND_OVER_SAMPLES), last: at, holders }
}

/**
 * The mean interval between the logged hand-overs (ms), or undefined before one was timed. When
 * the last one seen is further back than that mean at `at`, that gap is the interval: a queue that
 * stopped moving is not estimated at the speed it had.
 *
 * @example
 * handOverIntervalMs({ intervals: [100, 100], last: 200, holders: [] }, 250) // 100
 * handOverIntervalMs({ intervals: [100, 100], last: 200, holders: [] }, 600) // 400
 * @param log - The log.
 * @param at - Now (ms), on the clock of the log's times.
 * @returns The interval, or undefined.
 */
export function handOverIntervalMs(log: HandOverLog, at: number): number | undefined {
  const { intervals, last } = log
  if (intervals.length === 0) return undefined
  const mean = intervals.reduce((sum, interval) => sum + interval, 0) / intervals.length
  if (mean <= 0) return undefined
  return last === undefined ? mean : Math.max(mean, at - last)
}

/**
 * A waiter's estimated wait: rank + 1 hand-over intervals, to the millisecond.
 *
 * @example
 * estimatedWaitMs(2, 150) // 450
 * @param rank - The waiters ahead of it.
 * @param intervalMs - The interval between hand-overs (`handOverIntervalMs`).
 * @returns The estimate (ms).
 */
export function estimatedWaitMs(rank: number, intervalMs: number): number {
  return Math.round((rank + 1) * intervalMs)
}
