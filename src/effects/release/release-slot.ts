import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { lockKey } from '../../core/keys/lock-key.js'
import type { ReleaseAnswer, ReleaseCall } from '../../core/release/release-call.js'
import type { SharedView } from '../../core/semaphore/view-cache.js'
import type { FreshLock } from '../fresh-lock.js'
import {
  releaseNext,
  releaseStart,
  type ReleaseInput,
  type ReleaseOutcome,
} from '../../core/release/release-slot-plan.js'
import { runReleasePlan, type ReleaseDriverOptions } from './release-driver.js'

/** What `releaseSlot` needs: the plan's input and the driver's client, scheduler and jitter. */
export interface ReleaseSlotOptions extends ReleaseInput, ReleaseDriverOptions {
  /**
   * The freshest `.lock` of the process on the prefix: told what the release's writes and reads
   * of `.lock` answer, and asked, after a lost CAS, whether a newer `.lock` is known.
   */
  readonly fresh?: FreshLock | undefined
  /** The view of a snapshot (the prefix's view cache), for what `fresh` gives. */
  readonly view?: ((snapshot: KVSnapshot) => SharedView) | undefined
}

/**
 * Gives a semaphore slot back and leaves Consul clean: runs the release plan (`releaseStart`, in
 * the core, which makes every choice: hand-off or plain, hint or read, retries, giving up) on the
 * client, its waits on the scheduler. The session is destroyed at the end, unless `keepSession`
 * asked to keep it and the slot went back cleanly (the outcome then says `sessionKept`).
 *
 * @example
 * const result = await releaseSlot({ client, prefix: 'svc/lock', session, limit: 3 })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right with how the slot went back (`HandedOff` names the heir) when the session and its contender key are gone (and `.lock` no longer lists it,
 *   or lists a session every acquirer prunes); Left with the error that stopped it (the session
 *   is still destroyed when Consul lets it be; otherwise it expires by its TTL, and others prune
 *   it).
 */
export async function releaseSlot(
  options: ReleaseSlotOptions,
): Promise<E.Either<ConsulError, ReleaseOutcome>> {
  const { fresh } = options
  if (fresh === undefined) return runReleasePlan(releaseStart(options), releaseNext, options)
  const lock = lockKey(options.prefix)
  return runReleasePlan(releaseStart(options), releaseNext, {
    ...options,
    writes: {
      observe: (call) => told(fresh, lock, call),
      latest: () => {
        const snapshot = fresh.latestFrom(options.hint)
        return snapshot && { snapshot, view: options.view?.(snapshot) }
      },
      request: (granted) => fresh.request(granted),
      stale: (ops) => fresh.stale(ops),
    },
  })
}

/** Where the answer of a call to `.lock` goes: a transaction's or a read's, into `fresh`. */
function told(
  fresh: FreshLock,
  lock: string,
  call: ReleaseCall,
): ((answer: ReleaseAnswer) => void) | undefined {
  if (call.type !== 'txn' && !(call.type === 'get' && call.key === lock)) return undefined
  const feed = fresh.sending()
  return (answer) => {
    if (answer.type === 'txn' && call.type === 'txn' && E.isRight(answer.result)) {
      feed.txn(call.ops, answer.result.right)
    } else if (answer.type === 'get' && E.isRight(answer.result)) feed.lock(answer.result.right)
  }
}
