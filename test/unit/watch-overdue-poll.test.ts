// Consul answers a blocking read within its wait and a sixteenth more. One still unanswered a
// second after that may have lost its answer on the way (a connection a firewall forgot, an answer
// a middlebox dropped) with no other request failing to say so: watchPrefix then checks the
// prefix with a read that does not block, which stands for the late poll if it answers first. A
// stub client records each request and lets the test answer any of them.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient, ListOptions } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import type { KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'
import { OVERDUE_POLL_GRACE_MS, watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy, unreachable } from '../support/consul-double.js'

type Answer = E.Either<ConsulError, KVSnapshot>
const at = (index: bigint): Answer => E.right({ index, entries: [] })

const WAIT_MS = 16_000
/** When a blocking read that left at 0 is overdue: its wait, a sixteenth more, and the grace. */
const OVERDUE_AT = WAIT_MS + WAIT_MS / 16 + OVERDUE_POLL_GRACE_MS

/** A client whose requests wait until the test answers them, by their place in `requests`. */
function stubClient(): {
  client: Pick<ConsulClient, 'kv' | 'network'>
  requests: string[]
  answer: (request: number, value: Answer) => void
} {
  const requests: string[] = []
  const open: ((value: Answer) => void)[] = []
  const list =
    (_prefix: string, options: ListOptions = {}) =>
    () => {
      requests.push(
        options.index === undefined
          ? `read ${options.consistency ?? '-'}`
          : `block ${options.index} ${options.consistency ?? '-'}`,
      )
      return new Promise<Answer>((resolve) => open.push(resolve))
    }
  return {
    client: { kv: { list } } as unknown as Pick<ConsulClient, 'kv' | 'network'>,
    requests,
    answer: (request, value) => open[request]?.(value),
  }
}

/** A watch on the stub, its events as `s<index>` and `d`. */
function watched(consistency?: 'stale'): {
  scheduler: VirtualTimeScheduler
  stub: ReturnType<typeof stubClient>
  events: string[]
  stop: () => void
} {
  const scheduler = new VirtualTimeScheduler()
  const stub = stubClient()
  const events: string[] = []
  const subscription = watchPrefix(stub.client, 'p/', {
    scheduler,
    random: () => 0.5,
    minIntervalMs: 0,
    waitMs: WAIT_MS,
    ...(consistency === undefined ? {} : { consistency }),
  }).subscribe((event: WatchEvent) =>
    events.push(event.type === 'snapshot' ? `s${event.snapshot.index}` : 'd'),
  )
  return { scheduler, stub, events, stop: () => subscription.unsubscribe() }
}

describe('watchPrefix: a blocking read past its wait', () => {
  it('is checked by a consistent read once overdue, which stands for it when it answers first', async () => {
    const { scheduler, stub, events, stop } = watched()
    stub.answer(0, at(5n))
    await advanceBy(scheduler, 0)
    assert.deepEqual(stub.requests, ['read -', 'block 5 -'])

    // Not before it is overdue.
    await advanceBy(scheduler, OVERDUE_AT - 1)
    assert.deepEqual(stub.requests, ['read -', 'block 5 -'])
    await advanceBy(scheduler, 1)
    assert.deepEqual(stub.requests, ['read -', 'block 5 -', 'read consistent'])

    // The check shows a change the late poll never brought: emitted, and the watch blocks on it.
    stub.answer(2, at(9n))
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's9'])
    assert.deepEqual(stub.requests, ['read -', 'block 5 -', 'read consistent', 'block 9 -'])

    // The late poll's answer, if it ever comes, means nothing now.
    stub.answer(1, at(7n))
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's9'])
    assert.equal(stub.requests.length, 4)
    stop()
  })

  it('reports nothing when the check fails, and keeps the late poll', async () => {
    const { scheduler, stub, events, stop } = watched()
    stub.answer(0, at(5n))
    await advanceBy(scheduler, OVERDUE_AT)
    assert.deepEqual(stub.requests, ['read -', 'block 5 -', 'read consistent'])
    stub.answer(2, E.left(unreachable()))
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5'])
    assert.equal(stub.requests.length, 3)

    // The late poll answers after all: the watch goes on from it.
    stub.answer(1, at(6n))
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's6'])
    assert.deepEqual(stub.requests.at(-1), 'block 6 -')
    stop()
  })

  it('sends no check for a poll answered in time', async () => {
    const { scheduler, stub, events, stop } = watched()
    stub.answer(0, at(5n))
    await advanceBy(scheduler, OVERDUE_AT - 1)
    stub.answer(1, at(5n)) // the wait ran out, nothing changed
    await advanceBy(scheduler, OVERDUE_AT - 1)
    assert.deepEqual(stub.requests, ['read -', 'block 5 -', 'block 5 -'])
    assert.deepEqual(events, ['s5'])
    stop()
  })

  it('checks with a stale read when the watch reads stale', async () => {
    const { scheduler, stub, stop } = watched('stale')
    stub.answer(0, at(5n))
    await advanceBy(scheduler, OVERDUE_AT)
    assert.deepEqual(stub.requests, ['read stale', 'block 5 stale', 'read stale'])
    stop()
  })
})
