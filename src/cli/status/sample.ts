/**
 * `rxsem status --sample <d>`: the prefix watched for a while, so that each waiter can be given
 * an estimated wait from the hand-overs seen meanwhile (one read times nothing: Consul records no
 * time of acquisition).
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { ConsulClient } from '../../consul/client-api.js'
import {
  estimatedWaitMs,
  handOverIntervalMs,
  NO_HAND_OVERS,
  noteHandOvers,
  resumeHandOvers,
  type HandOverLog,
} from '../../core/semaphore/hand-overs.js'
import { prefixStatus, type PrefixStatus } from './prefix-status.js'

/** What a sample saw: the last listing, and the hand-overs timed. */
export interface Sample {
  readonly snapshot: KVSnapshot
  readonly handOvers: HandOverLog
}

/**
 * Watches `prefix` for `ms`, noting each hand-over (a live holder that was not one in the listing
 * before), and answers with the last listing; Left with the failure when no listing came at all.
 *
 * @example
 * const sampled = await samplePrefix(client, 'service/db/lock', 10_000, undefined)
 */
export function samplePrefix(
  client: ConsulClient,
  prefix: string,
  ms: number,
  limit: number | undefined,
): Promise<E.Either<ConsulError | 'no answer', Sample>> {
  return new Promise((resolve) => {
    let last: KVSnapshot | undefined
    let handOvers = NO_HAND_OVERS
    let failure: ConsulError | undefined
    const subscription = client.watchPrefix(`${prefix}/`).subscribe({
      next: (event) => {
        if (event.type === 'disconnected') {
          failure = event.error
          // Holders that appear after a gap may have taken their slots at any time in it.
          handOvers = resumeHandOvers(handOvers)
          return
        }
        last = event.snapshot
        const read = prefixStatus(event.snapshot, prefix, limit)
        if (E.isRight(read)) {
          const live = read.right.holders.filter((h) => h.alive).map((h) => h.session)
          handOvers = noteHandOvers(handOvers, live, Date.now())
        }
      },
      error: (error: ConsulError) => {
        failure = error
        finish()
      },
    })
    const timer = setTimeout(() => finish(), ms)
    function finish(): void {
      clearTimeout(timer)
      subscription.unsubscribe()
      resolve(
        last === undefined
          ? E.left(failure ?? 'no answer')
          : E.right({ snapshot: last, handOvers }),
      )
    }
  })
}

/**
 * The status with each waiter's estimated wait (ms, null before two hand-overs were seen one
 * after the other), from the hand-overs of a sample.
 *
 * @example
 * withEstimates(status, sample.handOvers, Date.now()).waiting?.[0]?.estimatedWaitMs // 1200
 */
export function withEstimates(status: PrefixStatus, log: HandOverLog, now: number): PrefixStatus {
  if (status.waiting === null) return status
  const intervalMs = handOverIntervalMs(log, now)
  return {
    ...status,
    waiting: status.waiting.map((waiter) => ({
      ...waiter,
      estimatedWaitMs: intervalMs === undefined ? null : estimatedWaitMs(waiter.rank, intervalMs),
    })),
  }
}
