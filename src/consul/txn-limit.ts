/**
 * How many operations one transaction may hold on a client's agent: 64 before Consul 1.14, 128
 * from it on (`src/base/txn-ops-limit.ts`). A fact of each client made by `createConsulClient`,
 * read from the agent's version (`GET /v1/agent/self`) the first time a transaction of more than
 * 64 operations is about to be built, and kept for the client's life: a client whose transactions
 * all fit in 64 never asks. A side channel rather than a member of ConsulClient, as the request
 * feed is: the capability interface stays as it is, and any other ConsulClient (a test double, a
 * wrapper) is taken to take 64, which every version does.
 */
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { CallOptions, ConsulClient } from './client-api.js'
import type { ConsulError } from '../base/consul-error.js'
import { agentVersion } from '../base/consul-version.js'
import { isTransient } from '../base/failure-kinds.js'
import { SemaphoreError } from '../base/semaphore-error.js'
import { maxTxnOps, TXN_OPS_EVERY_VERSION, TXN_OPS_FROM_1_14 } from '../base/txn-ops-limit.js'
import { statusError, type Transport } from './http.js'

/** The transaction limit of a client's agent, and where it comes from. */
export interface TxnLimit {
  /** The most operations one transaction may hold. */
  readonly ops: number
  /**
   * Why, as a sentence for messages: "Consul 1.8.7 takes at most 64 operations in one
   * transaction (128 from Consul 1.14 on)", or why the version is unknown and 64 is counted on.
   */
  readonly why: string
  /** The agent's version when it was read, else undefined. */
  readonly version: string | undefined
}

const SELF = 'GET /v1/agent/self'

const everyVersion = (because: string): TxnLimit => ({
  ops: TXN_OPS_EVERY_VERSION,
  why:
    `${because}, so the library counts on ${TXN_OPS_EVERY_VERSION} operations in one transaction, ` +
    `which every Consul version takes (${TXN_OPS_FROM_1_14} from Consul 1.14 on)`,
  version: undefined,
})

/** The limit of an agent that reported `version`. */
function ofVersion(version: string): TxnLimit {
  const ops = maxTxnOps(version)
  return {
    ops,
    why:
      `Consul ${version} takes at most ${ops} operations in one transaction` +
      (ops < TXN_OPS_FROM_1_14 ? ` (${TXN_OPS_FROM_1_14} from Consul 1.14 on)` : ''),
    version,
  }
}

/** A limit read, and whether it holds for the client's life (a transient failure does not). */
interface Read {
  readonly limit: TxnLimit
  readonly final: boolean
}

/** Asks the agent its version; never rejects. */
async function readLimit(transport: Transport): Promise<Read> {
  const answer = await transport.call(
    { method: 'GET', path: '/v1/agent/self' },
    (http): E.Either<ConsulError, string | undefined> => {
      if (http.status !== 200) return E.left(statusError(http))
      try {
        return E.right(agentVersion(JSON.parse(http.body) as unknown))
      } catch {
        return E.right(undefined)
      }
    },
  )()
  if (E.isRight(answer)) {
    return answer.right === undefined
      ? { limit: everyVersion(`the agent's answer to ${SELF} names no version`), final: true }
      : { limit: ofVersion(answer.right), final: true }
  }
  const error = answer.left
  const because =
    error._tag === 'PermissionDenied'
      ? `the agent's version is unknown: the ACL token may not read it (${SELF}: 403; it needs agent:read)`
      : `the agent's version is unknown (${error.message})`
  // Unreachable, a timeout, a 5xx, a closed client: asked again by the next large transaction.
  const final = !isTransient(error) && error._tag !== 'Aborted'
  return { limit: everyVersion(because), final }
}

const lookups = new WeakMap<ConsulClient, () => Promise<TxnLimit>>()

/**
 * @internal Gives `client` (made by createConsulClient on `transport`) its lazily read, cached
 * transaction limit.
 */
