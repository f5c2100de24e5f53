// A long poll that left before the network failed may never be answered; when the client hears
// the agent again, watchPrefix replaces it. The replacement reads at once (consistent), as after any
// failure: while the network was away the agent may have lost its state, and a poll blocking on the
// old index would wait out its whole wait on an agent whose index is far below it. A stub client
// (watchStub) records each poll and lets the test say when the network failed and recovered.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { WatchEvent } from '../../src/base/kv-snapshot.js'
import { watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy } from '../support/consul-double.js'
import { watchStub } from '../support/watch-stub.js'

describe('watchPrefix: a poll the network silenced', () => {
  it('is replaced by a consistent read at once, which emits an index that went back as a reset', async () => {
    const scheduler = new VirtualTimeScheduler()
    const stub = watchStub()
    const events: WatchEvent[] = []
    const subscription = watchPrefix(stub.client, 'p/', {
      scheduler,
      random: () => 0.5,
      minIntervalMs: 0,
    }).subscribe((event) => events.push(event))
    stub.answer(E.right({ index: 500n, entries: [] }))
    await advanceBy(scheduler, 10)
    assert.deepEqual(stub.polls, ['read -', 'block 500 -'])

    // The poll blocking on 500 is swallowed; another call times out; the agent answers again.
    stub.fail()
    stub.recover()
    await advanceBy(scheduler, 10)
    assert.deepEqual(stub.polls, ['read -', 'block 500 -', 'read consistent'])

    // The agent lost its state meanwhile: its index is back near 1.
    stub.answer(E.right({ index: 3n, entries: [] }))
    await advanceBy(scheduler, 10)
    assert.deepEqual(
      events.map((e) =>
        e.type === 'snapshot' ? `${e.snapshot.index}${e.reset ? ' reset' : ''}` : e.type,
      ),
      ['500', '3 reset'],
    )
    assert.deepEqual(stub.polls.at(-1), 'block 3 -')
    subscription.unsubscribe()
  })

  it('emits nothing when the read finds the index unchanged, and blocks on it again', async () => {
    const scheduler = new VirtualTimeScheduler()
    const stub = watchStub()
    const events: WatchEvent[] = []
    const subscription = watchPrefix(stub.client, 'p/', {
      scheduler,
      random: () => 0.5,
      minIntervalMs: 0,
    }).subscribe((event) => events.push(event))
    stub.answer(E.right({ index: 500n, entries: [] }))
    await advanceBy(scheduler, 10)
    stub.fail()
    stub.recover()
    await advanceBy(scheduler, 10)
    stub.answer(E.right({ index: 500n, entries: [] }))
    await advanceBy(scheduler, 10)
    assert.equal(events.length, 1)
    assert.deepEqual(stub.polls, ['read -', 'block 500 -', 'read consistent', 'block 500 -'])
    subscription.unsubscribe()
  })
})
