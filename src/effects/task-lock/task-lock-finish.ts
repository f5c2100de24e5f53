import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { LOCK_FLAGS } from '../../base/flags.js'

/**
 * What to do with a task key when its task is over: 'release' leaves the key, unheld, as
 * `consul lock` does; 'delete' removes it, but only while this session still holds it.
 *
 * @example
 * ```ts
 * const onDone: TaskKeyFinish = 'delete'
 * tasks$.pipe(exclusive({ keyOf: (task) => `service/jobs/task/${task.id}`, run, onDone }))
 * ```
 */
export type TaskKeyFinish = 'release' | 'delete'

/**
 * Gives a task key back. 'release': `PUT ?release=<session>` with the value it was acquired with
 * and Consul's lock flags (Consul rewrites value and flags on release, consul-http-semantics.md
 * 2.6), which sets no lock-delay. 'delete': a txn `check-session` + `delete`, so that only a key
 * this session still holds is deleted, never one another server took since. Either is a no-op
 * when the session no longer holds the key.
 *
 * @example
 * await finishTaskLock(client, 'jobs/task/7', session, 'server-a', 'delete')
 * @returns Right once done (or nothing was held), Left with the ConsulError.
 */
export async function finishTaskLock(
  client: ConsulClient,
  key: string,
  session: string,
  value: string,
  how: TaskKeyFinish,
): Promise<E.Either<ConsulError, void>> {
  if (how === 'release') {
    const released = await client.kv.put(key, value, { release: session, flags: LOCK_FLAGS })()
    return E.isLeft(released) ? released : E.right(undefined)
  }
  const deleted = await client.kv.txn([
    { verb: 'check-session', key, session },
    { verb: 'delete', key },
  ])()
  // A rolled-back txn means the key is no longer this session's: nothing to delete.
  return E.isLeft(deleted) ? deleted : E.right(undefined)
}
