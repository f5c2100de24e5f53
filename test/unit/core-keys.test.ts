import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { contenderKey } from '../../src/core/keys/contender-key.js'
import { directChild } from '../../src/core/keys/direct-child.js'
import { joinKey } from '../../src/core/keys/join-key.js'
import { lockKey } from '../../src/core/keys/lock-key.js'

describe('keys', () => {
  it('should join like Go path.Join', () => {
    assert.equal(joinKey('service/db/lock/', '.lock'), 'service/db/lock/.lock')
    assert.equal(joinKey('a//b///', 'c'), 'a/b/c')
    assert.equal(joinKey('a/./b/../c', 'd'), 'a/c/d')
    assert.equal(joinKey('', '.lock'), '.lock')
    assert.equal(joinKey('', ''), '')
    assert.equal(joinKey('../a', 'b'), '../a/b')
  })

  it('should join segments that need no cleaning as they are, and clean every other kind', () => {
    assert.equal(joinKey('svc/lock', '.lock'), 'svc/lock/.lock')
    assert.equal(joinKey('svc', '', 'a...b', '...'), 'svc/a...b/...')
    assert.equal(joinKey('/svc', 'a'), '/svc/a')
    assert.equal(joinKey('svc/', 'a'), 'svc/a')
    assert.equal(joinKey('svc', 'a/.'), 'svc/a')
    assert.equal(joinKey('svc', './a'), 'svc/a')
    assert.equal(joinKey('svc/..'), '.')
    assert.equal(joinKey('.'), '.')
  })

  it('should build the lock key and a contender key under the prefix', () => {
    assert.equal(lockKey('svc/lock/'), 'svc/lock/.lock')
    assert.equal(contenderKey('svc//lock', 'abc'), 'svc/lock/abc')
  })

  it('should name direct children only', () => {
    const childOf = directChild('svc/lock/')
    assert.equal(childOf('svc/lock/abc'), 'abc')
    assert.equal(childOf('svc/lock/a/b'), undefined)
    assert.equal(childOf('svc/lockx'), undefined)
    assert.equal(childOf('svc/lock/'), undefined)
    assert.equal(directChild('')('top'), 'top')
  })
})
