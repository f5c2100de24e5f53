// The test doubles of rx-consul-semaphore/testing emit states that JSON.stringify writes, as the
// real contenders' are: the fencing token as its decimal string, the bigint kept in the state.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { of } from 'rxjs'
import { fakeLeaderElection, fakeSemaphore } from '../../src/testing/index.js'

/** Every state through JSON, checked against its token; returns how many held one. */
function tokensRoundTrip(states: readonly { readonly fencingToken: bigint | undefined }[]): number {
  let withToken = 0
  for (const state of states) {
    const parsed = JSON.parse(JSON.stringify(state)) as { fencingToken?: unknown }
    if (state.fencingToken === undefined) {
      assert.equal(parsed.fencingToken, undefined)
    } else {
      withToken += 1
      assert.equal(parsed.fencingToken, state.fencingToken.toString(10))
    }
  }
  return withToken
}

describe('the test doubles emit states JSON.stringify writes', () => {
  it('fakeSemaphore: every state of an acquire, a re-acquire and a release', async () => {
    const token = 18_446_744_073_709_551_610n // near 2^64: a Number would round it
    const sem = fakeSemaphore({
      holding: of(true, false, true),
      limit: 2,
      firstFencingToken: token,
    })
    const states: { readonly fencingToken: bigint | undefined }[] = []
    const sub = sem.state$.subscribe((s) => states.push(s))
    await sem.close()
    sub.unsubscribe()
    assert.equal(tokensRoundTrip(states), 2)
    assert.ok(states.some((s) => s.fencingToken === token + 1n))
  })

  it('fakeLeaderElection: every state, and its leader$ values', async () => {
    const election = fakeLeaderElection({ holding: of(true, false) })
    const states: { readonly fencingToken: bigint | undefined }[] = []
    const sub = election.state$.subscribe((s) => states.push(s))
    const leaders: unknown[] = []
    const leaderSub = election.leader$.subscribe((l) => leaders.push(l))
    await election.close()
    sub.unsubscribe()
    leaderSub.unsubscribe()
    assert.equal(tokensRoundTrip(states), 1)
    for (const leader of leaders) assert.deepEqual(JSON.parse(JSON.stringify(leader)), leader)
  })
})
