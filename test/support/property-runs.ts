/**
 * fast-check parameters shared by the property tests. A failing property prints its seed, path,
 * shrunk case and the assertion that failed; run the file again with FC_SEED=<seed>
 * FC_PATH=<path> to go straight to that case.
 */
import type fc from 'fast-check'

/** `numRuns` generated cases, or the one case FC_SEED and FC_PATH name. */
export function runs<Ts>(numRuns: number): fc.Parameters<Ts> {
  const seed = process.env.FC_SEED
  const path = process.env.FC_PATH
  const replay = seed === undefined ? {} : { seed: Number(seed), path }
  return { numRuns, includeErrorInReport: true, ...replay }
}
