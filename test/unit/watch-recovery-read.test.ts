// The read that follows a failure of the watch, or an index that went back, is the one read a
// watch takes as the truth without blocking: right after a Consul leader election the new leader
// may answer it from a state that lacks the last writes it has not applied yet. watchPrefix asks
// for it in `consistent` mode (unless the watch reads `stale`); every other read keeps the mode
// the caller chose. A stub of `kv.list` records what each poll asked for.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient, ListOptions } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import { watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy, httpFailure, unreachable } from '../support/consul-double.js'

type Answer = E.Either<ConsulError, KVSnapshot>
const at = (index: bigint): Answer => E.right({ index, entries: [] })

/**
 * A client whose listings answer `answers` in turn (then never, within the 30 s of virtual time
 * each test runs: less than a blocking read's wait, so the last one is never overdue), recording
 * each poll's mode.
 */
function stubClient(answers: Answer[]): {
  client: Pick<ConsulClient, 'kv' | 'network'>
  polls: string[]
} {
  const polls: string[] = []
  const list =
    (_prefix: string, options: ListOptions = {}) =>
    () => {
      polls.push(`${options.index === undefined ? 'read' : 'block'} ${options.consistency ?? '-'}`)
      const next = answers.shift()
      return next === undefined ? new Promise<Answer>(() => undefined) : Promise.resolve(next)
    }
  return { client: { kv: { list } } as unknown as Pick<ConsulClient, 'kv' | 'network'>, polls }
}

describe('watchPrefix: the read after a failure', () => {
  const watch = async (
    answers: Answer[],
    consistency?: 'default' | 'consistent' | 'stale',
  ): Promise<string[]> => {
    const scheduler = new VirtualTimeScheduler()
    const { client, polls } = stubClient(answers)
    const subscription = watchPrefix(client, 'p/', {
      scheduler,
      random: () => 0.5,
      minIntervalMs: 0,
      ...(consistency === undefined ? {} : { consistency }),
    }).subscribe()
    await advanceBy(scheduler, 30_000)
    subscription.unsubscribe()
    return polls
  }

  it('asks for a consistent read after a failure, then blocks in the mode it was given', async () => {
    const polls = await watch([at(5n), E.left(unreachable()), at(5n)])
    assert.deepEqual(polls, ['read -', 'block -', 'read consistent', 'block -'])
  })

  it('asks again for a consistent read while the leader is not ready for one', async () => {
    const notReady = E.left<ConsulError, KVSnapshot>(
      httpFailure(500, 'Not ready to serve consistent reads', 'GET /v1/kv/p'),
    )
    const polls = await watch([at(5n), E.left(unreachable()), notReady, at(6n)])
    assert.deepEqual(polls, ['read -', 'block -', 'read consistent', 'read consistent', 'block -'])
  })

  it('asks for a consistent read when the index went back, before it emits a reset', async () => {
    const polls = await watch([at(9n), at(4n), at(4n)], 'default')
    assert.deepEqual(polls, ['read default', 'block default', 'read consistent', 'block default'])
  })

  it('keeps stale reads stale when the watch was asked for them', async () => {
    const polls = await watch([at(5n), E.left(unreachable()), at(5n)], 'stale')
    assert.deepEqual(polls, ['read stale', 'block stale', 'read stale', 'block stale'])
  })
})
