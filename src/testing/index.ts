/**
 * Test doubles for code that uses rx-consul-semaphore: a `Semaphore` and a `LeaderElection` that
 * follow a stream the test gives them (a marble in a `TestScheduler`) instead of a Consul agent.
 *
 * @example
 * ```ts
 * import { fakeSemaphore } from 'rx-consul-semaphore/testing'
 * const sem = fakeSemaphore({ holding: cold('f--t----f', { t: true, f: false }), limit: 3 })
 * ```
 * @packageDocumentation
 */
export { fakeSemaphore, type FakeSemaphore, type FakeSemaphoreOptions } from './fake-semaphore.js'
export {
  fakeLeaderElection,
  type FakeLeaderElection,
  type FakeLeaderElectionOptions,
} from './fake-leader-election.js'
export type { FakeHolding } from './fake-contender.js'
