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

/** How many of the latest hand-overs the rate is taken over: 16. */
export const HAND_OVER_SAMPLES = 16

/** What a process has seen of a prefix's hand-overs. */
export interface HandOverLog {
  /** When the latest hand-overs were seen (ms, oldest first), at most HAND_OVER_SAMPLES. */
  readonly times: readonly number[]
  /** The live holders of the last view noted; undefined before the first. */
  readonly holders: readonly string[] | undefined
}

/** A log that has seen nothing. */
export const NO_HAND_OVERS: HandOverLog = { times: [], holders: undefined }

/**
 * The log after a view whose live holders are `holders`, seen at `at`: every holder the last view
 * did not list is a hand-over seen then. The first view noted only sets the holders.
 *
 * @example
 * noteHandOvers(noteHandOvers(NO_HAND_OVERS, ['a'], 0), ['b'], 120).times // [120]
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
  if (before === undefined) return { times: log.times, holders }
  let added = 0
  for (const holder of holders) if (!before.includes(holder)) added++
  if (added === 0) return { times: log.times, holders }
  const times = [...log.times]
  for (let i = 0; i < added; i++) times.push(at)
  return { times: times.slice(-HAND_OVER_SAMPLES), holders }
}

/**
 * The mean interval between the logged hand-overs (ms), or undefined before two were seen apart.
 * When the last one is further back than that mean at `at`, that gap is the interval: a queue
 * that stopped moving is not estimated at its earlier speed.
 *
 * @example
 * handOverIntervalMs({ times: [0, 100, 200], holders: [] }, 250) // 100
 * handOverIntervalMs({ times: [0, 100, 200], holders: [] }, 600) // 400
 * @param log - The log.
 * @param at - Now (ms), on the clock of the log's times.
 * @returns The interval, or undefined.
 */
export function handOverIntervalMs(log: HandOverLog, at: number): number | undefined {
  const { times } = log
  const first = times[0]
  const last = times[times.length - 1]
  if (first === undefined || last === undefined || last === first) return undefined
  const mean = (last - first) / (times.length - 1)
  return Math.max(mean, at - last)
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