export function attachTxnLimit(client: ConsulClient, transport: Transport): void {
  let known: Promise<TxnLimit> | undefined
  lookups.set(client, () => {
    if (known !== undefined) return known
    const reading = readLimit(transport).then((read) => {
      if (!read.final && known === reading) known = undefined
      return read.limit
    })
    known = reading
    return reading
  })
}

/**
 * @internal The most operations one transaction may hold on `client`'s agent, for a transaction of
 * `needed` operations. When they fit in 64, which every version takes, it answers that at once and
 * asks nothing; otherwise the client asks its agent's version once (`GET /v1/agent/self`, shared
 * by the calls that wait for it, kept for the client's life) and answers from it: 128 from Consul
 * 1.14 on, else 64. When the version cannot be read (a token without agent:read, an answer with
 * none, a network failure, a client not made by createConsulClient) it answers 64, and says why;
 * a network failure is not kept, so a later call asks again.
 *
 * @example
 * ```ts
 * const limit = await agentTxnLimit(client, ops.length, { signal })()
 * if (E.isRight(limit) && ops.length > limit.right.ops) throw new Error(limit.right.why)
 * ```
 * @param client - The client that is to send the transaction.
 * @param needed - How many operations the transaction holds.
 * @param options - A signal: when it fires first, the answer is Aborted (the shared request goes
 *   on for the others).
 * @returns The limit; Aborted is the only failure.
 */
export function agentTxnLimit(
  client: ConsulClient,
  needed: number,
  options: CallOptions = {},
): TE.TaskEither<ConsulError, TxnLimit> {
  return () => {
    if (needed <= TXN_OPS_EVERY_VERSION) {
      return Promise.resolve(
        E.right({
          ops: TXN_OPS_EVERY_VERSION,
          why: `every Consul version takes ${TXN_OPS_EVERY_VERSION} operations in one transaction`,
          version: undefined,
        }),
      )
    }
    const lookup = lookups.get(client)
    if (lookup === undefined) {
      return Promise.resolve(
        E.right(
          everyVersion(
            "the client was not made by createConsulClient, so it cannot ask the agent's version",
          ),
        ),
      )
    }
    return untilAborted(lookup(), options.signal)
  }
}

/**
 * @internal The error for a transaction the agent refused as too large (413: it applied none of
 * it), else undefined: SemaphoreError('InvalidOptions') naming what was refused, the agent's own
 * words, the limit the library counted on when it had asked, and what to do.
 *
 * @example
 * const tooLarge = refusedAsTooLarge(error, 'the grant of 66 operations', limit, 'List fewer.')
 * if (tooLarge !== undefined) throw tooLarge
 * @param error - The failure of the transaction.
 * @param what - What was refused, as the message names it.
 * @param limit - The agent's limit, when it was asked for this transaction.
 * @param remedy - The last sentence: what to do instead.
 * @returns The error, or undefined for any other failure.
 */
export function refusedAsTooLarge(
  error: ConsulError,
  what: string,
  limit: TxnLimit | undefined,
  remedy: string,
): SemaphoreError | undefined {
  if (error._tag !== 'BadRequest' || error.status !== 413) return undefined
  return new SemaphoreError(
    'InvalidOptions',
    `Consul refused ${what} (${error.message})` +
      (limit === undefined ? '' : `; the library counted on ${limit.ops}: ${limit.why}`) +
      `. ${remedy}`,
    { cause: error },
  )
}

/** `limit`, or Aborted when `signal` fires first. */
function untilAborted(
  limit: Promise<TxnLimit>,
  signal: AbortSignal | undefined,
): Promise<E.Either<ConsulError, TxnLimit>> {
  const aborted = (): E.Either<ConsulError, TxnLimit> =>
    E.left({ _tag: 'Aborted', request: SELF, message: `${SELF}: aborted by the caller` })
  if (signal === undefined) return limit.then(E.right)
  if (signal.aborted) return Promise.resolve(aborted())
  return new Promise((resolve) => {
    const onAbort = () => resolve(aborted())
    signal.addEventListener('abort', onAbort, { once: true })
    void limit.then((known) => {
      signal.removeEventListener('abort', onAbort)
      resolve(E.right(known))
    })
  })
}
