/**
 * The start-up check of `rxsem run`: the library retries transient Consul failures up to its
 * start-up timeout (right for a service whose agent may start a little later), but a command line
 * started against a wrong address should say so at once. One read of the prefix's `.lock` key
 * proves the address (an agent, and not another server), the TLS settings and the token's read
 * permission.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../consul/client-api.js'
import type { ConsulError } from '../consul/errors.js'
import { lockKey } from '../core/keys/lock-key.js'

/**
 * Reads `<prefix>/.lock` once.
 *
 * @returns Nothing when Consul answered (whatever the key holds), else the error to report: any
 *   failure at start is fatal, the transient ones included.
 */
export async function checkReachable(
  client: Pick<ConsulClient, 'kv'>,
  prefix: string,
): Promise<ConsulError | undefined> {
  const answer = await client.kv.get(lockKey(prefix))()
  return E.isLeft(answer) ? answer.left : undefined
}
