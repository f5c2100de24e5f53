// The single-key lock's release as a plan: `?release=` with the same value and flags, then the
// session destroy, whatever the release answered.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import {
  leaderKeyReleaseNext,
  leaderKeyReleaseStart,
} from '../../src/core/release/leader-key-release-plan.js'
import { answer, failure, play } from '../support/release-script.js'

const start = () => leaderKeyReleaseStart({ prefix: 'svc/leader', session: 'me', value: 'node-a' })
const release = 'put svc/leader/.lock node-a release=me flags=LOCK'

describe('leaderKeyReleaseStart / leaderKeyReleaseNext', () => {
  it('should release the key with its value and LOCK_FLAGS, then destroy the session', () => {
    const { calls, result } = play(start(), leaderKeyReleaseNext, [
      answer.put(true),
      answer.destroyed(),
    ])
    assert.deepEqual(calls, [release, 'destroy me'])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should say NotHeld when the key was not this session’s, and destroy all the same', () => {
    const { calls, result } = play(start(), leaderKeyReleaseNext, [
      answer.put(false),
      answer.destroyed(),
    ])
    assert.deepEqual(calls, [release, 'destroy me'])
    assert.deepEqual(result, E.right({ type: 'NotHeld' }))
  })

  it('should try the release again after a transient failure', () => {
    const { calls, result } = play(start(), leaderKeyReleaseNext, [
      answer.failed('put', failure.server()),
      answer.waited(),
      answer.put(true),
      answer.destroyed(),
    ])
    assert.deepEqual(calls, [release, 'wait 100ms', release, 'destroy me'])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should destroy the session after a release that failed for good, and answer that failure', () => {
    const { calls, result } = play(start(), leaderKeyReleaseNext, [
      answer.failed('put', failure.denied()),
      answer.failed('destroy', failure.badRequest()),
    ])
    assert.deepEqual(calls, [release, 'destroy me'])
    assert.deepEqual(result, E.left(failure.denied()))
  })

  it('should answer the destroy’s failure after a release', () => {
    const { result } = play(start(), leaderKeyReleaseNext, [
      answer.put(true),
      answer.failed('destroy', failure.badRequest()),
    ])
    assert.deepEqual(result, E.left(failure.badRequest()))
  })
})
