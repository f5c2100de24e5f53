// One acquisition by the library, as a contender process would do it: want a slot, hold it for
// a while, release it, with every moment logged on the in-process clock.
import type { ConsulClient } from '../src/consul/client-api.js'
import { semaphore } from '../src/recipes/semaphore.js'
import type { HoldEvent } from './pair-handovers.js'

/** Milliseconds on the in-process monotonic clock, comparable across one process's events. */
export const now = (): number => performance.now()

export interface HoldOnceOptions {
  readonly client: ConsulClient
  readonly prefix: string
  readonly limit: number
  readonly who: string
  readonly holdMs: number
  readonly events: HoldEvent[]
  /** now() after which a contender that does not hold yet gives up. */
  readonly deadline: number
}

/**
 * Contends once: `want` when the semaphore is created, `start` when holding$ turns true,
 * `release` the moment close() is called (holding$ turns false at that call). Resolves once the
 * slot is given back in Consul; false if no slot came before the deadline.
 */
export async function holdOnce(options: HoldOnceOptions): Promise<boolean> {
  const { events, who } = options
  events.push({ kind: 'want', who, at: now() })
  const sem = semaphore({
    prefix: options.prefix,
    limit: options.limit,
    consul: options.client,
    value: who,
  })
  let held = false
  let closed: Promise<void> | undefined
  // The release moment is logged right before close(), while still subscribed: unsubscribing
  // first would start the release earlier than the logged moment.
  const release = (): Promise<void> => {
    if (closed === undefined && held) events.push({ kind: 'release', who, at: now() })
    return (closed ??= sem.close())
  }
  try {
    await new Promise<void>((resolve, reject) => {
      const giveUp = setTimeout(resolve, Math.max(0, options.deadline - now()))
      const subscription = sem.holding$.subscribe({
        next: (holding) => {
          if (!holding || held) return
          held = true
          events.push({ kind: 'start', who, at: now() })
          clearTimeout(giveUp)
          setTimeout(() => {
            const done = release()
            subscription.unsubscribe()
            done.then(resolve, reject)
          }, options.holdMs)
        },
        error: (error: unknown) => {
          clearTimeout(giveUp)
          reject(error instanceof Error ? error : new Error(String(error)))
        },
      })
    })
  } finally {
    await release()
  }
  return held
}
