// Small helpers shared by the Consul layer's integration tests.
import assert from 'node:assert/strict'
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { Observable, Subscription } from 'rxjs'
import type { ConsulError } from '../../src/base/consul-error.js'
import type { KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'

/** Runs the task and returns its success, failing the test with the ConsulError otherwise. */
export async function ok<A>(task: TE.TaskEither<ConsulError, A>): Promise<A> {
  const result = await task()
  if (E.isLeft(result))
    assert.fail(`expected success, got ${result.left._tag}: ${result.left.message}`)
  return result.right
}

/** Runs the task and returns its ConsulError, failing the test if it succeeded. */
export async function failure(task: TE.TaskEither<ConsulError, unknown>): Promise<ConsulError> {
  const result = await task()
  if (E.isRight(result)) assert.fail(`expected a ConsulError, got ${String(result.right)}`)
  return result.left
}

/** The bytes of a value as UTF-8 text (null stays null). */
export function utf8(bytes: Uint8Array | null | undefined): string | null {
  return bytes === null || bytes === undefined ? null : Buffer.from(bytes).toString('utf8')
}

/** JSON of an error with bigints written as strings: what a log line would show. */
export function errorJson(error: ConsulError): string {
  return JSON.stringify(error, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))
}

/** Resolves once `condition()` holds; fails the test after `withinMs`. */
export async function until(
  condition: () => boolean,
  what: string,
  withinMs = 5000,
): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out after ${withinMs} ms waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 10))
  }
}

/** Subscribes to a watch and records what it emits. */
export function record(events$: Observable<WatchEvent>): {
  readonly events: WatchEvent[]
  readonly snapshots: () => KVSnapshot[]
  readonly disconnects: () => Extract<WatchEvent, { type: 'disconnected' }>[]
  readonly error: () => unknown
  readonly subscription: Subscription
} {
  const events: WatchEvent[] = []
  let error: unknown
  const subscription = events$.subscribe({
    next: (event) => events.push(event),
    error: (e: unknown) => (error = e),
  })
  return {
    events,
    snapshots: () => events.flatMap((e) => (e.type === 'snapshot' ? [e.snapshot] : [])),
    disconnects: () => events.flatMap((e) => (e.type === 'disconnected' ? [e] : [])),
    error: () => error,
    subscription,
  }
}

/** The keys of a snapshot. */
export const keysOf = (snapshot: KVSnapshot | undefined): string[] =>
  snapshot?.entries.map((e) => e.key) ?? []
