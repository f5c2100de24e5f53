/**
 * The known name nearest to one typed wrongly, for "did you mean ...?": an unknown CLI flag
 * (`--limt`) or an unknown option (`limt`).
 */

/**
 * The name of `known` closest to `typed` by edit distance, when close enough to be a typo (at
 * most a third of the name's letters, at least one), or of which `typed` is the start (three
 * letters or more: `follow` for `follow-limit`).
 *
 * @example
 * nearestName('limt', ['prefix', 'limit']) // 'limit'
 * @param typed - What was given.
 * @param known - The names that exist.
 * @returns The nearest name, or undefined when none is close.
 */
export function nearestName(typed: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined
  for (const name of known) {
    const distance = editDistance(typed.toLowerCase(), name.toLowerCase())
    if (best === undefined || distance < best.distance) best = { name, distance }
  }
  if (best === undefined || typed.length === 0) return undefined
  const bound = Math.max(1, Math.floor(best.name.length / 3))
  if (best.distance <= bound) return best.name
  if (typed.length >= 3) return known.find((name) => name.startsWith(typed))
  return undefined
}

/**
 * Levenshtein distance, with a swap of two neighbouring letters counted as one edit.
 *
 * @example
 * editDistance('limt', 'limit') // 1
 */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  const at = (i: number, j: number): number => rows[i]?.[j] ?? 0
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, at(i - 2, j - 2) + 1)
      }
      const row = rows[i]
      if (row !== undefined) row[j] = d
    }
  }
  return at(a.length, b.length)
}
