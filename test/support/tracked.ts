// What a test keeps for its length, cleaned up when it ends, passed or failed: a contender kept
// subscribed (and its states waited for), a Subscription, a handle with close(), a child process,
// and a KV prefix (testPrefix). A clean-up at the end of a test's body is skipped when an
// assertion throws; these are not.
//
// Every clean-up goes on one stack per test (or per suite, `suiteScope()`), run by one `after`
// hook that the first of them registers: last registered, first run, so what was taken first (the
// prefix) is cleaned up after what was built on it (the contenders writing under it). All of them
// run even when one throws; the errors are thrown together afterwards. A hook the test registers
// itself with `t.after` after the first of these runs after the whole stack, so a test registers
// any other clean-up with `onEnd(t, fn)`, on the same stack.
import type { ChildProcess } from 'node:child_process'
import { after } from 'node:test'
import { ReplaySubject, filter, firstValueFrom, type Observable, type Unsubscribable } from 'rxjs'
import type { ConsulClient, SemaphoreState } from '../../src/index.js'
import { uniquePrefix } from './consul-agent.js'
import { clearPrefix, holdersOf } from './observe.js'
import { killTree } from './processes.js'

/** Where clean-ups are registered: a test's context `t`, or a describe's `suiteScope()`. */
export interface Scope {
  readonly after: (fn: () => unknown) => void
}

const stacks = new WeakMap<Scope, (() => unknown)[]>()

/**
 * Runs `clean` when the test (or suite) of `scope` ends, however it ends, before the clean-ups
 * registered earlier through this module (see the file's comment for the order).
 */
export function onEnd(scope: Scope, clean: () => unknown): void {
  const stack = stacks.get(scope)
  if (stack !== undefined) stack.push(clean)
  else scope.after(runs(scope, [clean]))
}

/** Registers `stack` as the clean-ups of `scope`; returns the hook that runs them, last first. */
function runs(scope: Scope, stack: (() => unknown)[]): () => Promise<void> {
  stacks.set(scope, stack)
  return async () => {
    stacks.delete(scope)
    const errors: unknown[] = []
    for (const each of stack.reverse()) {
      try {
        await each()
      } catch (error) {
        errors.push(error)
      }
    }
    if (errors.length === 1) throw errors[0]
    if (errors.length > 1)
      throw new AggregateError(errors, `${errors.length} clean-ups of the test failed.`)
  }
}

/**
 * A scope for the `describe` whose body calls it: its clean-ups run in one `after` hook of that
 * describe, registered here, where this is called. Call it where that hook should go: above
 * `agentSuite()` (or above the hook that stops the suite's own agent), so that they run while the
 * agent still answers, and below a hook that stops contenders writing under its prefixes.
 *
 * @example
 * ```ts
 * describe('KV calls', () => {
 *   const suite = suiteScope()
 *   const agent = agentSuite()
 *   const prefix = testPrefix(suite, () => agent.url, 'consul-kv')
 * })
 * ```
 */
export function suiteScope(): Scope {
  const scope: Scope = {
    after: () => {
      throw new Error('suiteScope: a clean-up was registered after its suite ended.')
    },
  }
  after(runs(scope, []))
  return scope
}

/** Unsubscribes `subscription` when the test ends; returns it, to unsubscribe earlier too. */
export function keep<S extends Unsubscribable>(scope: Scope, subscription: S): S {
  onEnd(scope, () => subscription.unsubscribe())
  return subscription
}

/** Closes `handle` (a client, a contender, a proxy) when the test ends; returns it. */
export function closing<H extends { close(): unknown }>(scope: Scope, handle: H): H {
  onEnd(scope, () => handle.close())
  return handle
}

/**
 * SIGKILLs `child` and every process below it (killTree) when the test ends, unless it has exited
 * by then; returns it.
 */
export function killing<C extends ChildProcess>(scope: Scope, child: C): C {
  onEnd(scope, () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null)
      killTree(child.pid, 'SIGKILL')
  })
  return child
}

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
  t: Scope,
  sem: { readonly state$: Observable<SemaphoreState>; close(): Promise<void> },
): Tracked {
  const latest = new ReplaySubject<SemaphoreState>(1)
  const sub = sem.state$.subscribe(latest)
  const stop = async (): Promise<void> => {
    sub.unsubscribe()
    await sem.close()
  }
  onEnd(t, stop)
  return { when: (accept) => firstValueFrom(latest.pipe(filter(accept))), stop }
}

/**
 * A KV prefix no other test uses (`uniquePrefix`), cleaned up when the test (or the suite) of
 * `scope` ends, passed or failed: its keys deleted and the sessions that held keys under it
 * destroyed (`clearPrefix`, on the agent at `url`), the clean-up a test's last line would skip when
 * an assertion throws. It runs after the clean-ups registered later here (`keep`, `closing`,
 * `tracked`, ...), so the contenders writing under the prefix are gone first.
 *
 * @param url The agent's `http://host:port`, or a function giving it when the clean-up runs (for a
 *   suite's prefix, taken before the `before` hook that starts or finds the agent).
 *
 * @example
 * ```ts
 * it('acquires a slot', async (t) => {
 *   const prefix = testPrefix(t, agent.url, 'sem')
 *   const sem = closing(t, semaphore({ prefix, limit: 1, consul: agent.client }))
 *   keep(t, sem.holding$.subscribe())
 *   await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
 * })
 * ```
 */
export function testPrefix(scope: Scope, url: string | (() => string), name: string): string {
  const prefix = uniquePrefix(name)
  onEnd(scope, () => clearPrefix(typeof url === 'string' ? url : url(), prefix))
  return prefix
}

/**
 * Watches `prefix` through `consul` until the test ends, and gives the most holders `.lock` listed
 * at once with a live session (one holding a key under the prefix), as Consul showed it.
 */
export function mostLiveListed(t: Scope, consul: ConsulClient, prefix: string): () => number {
  let most = 0
  keep(
    t,
    consul.watchPrefix(`${prefix}/`, { waitMs: 5000 }).subscribe((event) => {
      if (event.type !== 'snapshot') return
      const lock = event.snapshot.entries.find((e) => e.key === `${prefix}/.lock`)
      const live = new Set(event.snapshot.entries.flatMap((e) => (e.session ? [e.session] : [])))
      if (lock?.value) {
        const listed = holdersOf(JSON.parse(Buffer.from(lock.value).toString('utf8')) as unknown)
        most = Math.max(most, listed.filter((s) => live.has(s)).length)
      }
    }),
  )
  return () => most
}
