// What a poll of `.lock` as a prefix changes in the last listing (`patchLock`), and when it is
// news at all (`sameLockKeys`): `.lock` and the keys named after it (a revoke request) are replaced
// as the poll found them, and nothing else of the listing is touched.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'
import { patchLock, sameLockKeys } from '../../src/core/leader-key/patch-lock.js'

const prefix = 'svc/leader'
const key = `${prefix}/.lock`
const entry = (name: string, modifyIndex: bigint, session?: string): KVEntry => ({
  key: `${prefix}/${name}`,
  value: null,
  flags: LOCK_FLAGS,
  session,
  lockIndex: 1n,
  createIndex: modifyIndex,
  modifyIndex,
})
const keys = (snapshot: KVSnapshot) =>
  snapshot.entries.map((e) => `${e.key.slice(prefix.length + 1)}@${e.modifyIndex}`)

describe('patchLock and sameLockKeys', () => {
  const listing: KVSnapshot = {
    index: 40n,
    entries: [entry('.lock', 38n, 'b'), entry('.lock.revoke/b', 39n), entry('.queue/a', 36n)],
  }

  it('replaces .lock and the keys named after it, keeps the rest, and keeps the entries sorted', () => {
    const polled = [entry('.lock', 52n)]
    const patched = patchLock(listing, key, polled, 52n)
    assert.deepEqual(keys(patched), ['.lock@52', '.queue/a@36'], 'the request went with the poll')
    assert.equal(patched.index, 52n)
    const asked = patchLock(
      listing,
      key,
      [entry('.lock', 38n, 'b'), entry('.lock.revoke/b', 55n)],
      55n,
    )
    assert.deepEqual(keys(asked), ['.lock@38', '.lock.revoke/b@55', '.queue/a@36'])
    const none = patchLock({ index: 3n, entries: [entry('.queue/a', 2n)] }, key, polled, 1n)
    assert.deepEqual(keys(none), ['.lock@52', '.queue/a@2'])
    assert.equal(none.index, 3n, 'a listing newer than the poll keeps its index')
  })

  it('tells no news when the poll found the same keys at the same indexes', () => {
    const same = [entry('.lock', 38n, 'b'), entry('.lock.revoke/b', 39n)]
    assert.ok(sameLockKeys(listing, key, same))
    assert.ok(!sameLockKeys(listing, key, [entry('.lock', 38n, 'b')]), 'the request went')
    assert.ok(!sameLockKeys(listing, key, [...same, entry('.lock.revoke/c', 60n)]), 'one more')
    assert.ok(!sameLockKeys(listing, key, [entry('.lock', 41n, 'b'), same[1]!]), 'rewritten')
    assert.ok(sameLockKeys({ index: 1n, entries: [] }, key, []), 'none before, none now')
  })
})
