/**
 * What the operator calls (`evict`, `drain`, `liftDrain`) share: the process's default client
 * when none is given, each Consul call retried on transient failures as every write of the
 * library is, an abort that ends the call in flight or the wait before its retry, and Consul's
 * permanent failures as SemaphoreErrors.
 */
import type * as TE from 'fp-ts/lib/TaskEither.js'
import {
  NEVER,
  asyncScheduler,
  firstValueFrom,
  fromEvent,
  mergeMap,
  raceWith,
  throwError,
  type Observable,
} from 'rxjs'
import type { ConsulClient } from './consul/client-api.js'
import { acquireDefaultClient } from './consul/default-client.js'
import type { ConsulError } from './consul/errors.js'
import { fromCall, isConsulError, orThrow, retryTransient } from './effects/call-policy.js'
import { abortedError, fromConsulError } from './errors.js'

/** One Consul call of an operator command, run to its answer. */
export type OperatorCall = <A>(
  run: (signal: AbortSignal) => TE.TaskEither<ConsulError, A>,
) => Promise<A>

/** The calls of one operator command, and the abort check between them. */
export interface OperatorCalls {
  /** Runs one call: transient failures retried, an abort ends it at once. */
  readonly call: OperatorCall
  /** Throws SemaphoreError 'Aborted' when the signal has fired. */
  readonly checkAborted: () => void
}

/**
 * Runs `work` with `consul`, or with the process's shared default client (released afterwards)
 * when it is undefined; a ConsulError it throws becomes a SemaphoreError whose message starts
 * with `doing`.
 *
 * @example
 * await withOperatorClient(undefined, undefined, 'evicting a holder', async (client, calls) =>
 *   calls.call((signal) => client.kv.get('svc/jobs/.lock', { signal })),
 * )
 * @param consul - The caller's client, if any.
 * @param signal - The caller's signal, if any.
 * @param doing - What the command does, leading its error messages.
 * @param work - The command.
 * @returns What `work` returns.
 */
export async function withOperatorClient<A>(
  consul: ConsulClient | undefined,
  signal: AbortSignal | undefined,
  doing: string,
  work: (client: ConsulClient, calls: OperatorCalls) => Promise<A>,
): Promise<A> {
  const lease = consul === undefined ? acquireDefaultClient() : undefined
  const client = consul ?? (lease as NonNullable<typeof lease>).client
  try {
    return await work(client, operatorCalls(signal, doing))
  } catch (error) {
    throw isConsulError(error) ? fromConsulError(error, doing) : error
  } finally {
    await lease?.release()
  }
}

function operatorCalls(signal: AbortSignal | undefined, doing: string): OperatorCalls {
  const aborted$: Observable<never> =
    signal === undefined
      ? NEVER
      : fromEvent(signal, 'abort').pipe(
          mergeMap(() => throwError(() => abortedError(signal, doing))),
        )
  return {
    call: (run) =>
      firstValueFrom(
        fromCall(run).pipe(mergeMap(orThrow), retryTransient(asyncScheduler), raceWith(aborted$)),
      ),
    checkAborted: () => {
      if (signal?.aborted === true) throw abortedError(signal, doing)
    },
  }
}
