import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import { releaseFromLockBody } from '../../src/core/lock-body/release-from-lock-body.js'
import { contenderEntry, lockEntry, snapshotOf, text } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const options = { prefix, session: 'me' }

describe('releaseFromLockBody', () => {
  it('should remove only this session, keep the shape and CAS on the ModifyIndex', () => {
    const lock = lockEntry(prefix, '{"limit":3,"holders":["a","me","dead"]}', 40n)
    const release = releaseFromLockBody(
      snapshotOf([lock, contenderEntry(prefix, 'a', 1n)]),
      options,
    )
    assert.equal(release.type, 'WriteRelease')
    assert.ok(release.type === 'WriteRelease')
    assert.equal(text(release.body), '{"limit":3,"holders":["a","dead"]}')
    assert.equal(release.cas, 40n)
  })

  it('should write nothing when .lock does not list this session or does not exist', () => {
    const lock = lockEntry(prefix, '{"Limit":3,"Holders":{"a":true}}', 40n)
    assert.deepEqual(releaseFromLockBody(snapshotOf([lock]), options), { type: 'NotListed' })
    assert.deepEqual(releaseFromLockBody(snapshotOf([]), options), { type: 'NotListed' })
  })

  it('should let a holder leave a .lock whose limit an operator changed, keeping the new limit', () => {
    const lock = lockEntry(prefix, '{"Limit":5,"Holders":{"a":true,"me":true}}', 41n)
    const release = releaseFromLockBody(snapshotOf([lock]), options)
    assert.ok(release.type === 'WriteRelease', release.type)
    assert.equal(text(release.body), '{"Limit":5,"Holders":{"a":true}}')
    assert.equal(release.cas, 41n)
  })

  it('should never write over a .lock of another tool', () => {
    const lock = lockEntry(prefix, '{"Limit":3,"Holders":{"me":true}}', 40n, { flags: LOCK_FLAGS })
    assert.equal(releaseFromLockBody(snapshotOf([lock]), options).type, 'Conflict')
  })
})
