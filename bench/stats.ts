// Summary statistics of the bench: percentiles and Jain's fairness index.

export interface Summary {
  readonly n: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/**
 * The p-th percentile (0..100) by linear interpolation between closest ranks (the "type 7"
 * estimator of R and NumPy), so that p50 of an even count is the mean of the middle two.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = (p / 100) * (sorted.length - 1)
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  const a = sorted[low] ?? Number.NaN
  const b = sorted[high] ?? Number.NaN
  return a + (b - a) * (rank - low)
}

export function summarize(samples: readonly number[]): Summary {
  const n = samples.length
  return {
    n,
    p50: percentile(samples, 50),
    p95: percentile(samples, 95),
    p99: percentile(samples, 99),
    max: n === 0 ? Number.NaN : Math.max(...samples),
    mean: n === 0 ? Number.NaN : samples.reduce((s, x) => s + x, 0) / n,
  }
}

/**
 * Jain's fairness index (Σx)² / (n·Σx²): 1 when every x is equal, 1/n when one contender gets
 * everything. Used on each contender's mean wait, so that the first holders' zero waits do not
 * read as unfairness.
 */
export function jain(values: readonly number[]): number {
  const n = values.length
  if (n === 0) return Number.NaN
  const sum = values.reduce((s, x) => s + x, 0)
  const squares = values.reduce((s, x) => s + x * x, 0)
  return squares === 0 ? 1 : (sum * sum) / (n * squares)
}
