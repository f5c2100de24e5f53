// A KV listing decodes only the entries that changed since the listing before (EntryCache): an
// entry whose JSON is the same is the object decoded before, one whose ModifyIndex (or any other
// member) moved is decoded again, keys gone from the prefix are dropped, and an index that goes
// back empties the cache. Every listing decodes to what a decoding from scratch gives.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient, ListOptions } from '../../src/consul/client-api.js'
import {
  decodeJson,
  decodeListing,
  KVEntriesJson,
  toKVEntry,
  type KVEntryJson,
} from '../../src/consul/codecs.js'
import { EntryCache } from '../../src/consul/entry-cache.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'
import { watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy } from '../support/consul-double.js'

interface Entry {
  readonly key: string
  readonly modify: number
  readonly value?: string | null
  readonly flags?: string
  readonly session?: string
  readonly lockIndex?: number
}

/** Consul's JSON of one entry (bare uint64s, base64 value). */
function json(e: Entry): string {
  const value =
    e.value === null ? 'null' : JSON.stringify(Buffer.from(e.value ?? 'v').toString('base64'))
  const session = e.session === undefined ? '' : `,"Session":${JSON.stringify(e.session)}`
  return `{"LockIndex":${e.lockIndex ?? 0},"Key":${JSON.stringify(e.key)},"Flags":${e.flags ?? '0'},"Value":${value}${session},"CreateIndex":3,"ModifyIndex":${e.modify}}`
}
const body = (entries: readonly Entry[]): string => `[${entries.map(json).join(',')}]`
const REQUEST = 'GET /v1/kv/p?recurse'

/** The listing through the cache, checked against a decoding from scratch. */
function list(cache: EntryCache, entries: readonly Entry[], index: bigint): readonly KVEntry[] {
  const text = body(entries)
  const decoded = decodeListing(text, REQUEST, index, cache)
  assert.ok(E.isRight(decoded))
  const fresh = decodeJson(KVEntriesJson, text, REQUEST)
  assert.ok(E.isRight(fresh))
  assert.deepEqual(decoded.right, fresh.right.map(toKVEntry))
  return decoded.right
}

const byKey = (entries: readonly KVEntry[], key: string): KVEntry => {
  const found = entries.find((e) => e.key === key)
  assert.ok(found, `no ${key}`)
  return found
}

const BIG = '16210313421097356769'

