// Consul answers a blocking read within its wait and a sixteenth more. One still unanswered a
// second after that may have lost its answer on the way (a connection a firewall forgot, an answer
// a middlebox dropped) with no other request failing to say so: watchPrefix then checks the
// prefix with a read that does not block, which stands for the late poll if it answers first. A
// stub client records each request and lets the test answer any of them.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { WatchEvent } from '../../src/base/kv-snapshot.js'
import { OVERDUE_POLL_GRACE_MS, watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy, unreachable } from '../support/consul-double.js'
import { watchStub, type ListAnswer, type WatchStub } from '../support/watch-stub.js'

const at = (index: bigint): ListAnswer => E.right({ index, entries: [] })

const WAIT_MS = 16_000
/** When a blocking read that left at 0 is overdue: its wait, a sixteenth more, and the grace. */
const OVERDUE_AT = WAIT_MS + WAIT_MS / 16 + OVERDUE_POLL_GRACE_MS

/** A watch on the stub, its events as `s<index>` and `d`. */
function watched(consistency?: 'stale'): {
  scheduler: VirtualTimeScheduler
  stub: WatchStub
  events: string[]
  stop: () => void
} {
  const scheduler = new VirtualTimeScheduler()
  const stub = watchStub()
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
    stub.answer(at(5n), 0)
    await advanceBy(scheduler, 0)
    assert.deepEqual(stub.polls, ['read -', 'block 5 -'])

    // Not before it is overdue.
    await advanceBy(scheduler, OVERDUE_AT - 1)
    assert.deepEqual(stub.polls, ['read -', 'block 5 -'])
    await advanceBy(scheduler, 1)
    assert.deepEqual(stub.polls, ['read -', 'block 5 -', 'read consistent'])

    // The check shows a change the late poll never brought: emitted, and the watch blocks on it.
    stub.answer(at(9n), 2)
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's9'])
    assert.deepEqual(stub.polls, ['read -', 'block 5 -', 'read consistent', 'block 9 -'])

    // The late poll's answer, if it ever comes, means nothing now.
    stub.answer(at(7n), 1)
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's9'])
    assert.equal(stub.polls.length, 4)
    stop()
  })

  it('reports nothing when the check fails, and keeps the late poll', async () => {
    const { scheduler, stub, events, stop } = watched()
    stub.answer(at(5n), 0)
    await advanceBy(scheduler, OVERDUE_AT)
    assert.deepEqual(stub.polls, ['read -', 'block 5 -', 'read consistent'])
    stub.answer(E.left(unreachable()), 2)
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5'])
    assert.equal(stub.polls.length, 3)

    // The late poll answers after all: the watch goes on from it.
    stub.answer(at(6n), 1)
    await advanceBy(scheduler, 0)
    assert.deepEqual(events, ['s5', 's6'])
    assert.deepEqual(stub.polls.at(-1), 'block 6 -')
    stop()
  })

  it('sends no check for a poll answered in time', async () => {
    const { scheduler, stub, events, stop } = watched()
    stub.answer(at(5n), 0)
    await advanceBy(scheduler, OVERDUE_AT - 1)
    stub.answer(at(5n), 1) // the wait ran out, nothing changed
    await advanceBy(scheduler, OVERDUE_AT - 1)
    assert.deepEqual(stub.polls, ['read -', 'block 5 -', 'block 5 -'])
    assert.deepEqual(events, ['s5'])
    stop()
  })

  it('checks with a stale read when the watch reads stale', async () => {
    const { scheduler, stub, stop } = watched('stale')
    stub.answer(at(5n), 0)
    await advanceBy(scheduler, OVERDUE_AT)
    assert.deepEqual(stub.polls, ['read stale', 'block 5 stale', 'read stale'])
    stop()
  })
})
