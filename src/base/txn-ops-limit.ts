/**
 * How many operations one Consul transaction (`PUT /v1/txn`) may hold, by the version of the
 * agent that takes it: 64 up to Consul 1.13, 128 from 1.14 on. The agent answers 413 to a
 * transaction of more, and applies none of it. Pure: the client reads the version
 * (`src/consul/txn-limit.ts`), this says what it means.
 */
import { compareReleases, parseRelease } from './consul-version.js'

/** The most operations one transaction may hold on every Consul version: 64. */
export const TXN_OPS_EVERY_VERSION = 64

/** The most operations one transaction may hold from Consul 1.14 on: 128. */
export const TXN_OPS_FROM_1_14 = 128

/**
 * The most operations one transaction may hold on an agent of `version` (as its
 * `/v1/agent/self` reports it: `1.8.7`, `1.15.2+ent`, `1.14.0-rc1`): 128 from 1.14 on, else 64.
 * A version that cannot be read, or none, gets 64, which every version takes.
 *
 * @example
 * maxTxnOps('1.13.9') // 64
 * maxTxnOps('1.14.0') // 128
 * maxTxnOps(undefined) // 64
 */
export function maxTxnOps(version: string | undefined): number {
  const release = version === undefined ? undefined : parseRelease(version)
  return release !== undefined && compareReleases(release, [1, 14, 0]) >= 0
    ? TXN_OPS_FROM_1_14
    : TXN_OPS_EVERY_VERSION
}