describe('EntryCache: reusing what the last listing decoded', () => {
  it('reuses the decoded entry of a key whose ModifyIndex did not move', () => {
    const cache = new EntryCache()
    const first = list(
      cache,
      [
        { key: 'p/a', modify: 5, flags: BIG, session: 's1' },
        { key: 'p/b', modify: 7 },
      ],
      10n,
    )
    const second = list(
      cache,
      [
        { key: 'p/a', modify: 5, flags: BIG, session: 's1' },
        { key: 'p/b', modify: 11 },
      ],
      11n,
    )
    assert.equal(byKey(second, 'p/a'), byKey(first, 'p/a'))
    assert.equal(byKey(second, 'p/a').flags, 16210313421097356769n)
    assert.deepEqual(cache.stats(), { decoded: 3, reused: 1 })
  })

  it('decodes again a key whose ModifyIndex moved: new value, flags, session', () => {
    const cache = new EntryCache()
    const first = list(cache, [{ key: 'p/a', modify: 5, value: 'old', flags: '1' }], 10n)
    const second = list(
      cache,
      [{ key: 'p/a', modify: 12, value: 'new', flags: BIG, session: 's2', lockIndex: 1 }],
      12n,
    )
    const before = byKey(first, 'p/a')
    const after = byKey(second, 'p/a')
    assert.notEqual(after, before)
    assert.deepEqual(after.value, new Uint8Array(Buffer.from('new')))
    assert.equal(after.flags, 16210313421097356769n)
    assert.equal(after.session, 's2')
    assert.equal(after.lockIndex, 1n)
    assert.equal(after.modifyIndex, 12n)
    // And a release (session gone, ModifyIndex moved) is seen too.
    const third = list(
      cache,
      [{ key: 'p/a', modify: 13, value: 'new', flags: BIG, lockIndex: 1 }],
      13n,
    )
    assert.equal(byKey(third, 'p/a').session, undefined)
  })

  it('decodes again an entry whose other members changed at the same ModifyIndex', () => {
    // Another cluster's key at the same index (state lost, and the new indexes caught up): only
    // the JSON itself tells the two apart.
    const cache = new EntryCache()
    const first = list(cache, [{ key: 'p/a', modify: 5, value: 'one', session: 's1' }], 10n)
    const second = list(cache, [{ key: 'p/a', modify: 5, value: 'two', session: 's9' }], 10n)
    assert.notEqual(byKey(second, 'p/a'), byKey(first, 'p/a'))
    assert.equal(byKey(second, 'p/a').session, 's9')
  })

  it('drops the keys gone from the prefix', () => {
    const cache = new EntryCache()
    const first = list(
      cache,
      [
        { key: 'p/a', modify: 5 },
        { key: 'p/b', modify: 6 },
      ],
      10n,
    )
    assert.equal(cache.size, 2)
    list(cache, [{ key: 'p/a', modify: 5 }], 11n)
    assert.equal(cache.size, 1)
    // Back with the same JSON, it is decoded again: nothing of it was kept.
    const third = list(
      cache,
      [
        { key: 'p/a', modify: 5 },
        { key: 'p/b', modify: 6 },
      ],
      12n,
    )
    assert.notEqual(byKey(third, 'p/b'), byKey(first, 'p/b'))
    assert.equal(byKey(third, 'p/a'), byKey(first, 'p/a'))
    list(cache, [], 13n)
    assert.equal(cache.size, 0)
  })

  it('empties itself when the index goes back', () => {
    const cache = new EntryCache()
    const first = list(cache, [{ key: 'p/a', modify: 5 }], 100n)
    const second = list(cache, [{ key: 'p/a', modify: 5 }], 7n)
    assert.notEqual(byKey(second, 'p/a'), byKey(first, 'p/a'))
    const third = list(cache, [{ key: 'p/a', modify: 5 }], 8n)
    assert.equal(byKey(third, 'p/a'), byKey(second, 'p/a'))
    assert.deepEqual(cache.stats(), { decoded: 2, reused: 1 })
  })

  it('answers a bad entry with the error a decoding from scratch gives, keeping the last listing', () => {
    const cache = new EntryCache()
    const first = list(cache, [{ key: 'p/a', modify: 5 }], 10n)
    const bad = body([
      { key: 'p/a', modify: 5 },
      { key: 'p/b', modify: 6 },
    ]).replace(
      '"Flags":0,"Value":"dg==","CreateIndex":3,"ModifyIndex":6',
      '"Flags":"x","Value":"dg==","CreateIndex":3,"ModifyIndex":6',
    )
    const decoded = decodeListing(bad, REQUEST, 11n, cache)
    assert.ok(E.isLeft(decoded))
    assert.equal(
      decoded.left.message,
      'GET /v1/kv/p?recurse: [1].Flags: expected uint64 decimal, got "x"',
    )
    assert.equal(cache.size, 1)
    const again = list(cache, [{ key: 'p/a', modify: 5 }], 12n)
    assert.equal(byKey(again, 'p/a'), byKey(first, 'p/a'))
  })
})

