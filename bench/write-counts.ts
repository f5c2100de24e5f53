// What the jobs figures count of a process's requests: the Consul writes (and renewals and reads
// beside). A jobs child (bench/jobs-child.ts) counts each request its HTTP client had answered
// into one of these as it goes, with no request kept and no string made (whatever the counting
// allocated per request, the jobs' RSS and CPU would count too); the parent adds the children's.

/** Consul writes (and renewals, which the target leaves out) that a process sent. */
export interface WriteCounts {
  readonly sessionCreates: number
  readonly sessionDestroys: number
  readonly transactions: number
  /** Transactions the agent rolled back (409): mostly CAS races lost. */
  readonly transactionsLost: number
  readonly kvWrites: number
  readonly renewals: number
  /** Every request, reads included. */
  readonly requests: number
}

type Tally = { -readonly [K in keyof WriteCounts]: number }

/** Counts of nothing yet, to count into with `countRequest`. */
export const noWrites = (): Tally => ({
  sessionCreates: 0,
  sessionDestroys: 0,
  transactions: 0,
  transactionsLost: 0,
  kvWrites: 0,
  renewals: 0,
  requests: 0,
})

/**
 * Counts one request into `tally`.
 *
 * @param method - Its HTTP method.
 * @param path - Its path, with or without the query.
 * @param status - Its answer's status; 0 when it failed without one.
 */
export function countRequest(tally: Tally, method: string, path: string, status: number): void {
  tally.requests++
  if (method === 'PUT') {
    if (path.startsWith('/v1/txn')) {
      tally.transactions++
      if (status === 409) tally.transactionsLost++
    } else if (path.startsWith('/v1/kv/')) tally.kvWrites++
    else if (path.startsWith('/v1/session/create')) tally.sessionCreates++
    else if (path.startsWith('/v1/session/destroy/')) tally.sessionDestroys++
    else if (path.startsWith('/v1/session/renew/')) tally.renewals++
  } else if (method === 'DELETE' && path.startsWith('/v1/kv/')) tally.kvWrites++
}

/** The counts of several processes together. */
export function addWrites(counts: readonly WriteCounts[]): WriteCounts {
  const sum = noWrites()
  for (const c of counts) for (const k of Object.keys(sum) as (keyof Tally)[]) sum[k] += c[k]
  return sum
}

/** The writes among the counts: sessions made and destroyed, transactions and key writes. */
export const writesOf = (w: WriteCounts): number =>
  w.sessionCreates + w.sessionDestroys + w.transactions + w.kvWrites
