import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import { decide } from '../../src/core/semaphore/decide.js'
import type { Decision } from '../../src/core/events.js'
import { expectType } from '../support/expect-decision.js'
import {
  corruptBodies,
  decideScenarios,
  goMapHolderValues,
  options,
  type DecideScenario,
} from '../support/decide-scenarios.js'
import { text } from '../../marbles/support/snapshot.js'

/** The scenario of the table (test/support/decide-scenarios.ts) with this name. */
function scenario(name: string): DecideScenario {
  const found = (decideScenarios as Record<string, DecideScenario>)[name]
  if (found === undefined) throw new Error(`no decide scenario named ${JSON.stringify(name)}`)
  return found
}

/** What `decide` answers in the scenario with this name. */
function decideIn(name: string): Decision {
  const { snapshot, options } = scenario(name)
  return decide(snapshot, options)
}

describe('decide', () => {
  describe('writing .lock', () => {
    it('should create a missing .lock with cas 0 in the Go shape', () => {
      const d = expectType(decideIn('a missing .lock'), 'TryAcquire')
      assert.equal(d.cas, 0n)
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })

    it('should treat an empty .lock value as no holders and CAS on its ModifyIndex', () => {
      const d = expectType(decideIn('an empty .lock value'), 'TryAcquire')
      assert.equal(d.cas, 7n)
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })

    it('should write a go-map .lock back as a go-map with keys sorted by bytes', () => {
      const d = expectType(decideIn('a go-map .lock'), 'TryAcquire')
      assert.equal(text(d.body), '{"Limit":3,"Holders":{"me":true,"zz":true}}')
      assert.equal(d.cas, 40n)
      assert.equal(d.view.shape, 'go-map')
    })

    it('should write a guide-list .lock back as a guide-list, appending to the listed order', () => {
      const d = expectType(decideIn('a guide-list .lock'), 'TryAcquire')
      assert.equal(text(d.body), '{"Limit":3,"Holders":["zz","aa","me"]}')
      assert.equal(d.view.shape, 'guide-list')
    })

    it('should write a java-list .lock back as a java-list, appending to the listed order', () => {
      const d = expectType(decideIn('a java-list .lock'), 'TryAcquire')
      assert.equal(text(d.body), '{"limit":3,"holders":["zz","me"]}')
      assert.equal(d.view.shape, 'java-list')
    })

    it('should accept extra fields and any key order', () => {
      const d = expectType(decideIn('extra fields in any order'), 'TryAcquire')
      assert.equal(text(d.body), '{"Limit":2,"Holders":["a","me"]}')
    })

    it('should treat Holders null as no holders', () => {
      const d = expectType(decideIn('Holders null'), 'TryAcquire')
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })
  })

  describe('flags and limit', () => {
    it('should accept a .lock with flags 0', () => {
      expectType(decideIn('a .lock with flags 0'), 'TryAcquire')
    })

    it('should report a Conflict naming the key and flags of a .lock written by consul lock', () => {
      assert.deepEqual(decideIn('a .lock with the flags of consul lock'), {
        type: 'Conflict',
        key: 'svc/lock/.lock',
        flags: LOCK_FLAGS,
      })
    })

    it('should not judge the flags of contender keys', () => {
      expectType(decideIn('a contender key with the flags of consul lock'), 'TryAcquire')
    })

    it('should report a LimitConflict naming both limits', () => {
      assert.deepEqual(decideIn('a .lock with another limit'), {
        type: 'LimitConflict',
        key: 'svc/lock/.lock',
        lockLimit: 5,
        localLimit: 2,
      })
    })

    it('should keep a holder Held under a .lock whose limit an operator changed', () => {
      expectType(decideIn('a .lock with another limit that lists me'), 'Held')
    })

    it('should take a raised limit when it follows the limit, writing that limit', () => {
      const decision = expectType(decideIn('a raised limit, followed'), 'TryAcquire')
      assert.equal(text(decision.body), '{"Limit":3,"Holders":{"a":true,"b":true,"me":true}}')
      assert.equal(decision.view.limit, 3)
    })

    it('should admit no one while the holders are more than a lowered limit it follows', () => {
      const decision = expectType(decideIn('a limit lowered under its holders, followed'), 'Wait')
      assert.equal(decision.freeSlots, 0)
      assert.equal(decision.view.limit, 1)
    })

    it('should throw a RangeError when the local limit is not a positive integer', () => {
      const { snapshot } = scenario('a missing .lock')
      assert.throws(() => decide(snapshot, { ...options, limit: 0 }), RangeError)
    })
  })

  describe('corrupt .lock', () => {
    for (const [what, , reason] of corruptBodies) {
      it(`should report a CorruptLock naming the key for ${what}`, () => {
        const d = expectType(decideIn(`a corrupt .lock: ${what}`), 'CorruptLock')
        assert.equal(d.key, 'svc/lock/.lock')
        assert.match(d.reason, reason)
      })
    }

    for (const value of goMapHolderValues) {
      it(`should count a go-map holder whose value is ${value} by its key, as consul lock does`, () => {
        const d = expectType(decideIn(`a go-map holder whose value is ${value}`), 'TryAcquire')
        assert.deepEqual(d.view.liveHolders, ['a'])
        assert.equal(text(d.body), '{"Limit":2,"Holders":{"a":true,"me":true}}')
      })
    }

    it('should let live holders with false and null values fill the slots, as consul lock does', () => {
      const d = expectType(decideIn('live holders with false and null values'), 'Wait')
      assert.equal(d.freeSlots, 0)
    })
  })

  describe('holders and contenders', () => {
    it('should say Held when the session is a live holder', () => {
      expectType(decideIn('a live holder'), 'Held')
    })

    it('should say NotContending when the contender key is missing', () => {
      expectType(decideIn('a missing contender key'), 'NotContending')
    })

    it('should say NotContending when the contender key is not locked by the session', () => {
      expectType(decideIn('a contender key locked by nobody'), 'NotContending')
    })

    it('should prune a holder whose contender key disappeared, leaving it out of the body', () => {
      const d = expectType(decideIn('a holder whose contender key disappeared'), 'TryAcquire')
      assert.deepEqual(d.view.liveHolders, ['a'])
      assert.deepEqual(d.view.deadHolders, ['gone'])
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"a":true,"me":true}}')
    })

    it('should wait with no free slot when the live holders fill the limit', () => {
      const d = expectType(decideIn('live holders filling the limit'), 'Wait')
      assert.equal(d.freeSlots, 0)
      assert.equal(d.rank, 0)
    })

    it('should let only the first ranked of two waiters try for one slot', () => {
      expectType(decideIn('the first of two waiters for one slot'), 'TryAcquire')
      const d = expectType(decideIn('the second of two waiters for one slot'), 'Wait')
      assert.equal(d.rank, 1)
      assert.equal(d.freeSlots, 1)
    })

    it('should let only the first in line try when two slots are free, then the next one', () => {
      expectType(decideIn('the first of two waiters for two slots'), 'TryAcquire')
      const d = expectType(decideIn('the second of two waiters for two slots'), 'Wait')
      assert.equal(d.rank, 1)
      assert.equal(d.freeSlots, 2)
      // The first one's CAS shows: the second is first in line for the slot still free.
      const after = expectType(
        decideIn('the second of two waiters once the first holds one of two slots'),
        'TryAcquire',
      )
      assert.equal(after.cas, 41n)
    })

    it('should rank waiters with the same CreateIndex by key', () => {
      const d = expectType(decideIn('waiters with the same CreateIndex'), 'Wait')
      assert.equal(d.rank, 1)
      assert.deepEqual(
        d.view.waiting.map((w) => w.session),
        ['a', 'b'],
      )
    })

    it('should let every waiter try when fairness is off', () => {
      expectType(decideIn('the second in line with fairness off'), 'TryAcquire')
    })

    it('should let a waiter try regardless of rank when asked to ignore it', () => {
      expectType(decideIn('the second in line ignoring its rank'), 'TryAcquire')
    })

    it('should count as contenders only direct children locked by their own session', () => {
      const d = expectType(
        decideIn('keys that are not direct children locked by their own session'),
        'TryAcquire',
      )
      assert.deepEqual(
        d.view.waiting.map((w) => w.session),
        ['me'],
      )
    })

    it('should build keys like Go path.Join from a prefix with a trailing slash', () => {
      const d = decideIn('a prefix with a trailing slash')
      expectType(d, 'TryAcquire')
    })
  })
})