describe('decodeListing: the entries of a listing cut out of its bytes', () => {
  it('cuts between entries only, whatever the keys and values hold', () => {
    const tricky = [
      { key: 'p/x},{"LockIndex":0,"Key":"p/y', modify: 5 },
      { key: 'p/{"a"}', modify: 6, value: '{"LockIndex":1}' },
      { key: 'p/\\', modify: 7 },
      { key: 'p/ключ', modify: 8, value: 'é' },
    ]
    const cache = new EntryCache()
    list(cache, tricky, 10n)
    const again = list(cache, tricky, 11n)
    assert.deepEqual(
      again.map((e) => e.key),
      tricky.map((e) => e.key),
    )
    assert.deepEqual(cache.stats(), { decoded: 4, reused: 4 })
  })

  it('reads a body in the chunks it arrived in, a character cut between two of them', () => {
    const entries = [
      { key: 'p/ключ', modify: 5, value: 'é' },
      { key: 'p/b', modify: 6 },
    ]
    const bytes = Buffer.from(body(entries))
    const cut = bytes.indexOf(Buffer.from('ключ')) + 1 // inside the two bytes of "к"
    const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)]
    const cache = new EntryCache()
    const first = decodeListing(chunks, REQUEST, 10n, cache)
    const again = decodeListing(chunks, REQUEST, 11n, cache)
    const whole = decodeJson(KVEntriesJson, body(entries), REQUEST)
    assert.ok(E.isRight(first) && E.isRight(again) && E.isRight(whole))
    assert.deepEqual(first.right, whole.right.map(toKVEntry))
    assert.equal(again.right[0], first.right[0])
    assert.deepEqual(cache.stats(), { decoded: 2, reused: 2 })
    // Without a cache, the chunks are decoded as one text.
    assert.deepEqual(decodeListing(chunks, REQUEST, 12n), E.right(whole.right.map(toKVEntry)))
  })

  it('reuses unchanged entries around keys added, changed and deleted', () => {
    const cache = new EntryCache()
    const keys = Array.from({ length: 20 }, (_, i) => ({
      key: `p/k${String(i).padStart(2, '0')}`,
      modify: i + 1,
    }))
    const first = list(cache, keys, 30n)
    // k03..k05 and k07..k08 deleted, k10 changed, k10a added, k12..k16 changed (more in a row
    // than the places looked ahead), k19 deleted.
    const rewritten = new Set(['p/k10', 'p/k10a', 'p/k12', 'p/k13', 'p/k14', 'p/k15', 'p/k16'])
    const now = [
      ...keys.slice(0, 3),
      ...keys.slice(6, 7),
      ...keys.slice(9, 19).map((k) => (rewritten.has(k.key) ? { ...k, modify: 31 } : k)),
    ]
    now.splice(6, 0, { key: 'p/k10a', modify: 31 })
    assert.deepEqual(
      now.map((k) => k.key),
      [0, 1, 2, 6, 9, 10, '10a', 11, 12, 13, 14, 15, 16, 17, 18].map(
        (i) => `p/k${String(i).padStart(2, '0')}`,
      ),
    )
    const second = list(cache, now, 31n)
    for (const entry of second) {
      assert.equal(first.includes(entry), !rewritten.has(entry.key), entry.key)
    }
    assert.deepEqual(cache.stats(), { decoded: 27, reused: 8 })
  })

  it('cuts an indented listing (a dev agent writes one) the same way', () => {
    const entries = [
      { key: 'p/a', modify: 5 },
      { key: 'p/b', modify: 6 },
    ]
    const pretty = `${JSON.stringify(JSON.parse(body(entries)), null, 4)}\n`
    const cache = new EntryCache()
    assert.deepEqual(decodeListing('[]\n', REQUEST, 9n, cache), E.right([]))
    const first = decodeListing(pretty, REQUEST, 10n, cache)
    const second = decodeListing(pretty, REQUEST, 11n, cache)
    assert.ok(E.isRight(first) && E.isRight(second))
    assert.deepEqual(
      second.right.map((e) => e.key),
      ['p/a', 'p/b'],
    )
    assert.equal(second.right[1], first.right[1])
    assert.deepEqual(cache.stats(), { decoded: 2, reused: 2 })
  })

  it('leaves another layout to the whole decoding, which gives the same answer', () => {
    const cache = new EntryCache()
    const entries = [
      { key: 'p/a', modify: 5 },
      { key: 'p/b', modify: 6 },
    ]
    // An entry holding an array of objects (Consul's hold none), and bodies that are no listing.
    const nested = body(entries).replace('"Key":"p/b"', '"Key":"p/b","Extra":[{"x":1},{"y":2}]')
    for (const text of [nested, '[1,2]', '{"Key":"p/a"}', '[{"Key":"p/a"},{"Key":']) {
      const decoded = decodeListing(text, REQUEST, 11n, cache)
      const whole = decodeJson(KVEntriesJson, text, REQUEST)
      assert.deepEqual(decoded, E.map((all: readonly KVEntryJson[]) => all.map(toKVEntry))(whole))
    }
    assert.equal(cache.size, 0)
  })
})

describe('watchPrefix: one EntryCache per subscription', () => {
  it('hands each poll the same cache, so unchanged entries are the same objects', async () => {
    const bodies = [
      body([
        { key: 'p/a', modify: 5 },
        { key: 'p/b', modify: 6 },
      ]),
      body([
        { key: 'p/a', modify: 5 },
        { key: 'p/b', modify: 9 },
      ]),
    ]
    const caches = new Set<EntryCache | undefined>()
    const list =
      (_prefix: string, options: ListOptions = {}) =>
      () => {
        caches.add(options.reuse)
        const text = bodies.shift()
        if (text === undefined) return new Promise<E.Either<ConsulError, KVSnapshot>>(() => {})
        const index = BigInt(6 + (2 - bodies.length) * 3)
        return Promise.resolve(
          E.map((entries: readonly KVEntry[]): KVSnapshot => ({ index, entries }))(
            decodeListing(text, REQUEST, index, options.reuse),
          ),
        )
      }
    const client = { kv: { list } } as unknown as Pick<ConsulClient, 'kv' | 'network'>
    const scheduler = new VirtualTimeScheduler()
    const events: WatchEvent[] = []
    const subscription = watchPrefix(client, 'p/', { scheduler, minIntervalMs: 0 }).subscribe(
      (event) => events.push(event),
    )
    try {
      await advanceBy(scheduler, 1000)
      const snapshots = events.flatMap((e) => (e.type === 'snapshot' ? [e.snapshot] : []))
      assert.equal(snapshots.length, 2)
      const [first, second] = snapshots as [KVSnapshot, KVSnapshot]
      assert.equal(byKey(second.entries, 'p/a'), byKey(first.entries, 'p/a'))
      assert.notEqual(byKey(second.entries, 'p/b'), byKey(first.entries, 'p/b'))
      assert.equal(caches.size, 1)
      assert.ok([...caches][0] instanceof EntryCache)
    } finally {
      subscription.unsubscribe()
    }
  })
})
