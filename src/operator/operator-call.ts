/**
 * What the operator calls (`setLimit`, `evict`, `drain`, `liftDrain`) share: the process's
 * default client when none is given, each Consul call retried on transient failures as every
 * write of the library is, an abort that ends the call in flight or the wait before its retry,
 * Consul's permanent failures as SemaphoreErrors, and the end of their check-and-set loops on
 * `.lock` (a refusal, or `.lock` changing under every try).
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
import type { ConsulClient } from '../consul/client-api.js'
import { borrowDefaultClient } from '../consul/default-client.js'
import type { ConsulError } from '../base/consul-error.js'
import { fromCall, isConsulError, orThrow, retryTransient } from '../effects/call-policy.js'
import {
  SemaphoreError,
  abortedError,
  fromConsulError,
  permissionHint,
} from '../base/semaphore-error.js'
import { sentences } from '../base/sentences.js'

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
 * const what = { doing: 'evicting a holder', prefix: 'svc/jobs' }
 * await withOperatorClient(undefined, undefined, what, async (client, calls) =>
 *   calls.call((signal) => client.kv.get('svc/jobs/.lock', { signal })),
 * )
 * @param consul - The caller's client, if any.
 * @param signal - The caller's signal, if any.
 * @param what - What the command does, leading its error messages, and the prefix it works on.
 * @param work - The command.
 * @returns What `work` returns.
 */
export async function withOperatorClient<A>(
  consul: ConsulClient | undefined,
  signal: AbortSignal | undefined,
  { doing, prefix }: { readonly doing: string; readonly prefix: string },
  work: (client: ConsulClient, calls: OperatorCalls) => Promise<A>,
): Promise<A> {
  const borrowed = consul === undefined ? borrowDefaultClient() : undefined
  const client = consul ?? (borrowed as NonNullable<typeof borrowed>).client
  try {
    return await work(client, operatorCalls(signal, doing))
  } catch (error) {
    throw isConsulError(error) ? fromConsulError(error, doing, prefix) : error
  } finally {
    await borrowed?.release()
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

/** CAS writes of `.lock` lost to other writers before an operator command gives up on it. */
export const CAS_ATTEMPTS = 10

/**
 * Throws PermissionDenied when Consul rolled a transaction back because the ACL token may not
 * write; any other rollback is left to the caller (a lost CAS: read again).
 *
 * @example
 * if (!answer.committed) throwIfRefused(answer.errors, 'evicting a holder', 'svc/jobs/.lock', 'svc/jobs')
 * @param errors - The rolled-back transaction's errors.
 * @param doing - What the command does, leading the message.
 * @param target - What it wrote, as the message names it.
 * @param prefix - The prefix it wrote under, which the policy hint names.
 */
export function throwIfRefused(
  errors: readonly { readonly what: string }[],
  doing: string,
  target: string,
  prefix: string,
): void {
  const what = errors.map((e) => e.what).join('; ')
  if (/permission denied/i.test(what)) {
    throw new SemaphoreError(
      'PermissionDenied',
      sentences(
        `${doing}: Consul refused the write of ${target} (${what})`,
        permissionHint(prefix),
      ),
    )
  }
}

/**
 * The error of a `.lock` that changed under each of `CAS_ATTEMPTS` tries: nothing was written.
 *
 * @example
 * throw churnError('svc/jobs/.lock', 'set its limit')
 * @param key - The `.lock` key.
 * @param what - What each try was for, after "tries to".
 * @returns The SemaphoreError ('Consul') to throw.
 */
export function churnError(key: string, what: string): SemaphoreError {
  return new SemaphoreError(
    'Consul',
    `${key} changed under each of ${CAS_ATTEMPTS} tries to ${what} (contenders acquiring and ` +
      'releasing all the time); nothing was written. Try again.',
  )
}
