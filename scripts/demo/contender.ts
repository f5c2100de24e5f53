// One demo contender: a few rounds of "contend, hold the slot for a while of work, give it back".
// Each round is a fresh semaphore(...), as a short-lived job would create one; every change the
// timeline records is a real emission of that semaphore's state$ (holding$ plus its reason/token).
import { setTimeout as sleep } from 'node:timers/promises'
import { semaphore, type ConsulClient } from '../../src/index.js'
import type { Timeline } from './timeline.js'

export interface ContenderPlan {
  readonly name: string
  readonly rounds: number
  /** Milliseconds of "work" per held slot. */
  readonly workMs: () => number
  /** Milliseconds between giving a slot back and contending again. */
  readonly pauseMs: () => number
  /** Milliseconds to wait before the first round, so the queue order is easy to follow. */
  readonly startAfterMs: number
}

export interface Arena {
  readonly client: ConsulClient
  readonly prefix: string
  readonly limit: number
  readonly timeline: Timeline
  /** No new round starts after this many seconds of the timeline. */
  readonly lastRoundStartsBy: number
  /** Aborted on the deadline, on Ctrl-C or when another contender failed: give back and stop. */
  readonly stop: AbortSignal
}

export async function runContender(plan: ContenderPlan, arena: Arena): Promise<void> {
  await sleep(plan.startAfterMs, undefined, { signal: arena.stop }).catch(() => undefined)
  for (let round = 0; round < plan.rounds; round++) {
    if (round > 0) await sleep(plan.pauseMs(), undefined, { signal: arena.stop }).catch(() => {})
    if (arena.stop.aborted || arena.timeline.now() > arena.lastRoundStartsBy) return
    await oneRound(plan.name, plan.workMs(), arena)
  }
}

/** Contends until it has held a slot for `workMs` (or lost it, or was stopped), then closes. */
function oneRound(name: string, workMs: number, arena: Arena): Promise<void> {
  const { timeline } = arena
  const sem = semaphore({
    prefix: arena.prefix,
    limit: arena.limit,
    consul: arena.client,
    value: name,
    sessionName: `rxsem-demo ${name}`,
    ttl: '10s',
  })
  return new Promise<void>((resolve, reject) => {
    let session: string | undefined
    let held = false
    let ending = false
    let work: NodeJS.Timeout | undefined

    const end = (): void => {
      if (ending) return
      ending = true
      clearTimeout(work)
      arena.stop.removeEventListener('abort', end)
      // close() turns holding$ false at once (reason 'released') and resolves once Consul is clean.
      sem.close().then(() => {
        subscription.unsubscribe()
        timeline.roundEnded(name)
        resolve()
      }, reject)
    }

    const subscription = sem.state$.subscribe({
      next: (state) => {
        if (!ending && session === undefined && state.contending && state.session) {
          session = state.session
          timeline.contends(name, session)
        }
        if (state.holding && !held && state.session && state.fencingToken !== undefined) {
          held = true
          timeline.acquired(name, state.fencingToken, state.session)
          work = setTimeout(end, workMs)
        } else if (!state.holding && held) {
          held = false
          timeline.lost(name, state.reason)
          // Lost to someone else (the operator): this round is over, the next one starts afresh.
          end()
        }
      },
      error: (error: unknown) => {
        ending = true
        clearTimeout(work)
        arena.stop.removeEventListener('abort', end)
        const failure = error instanceof Error ? error : new Error(String(error))
        // Still give back whatever Consul holds for this contender; the failure is what counts.
        void sem.close().then(
          () => reject(failure),
          () => reject(failure),
        )
      },
    })
    if (arena.stop.aborted) end()
    else arena.stop.addEventListener('abort', end, { once: true })
  })
}
