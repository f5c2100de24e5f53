// The last state a closed contender reports: it has left the prefix, so it is listed neither among
// the holders nor among the waiters, and a closed leader is no longer shown as the leader.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { filter, firstValueFrom, type Observable } from 'rxjs'
import { leaderElection, semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix, type Scope } from '../support/tracked.js'
import { eventually } from '../support/observe.js'

/** Every state `state$` emits until the test `t` ends, and whether it completed. */
function record<S>(t: Scope, state$: Observable<S>) {
  const seen = { states: [] as S[], completed: false }
  keep(
    t,
    state$.subscribe({ next: (s) => seen.states.push(s), complete: () => (seen.completed = true) }),
  )
  return seen
}

describe('the state of a closed contender', () => {
  const agent = agentSuite()

  it('lists neither the closed holder nor the closed waiter', async (t) => {
    const prefix = testPrefix(t, agent.url, 'closed-state')
    const a = semaphore({ prefix, limit: 1, consul: agent.client })
    const b = semaphore({ prefix, limit: 1, consul: agent.client })
    const seenA = record(t, a.state$)
    const seenB = record(t, b.state$)
    // Either may take the slot first: wait until one holds and the other waits first in line.
    const roles = await eventually(
      'one holding and the other waiting',
      () => {
        const [lastA, lastB] = [seenA.states.at(-1), seenB.states.at(-1)]
        if (lastA?.holding && lastB?.rank === 0)
          return { holder: a, held: seenA, waiter: b, waited: seenB }
        if (lastB?.holding && lastA?.rank === 0)
          return { holder: b, held: seenB, waiter: a, waited: seenA }
        return undefined
      },
      60_000,
    )
    const { holder, held, waiter, waited } = roles
    const holderSession = held.states.at(-1)!.session!
    const waiterSession = waited.states.at(-1)!.session!
    await waiter.close()
    await holder.close()
    assert.ok(held.completed && waited.completed)
    const lastHeld = held.states.at(-1)!
    assert.equal(lastHeld.holding, false)
    assert.ok(!lastHeld.holders.includes(holderSession), `holders ${lastHeld.holders.join()}`)
    assert.equal(lastHeld.contending, false)
    const lastWaited = waited.states.at(-1)!
    assert.ok(!lastWaited.waiting.some((w) => w.session === waiterSession), 'still waiting')
    assert.equal(lastWaited.rank, undefined)
    assert.equal(lastWaited.contending, false)
  })

  it('does not show a closed leader as the leader', async (t) => {
    const prefix = testPrefix(t, agent.url, 'closed-leader')
    const election = leaderElection({ prefix, consul: agent.client, value: 'closing-leader' })
    const seen = record(t, election.state$)
    await firstValueFrom(election.state$.pipe(filter((s) => s.holding)))
    await election.close()
    assert.ok(seen.completed)
    assert.equal(seen.states.at(-1)!.leader, null)
  })
})
