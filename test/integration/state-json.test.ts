// Every state the library emits can be logged: JSON.stringify works on it although it carries
// bigints (the fencing token, a waiter's CreateIndex), each written as its decimal string. The
// TypeScript type keeps its bigints, and the states' own keys are unchanged.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { leaderElection, semaphore, setLimit } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { onEnd, testPrefix } from '../support/tracked.js'

/** Each state through JSON and back, checked field by field against the bigints it carries. */
function roundTrips(states: readonly object[]): void {
  for (const state of states) {
    const parsed = JSON.parse(JSON.stringify(state)) as Record<string, unknown>
    const defined = Object.entries(state).filter(([, value]) => value !== undefined)
    assert.deepEqual(
      Object.keys(parsed),
      defined.map(([key]) => key),
      'no toJSON among the fields',
    )
    for (const [key, value] of defined) {
      if (typeof value === 'bigint') {
        assert.equal(parsed[key], value.toString(10), key)
      } else if (key === 'waiting') {
        const waiting = value as readonly { readonly createIndex: bigint }[]
        assert.deepEqual(
          (parsed[key] as { createIndex: unknown }[]).map((w) => w.createIndex),
          waiting.map((w) => w.createIndex.toString(10)),
        )
      } else {
        assert.deepEqual(parsed[key], value, key)
      }
    }
  }
}

describe('states serialize with JSON.stringify', () => {
  const agent = agentSuite()

  it('every semaphore state of a wait, a hold and a release, the token as a decimal string', async (t) => {
    const prefix = testPrefix(t, agent.url, 'state-json')
    const first = semaphore({ prefix, limit: 1, consul: agent.client })
    const second = semaphore({ prefix, limit: 1, consul: agent.client })
    const states: object[] = []
    const subs = [first.state$.subscribe((s) => states.push(s))]
    onEnd(t, async () => {
      for (const sub of subs) sub.unsubscribe()
      await Promise.all([first.close(), second.close()])
    })
    const held = await firstValueFrom(first.state$.pipe(filter((s) => s.holding)))
    subs.push(second.state$.subscribe((s) => states.push(s)))
    // The second waits behind the first: its state lists a waiter, with its CreateIndex.
    await firstValueFrom(second.state$.pipe(filter((s) => s.waiting.length > 0)))
    await setLimit({ prefix, limit: 1, consul: agent.client }).then((change) => {
      assert.equal(
        (JSON.parse(JSON.stringify(change)) as { index: string }).index,
        String(change.index),
      )
    })
    await first.close()
    const next = await firstValueFrom(second.state$.pipe(filter((s) => s.holding)))
    await second.close()

    assert.equal(typeof held.fencingToken, 'bigint', 'the type keeps its bigint')
    assert.ok(
      states.some((s) => 'waiting' in s && (s.waiting as unknown[]).length > 0),
      'a state with a waiter was seen',
    )
    assert.ok(states.includes(held) && states.includes(next))
    roundTrips(states)
    assert.equal(
      (JSON.parse(JSON.stringify(next)) as { fencingToken: string }).fencingToken,
      String(next.fencingToken),
    )
  })

  it('every leader election state and leader$ value', async (t) => {
    const prefix = testPrefix(t, agent.url, 'state-json-leader')
    const election = leaderElection({ prefix, value: 'node-a', consul: agent.client })
    const states: object[] = []
    const leaders: unknown[] = []
    const subs = [
      election.state$.subscribe((s) => states.push(s)),
      election.leader$.subscribe((l) => leaders.push(l)),
    ]
    onEnd(t, async () => {
      for (const sub of subs) sub.unsubscribe()
      await election.close()
    })
    const leading = await firstValueFrom(election.state$.pipe(filter((s) => s.holding)))
    await election.close()
    assert.equal(typeof leading.fencingToken, 'bigint')
    assert.ok(states.length >= 3, `states of the whole tenure: ${states.length}`)
    roundTrips(states)
    for (const leader of leaders) assert.deepEqual(JSON.parse(JSON.stringify(leader)), leader)
  })
})
