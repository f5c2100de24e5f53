/** Holders split into the living and the dead, both in listed order. */
export interface PrunedHolders {
  readonly liveHolders: readonly string[]
  readonly deadHolders: readonly string[]
}

/**
 * Splits the holders listed in `.lock` into live ones (their session still locks a key of the
 * prefix) and dead ones, which are left out of the next write (Consul's semaphore guide: "Any of
 * the Holders that are not in that set are pruned").
 *
 * @example
 * pruneHolders(['a', 'b'], new Set(['a'])) // { liveHolders: ['a'], deadHolders: ['b'] }
 * @param holders - The holders listed in `.lock`, in order.
 * @param live - The live sessions of the listing (`liveSessions`).
 * @param unjudged - Holders the listing cannot judge, kept whatever it shows: those that a `.lock`
 *   newer than the listing lists and the listing's own `.lock` did not (`freshestPrefix`), whose
 *   keys may be newer than the listing.
 * @returns The live and dead holders, in listed order.
 */
export function pruneHolders(
  holders: readonly string[],
  live: Pick<ReadonlySet<string>, 'has'>,
  unjudged?: ReadonlySet<string>,
): PrunedHolders {
  const liveHolders: string[] = []
  const deadHolders: string[] = []
  for (let i = 0; i < holders.length; i++) {
    const holder = holders[i] as string
    const alive = live.has(holder) || unjudged?.has(holder) === true
    ;(alive ? liveHolders : deadHolders).push(holder)
  }
  return { liveHolders, deadHolders }
}
