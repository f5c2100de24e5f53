// A stub of the client a watch needs (`kv.list`, `network`), for virtual-time tests of
// watchPrefix: each listing waits until the test answers it, and the test fails the network and
// brings it back.
import type { ConsulClient, ListOptions } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type * as E from 'fp-ts/lib/Either.js'

export type ListAnswer = E.Either<ConsulError, KVSnapshot>

export interface WatchStub {
  readonly client: Pick<ConsulClient, 'kv' | 'network'>
  /** Each listing as it was asked for: `read <consistency>` or `block <index> <consistency>`. */
  readonly polls: string[]
  /** Answers the listing at `request` (its place in `polls`), by default the last one. */
  answer(value: ListAnswer, request?: number): void
  /** A request failed for the network's sake (the client's `network.failures()` moves). */
  fail(): void
  /** The client hears from the agent again (`network.onRecovered`'s listeners are called). */
  recover(): void
}

/**
 * Makes the stub.
 *
 * @example
 * const stub = watchStub()
 * watchPrefix(stub.client, 'p/', { scheduler }).subscribe()
 * stub.answer(E.right({ index: 5n, entries: [] }))
 * @returns The stub.
 */
export function watchStub(): WatchStub {
  const polls: string[] = []
  const open: ((value: ListAnswer) => void)[] = []
  const listeners = new Set<() => void>()
  let failures = 0
  const list =
    (_prefix: string, options: ListOptions = {}) =>
    () => {
      polls.push(
        options.index === undefined
          ? `read ${options.consistency ?? '-'}`
          : `block ${options.index} ${options.consistency ?? '-'}`,
      )
      return new Promise<ListAnswer>((resolve) => open.push(resolve))
    }
  return {
    client: {
      kv: { list },
      network: {
        failures: () => failures,
        onRecovered: (listener: () => void) => {
          listeners.add(listener)
          return () => listeners.delete(listener)
        },
      },
    } as unknown as Pick<ConsulClient, 'kv' | 'network'>,
    polls,
    answer: (value, request = open.length - 1) => open[request]?.(value),
    fail: () => void failures++,
    recover: () => [...listeners].forEach((listener) => listener()),
  }
}
