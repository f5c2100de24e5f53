// A contender kept subscribed for the length of a test, and its states waited for.
import { ReplaySubject, filter, firstValueFrom, type Observable } from 'rxjs'
import type { SemaphoreState } from '../../src/index.js'

/** A contender a test keeps running: wait for one of its states, or stop it early. */
export interface Tracked {
  /** Resolves the first state, from the latest on, that `accept` accepts. */
  readonly when: (accept: (s: SemaphoreState) => boolean) => Promise<SemaphoreState>
  /** Unsubscribes and closes it (also done when the test ends). */
  readonly stop: () => Promise<void>
}

/**
 * Keeps `sem` subscribed (a contender leaves, and releases, when its last subscriber goes) until
 * the test `t` ends or `stop()`.
 *
 * @example
 * const a = tracked(t, semaphore({ prefix, limit: 1, consul }))
 * await a.when((s) => s.holding)
 */
export function tracked(
  t: { after: (fn: () => unknown) => void },
  sem: { readonly state$: Observable<SemaphoreState>; close(): Promise<void> },
): Tracked {
  const latest = new ReplaySubject<SemaphoreState>(1)
  const sub = sem.state$.subscribe(latest)
  const stop = async (): Promise<void> => {
    sub.unsubscribe()
    await sem.close()
  }
  t.after(stop)
  return { when: (accept) => firstValueFrom(latest.pipe(filter(accept))), stop }
}
