/**
 * How much of the TTL to give up before Consul would: a fixed margin, or a fraction of the TTL.
 * The margin is the time the guarded work has to notice and stop, and it absorbs small
 * differences between the clock rates of this process and the Consul leader (docs/safety.md).
 *
 * @example
 * ```ts
 * const margin: LeaseMargin = { leaseMarginMs: 2000 }
 * leaseDeadline(sentAt, 15_000, margin) // sentAt + 13000
 * ```
 */
export interface LeaseMargin {
  /** Margin in ms; wins over `leaseMarginRatio`. */
  readonly leaseMarginMs?: number | undefined
  /** Margin as a fraction of the TTL, default 0.1 (10%). */
  readonly leaseMarginRatio?: number | undefined
}

/**
 * The scheduler time until which a session's lease is trusted: when the request that created or
 * last renewed it was sent, plus the TTL, minus a safety margin. Counting from the send time (not
 * the answer) keeps the deadline before Consul's own, whatever the network delay.
 *
 * @example
 * ```ts
 * leaseDeadline(1000, 15000, {}) // 14500: 1000 + 15000 - 1500
 * leaseDeadline(1000, 15000, { leaseMarginMs: 3000 }) // 13000
 * ```
 * @param sentAt - Scheduler time the create/renew request was sent.
 * @param ttlMs - The session's TTL in ms.
 * @param margin - The margin options.
 * @returns The lease deadline in scheduler ms.
 */
export function leaseDeadline(sentAt: number, ttlMs: number, margin: LeaseMargin): number {
  return sentAt + ttlMs - (margin.leaseMarginMs ?? ttlMs * (margin.leaseMarginRatio ?? 0.1))
}
