/**
 * The shared scenario table of the Consul double: each scenario drives the client interface and
 * asserts Consul's answers. `test/unit/consul-double.test.ts` runs the table against the double
 * (virtual time) and `test/integration/consul-double-parity.test.ts` against a real agent, so a
 * behaviour the double models differently from Consul 1.8 fails the parity run.
 *
 * A scenario asserts only what both guarantee: no contiguous indexes (other tests write to the
 * same agent), no wall-clock upper bounds (a blocking query may answer up to wait/16 late, a TTL
 * session lives TTL to 2 × TTL); lower bounds on time are safe, on the context's clock.
 */
import assert from 'node:assert/strict'
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import { filter, firstValueFrom, ReplaySubject } from 'rxjs'
import type { ConsulClient, TxnOp } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import { UINT64_MAX } from '../../src/consul/uint64-json.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'

/** What a scenario gets besides its clients. */
export interface ScenarioContext {
  /** A KV prefix of its own (no trailing `/`); the runner deletes it afterwards. */
  readonly prefix: string
  /** The clock of the side under test, in ms: virtual for the double, wall time for an agent. */
  readonly now: () => number
}

/** One row of the table. */
export interface ConsulScenario {
  /** What the scenario shows, as a sentence. */
  readonly name: string
  /**
   * Drives the calls and asserts the answers. `client()` gives a new client on the same Consul
   * each time (another process); sessions it creates are destroyed by the runner afterwards.
   */
  readonly run: (client: () => ConsulClient, context: ScenarioContext) => Promise<void>
}

/** Runs the task, failing the scenario with the ConsulError if it failed. */
async function ok<A>(task: TE.TaskEither<ConsulError, A>): Promise<A> {
  const result = await task()
  if (E.isLeft(result))
    assert.fail(`expected success, got ${result.left._tag}: ${result.left.message}`)
  return result.right
}

/** Runs the task, failing the scenario if it succeeded. */
async function failure(task: TE.TaskEither<ConsulError, unknown>): Promise<ConsulError> {
  const result = await task()
  if (E.isRight(result)) assert.fail(`expected a ConsulError, got ${String(result.right)}`)
  return result.left
}

const text = (entry: KVEntry | null | undefined): string | null | undefined =>
  entry === undefined || entry === null
    ? entry
    : entry.value === null
      ? null
      : Buffer.from(entry.value).toString('utf8')

const bytes = (value: string): Uint8Array => new Uint8Array(Buffer.from(value))

const keys = (snapshot: KVSnapshot): string[] => snapshot.entries.map((e) => e.key)

async function present(client: ConsulClient, key: string): Promise<KVEntry> {
  const entry = await ok(client.kv.get(key))
  assert.ok(entry !== null, `${key} exists`)
  return entry
}

async function committed(client: ConsulClient, ops: readonly TxnOp[]): Promise<readonly KVEntry[]> {
  const answer = await ok(client.kv.txn(ops))
  if (!answer.committed) assert.fail(`txn rolled back: ${JSON.stringify(answer.errors)}`)
  return answer.results
}

async function rolledBack(
  client: ConsulClient,
  ops: readonly TxnOp[],
): Promise<readonly { opIndex: number; what: string }[]> {
  const answer = await ok(client.kv.txn(ops))
  if (answer.committed) assert.fail('txn committed, expected a rollback')
  return answer.errors
}

const session = (
  client: ConsulClient,
  behavior: 'release' | 'delete',
  lockDelay: string | number,
) => ok(client.session.create({ ttl: '30s', behavior, lockDelay }))

/** Blocking waits: long enough to tell from an answer at once, short for the real agent. */
const WAIT_MS = 1_500

export const CONSUL_SCENARIOS: readonly ConsulScenario[] = [
  {
    name: 'a put is read back with its value, flags 0, no lock, and CreateIndex = ModifyIndex',
    run: async (client, { prefix }) => {
      const c = client()
      assert.equal(await ok(c.kv.get(`${prefix}/missing`)), null)
      assert.equal(await ok(c.kv.put(`${prefix}/k`, 'hello')), true)
      const entry = await present(c, `${prefix}/k`)
      assert.equal(text(entry), 'hello')
      assert.equal(entry.flags, 0n)
      assert.equal(entry.lockIndex, 0n)
      assert.equal(entry.session, undefined)
      assert.equal(entry.createIndex, entry.modifyIndex)
    },
  },
  {
    name: 'an empty value is stored as null, and bytes round-trip exactly',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/empty`, null))
      await ok(c.kv.put(`${prefix}/blank`, ''))
      assert.equal(text(await present(c, `${prefix}/empty`)), null)
      assert.equal(text(await present(c, `${prefix}/blank`)), null)
      const raw = new Uint8Array([0, 255, 10, 13, 128])
      await ok(c.kv.put(`${prefix}/bytes`, raw))
      assert.deepEqual((await present(c, `${prefix}/bytes`)).value, raw)
    },
  },
  {
    name: 'flags are exact uint64 bigints through put, get, list and txn (0xe0f69a2baa414de0, 2^64-1)',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/sem`, 'x', { flags: SEMAPHORE_FLAGS }))
      assert.equal((await present(c, `${prefix}/sem`)).flags, 0xe0f69a2baa414de0n)
      assert.equal((await ok(c.kv.list(`${prefix}/`))).entries[0]?.flags, SEMAPHORE_FLAGS)
      await committed(c, [{ verb: 'set', key: `${prefix}/max`, value: null, flags: UINT64_MAX }])
      const [read] = await committed(c, [{ verb: 'get', key: `${prefix}/max` }])
      assert.equal(read?.flags, 18446744073709551615n)
    },
  },
  {
    name: 'every write moves the index up, and a listing answers the highest ModifyIndex under the prefix',
    run: async (client, { prefix }) => {
      const c = client()
      const seen: bigint[] = []
      for (const k of ['b', 'a', 'c', 'a']) {
        await ok(c.kv.put(`${prefix}/${k}`, `${k}${seen.length}`))
        seen.push((await present(c, `${prefix}/${k}`)).modifyIndex)
      }
      seen.reduce(
        (previous, index) => (assert.ok(index > previous, `${index} > ${previous}`), index),
      )
      const listing = await ok(c.kv.list(`${prefix}/`))
      assert.deepEqual(keys(listing), [`${prefix}/a`, `${prefix}/b`, `${prefix}/c`])
      assert.equal(listing.index, seen[3])
      assert.equal(listing.entries[0]?.createIndex, seen[1], 'a rewrite keeps CreateIndex')
    },
  },
  {
    name: 'a listing matches a plain string prefix, not path segments, sorted by key',
    run: async (client, { prefix }) => {
      const c = client()
      for (const k of ['foo/x', 'foobar', 'fo', 'foo']) await ok(c.kv.put(`${prefix}/${k}`, k))
      assert.deepEqual(keys(await ok(c.kv.list(`${prefix}/foo`))), [
        `${prefix}/foo`,
        `${prefix}/foo/x`,
        `${prefix}/foobar`,
      ])
      assert.deepEqual(keys(await ok(c.kv.list(`${prefix}/foo/`))), [`${prefix}/foo/x`])
    },
  },
  {
    name: 'rewriting a key with the same value and flags answers true and leaves ModifyIndex alone',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/same`, 'v', { flags: 3n }))
      const before = await present(c, `${prefix}/same`)
      assert.equal(await ok(c.kv.put(`${prefix}/same`, 'v', { flags: 3n })), true)
      assert.equal((await present(c, `${prefix}/same`)).modifyIndex, before.modifyIndex)
      await ok(c.kv.put(`${prefix}/same`, 'v', { flags: 4n }))
      assert.ok((await present(c, `${prefix}/same`)).modifyIndex > before.modifyIndex)
    },
  },
  {
    name: 'cas=0 creates only: true for a new key, false once it exists',
    run: async (client, { prefix }) => {
      const c = client()
      assert.equal(await ok(c.kv.put(`${prefix}/once`, 'first', { cas: 0n })), true)
      assert.equal(await ok(c.kv.put(`${prefix}/once`, 'second', { cas: 0n })), false)
      assert.equal(text(await present(c, `${prefix}/once`)), 'first')
    },
  },
  {
    name: 'cas with a stale ModifyIndex is refused, with the current one accepted; on a missing key refused',
    run: async (client, { prefix }) => {
      const a = client()
      const b = client()
      await ok(a.kv.put(`${prefix}/k`, 'v1'))
      const read = await present(a, `${prefix}/k`)
      assert.equal(await ok(b.kv.put(`${prefix}/k`, 'v2', { cas: read.modifyIndex })), true)
      assert.equal(await ok(a.kv.put(`${prefix}/k`, 'v3', { cas: read.modifyIndex })), false)
      assert.equal(text(await present(a, `${prefix}/k`)), 'v2')
      assert.equal(await ok(a.kv.put(`${prefix}/none`, 'x', { cas: read.modifyIndex })), false)
      assert.equal(await ok(a.kv.get(`${prefix}/none`)), null)
    },
  },
  {
    name: 'acquire by two sessions: the first holds (LockIndex 1), the second is refused',
    run: async (client, { prefix }) => {
      const a = client()
      const b = client()
      const sa = await session(a, 'release', 0)
      const sb = await session(b, 'release', 0)
      assert.equal(await ok(a.kv.put(`${prefix}/lock`, 'a', { acquire: sa })), true)
      assert.equal(await ok(b.kv.put(`${prefix}/lock`, 'b', { acquire: sb })), false)
      const held = await present(a, `${prefix}/lock`)
      assert.equal(held.session, sa)
      assert.equal(held.lockIndex, 1n)
      assert.equal(text(held), 'a')
    },
  },
  {
    name: 'LockIndex counts acquisitions by a new holder; re-acquiring by the holder keeps it',
    run: async (client, { prefix }) => {
      const c = client()
      const s1 = await session(c, 'release', 0)
      const s2 = await session(c, 'release', 0)
      const key = `${prefix}/lock`
      await ok(c.kv.put(key, 'one', { acquire: s1 }))
      assert.equal(await ok(c.kv.put(key, 'one again', { acquire: s1 })), true)
      assert.equal((await present(c, key)).lockIndex, 1n)
      assert.equal(await ok(c.kv.put(key, 'one', { release: s1 })), true)
      assert.equal(await ok(c.kv.put(key, 'two', { acquire: s2 })), true)
      const taken = await present(c, key)
      assert.equal(taken.lockIndex, 2n)
      assert.equal(taken.session, s2)
    },
  },
  {
    name: 'release by another session is refused; by the holder it clears Session, keeps LockIndex, rewrites value and flags',
    run: async (client, { prefix }) => {
      const c = client()
      const holder = await session(c, 'release', 0)
      const other = await session(c, 'release', 0)
      const key = `${prefix}/lock`
      await ok(c.kv.put(key, 'held', { acquire: holder, flags: 7n }))
      assert.equal(await ok(c.kv.put(key, 'stolen', { release: other })), false)
      assert.equal(await ok(c.kv.put(`${prefix}/absent`, 'x', { release: holder })), false)
      assert.equal(await ok(c.kv.put(key, 'given back', { release: holder, flags: 9n })), true)
      const released = await present(c, key)
      assert.equal(released.session, undefined)
      assert.equal(released.lockIndex, 1n)
      assert.equal(text(released), 'given back')
      assert.equal(released.flags, 9n)
    },
  },
  {
    name: 'acquire with a session that does not exist is a 500 naming the invalid session',
    run: async (client, { prefix }) => {
      const c = client()
      const ghost = '00000000-0000-4000-8000-000000000000'
      const error = await failure(c.kv.put(`${prefix}/lock`, 'x', { acquire: ghost }))
      assert.equal(error._tag, 'ServerError')
      assert.ok(error._tag === 'ServerError' && error.status === 500)
      assert.match(error.message, /invalid session/)
      assert.equal(await ok(c.kv.get(`${prefix}/lock`)), null)
    },
  },
  {
    name: 'a plain put on a locked key keeps its holder and answers true',
    run: async (client, { prefix }) => {
      const c = client()
      const holder = await session(c, 'release', 0)
      await ok(c.kv.put(`${prefix}/lock`, 'held', { acquire: holder }))
      assert.equal(await ok(c.kv.put(`${prefix}/lock`, 'overwritten')), true)
      const entry = await present(c, `${prefix}/lock`)
      assert.equal(entry.session, holder)
      assert.equal(text(entry), 'overwritten')
      assert.equal(entry.lockIndex, 0n, 'LockIndex comes from the request: 0')
    },
  },
  {
    name: 'destroying a delete-behavior session deletes its keys; a release-behavior one unlocks them and keeps the value',
    run: async (client, { prefix }) => {
      const c = client()
      const deleting = await session(c, 'delete', 0)
      const releasing = await session(c, 'release', 0)
      await ok(c.kv.put(`${prefix}/d`, 'gone soon', { acquire: deleting }))
      await ok(c.kv.put(`${prefix}/r`, 'kept', { acquire: releasing, flags: 5n }))
      const before = await present(c, `${prefix}/r`)
      assert.equal(await ok(c.session.destroy(deleting)), true)
      assert.equal(await ok(c.session.destroy(releasing)), true)
      assert.equal(await ok(c.kv.get(`${prefix}/d`)), null)
      const kept = await present(c, `${prefix}/r`)
      assert.equal(kept.session, undefined)
      assert.equal(text(kept), 'kept')
      assert.equal(kept.flags, 5n)
      assert.equal(kept.lockIndex, 1n)
      assert.ok(kept.modifyIndex > before.modifyIndex)
    },
  },
  {
    name: 'after an invalidation the key is refused for the lock-delay, to every session, even an unknown one',
    run: async (client, { prefix }) => {
      const c = client()
      const first = await session(c, 'release', '10s')
      const next = await session(c, 'release', 0)
      const key = `${prefix}/lock`
      await ok(c.kv.put(key, 'x', { acquire: first }))
      await ok(c.session.destroy(first))
      assert.equal((await present(c, key)).session, undefined, 'the key is free')
      assert.equal(await ok(c.kv.put(key, 'y', { acquire: next })), false)
      const ghost = '00000000-0000-4000-8000-000000000001'
      assert.equal(await ok(c.kv.put(key, 'y', { acquire: ghost })), false, 'checked first')
      const errors = await rolledBack(c, [{ verb: 'lock', key, value: null, session: next }])
      assert.equal(errors[0]?.opIndex, 0)
      assert.match(errors[0]?.what ?? '', /lock.?delay/i)
      assert.equal(await ok(c.kv.put(key, 'plain writes pass')), true)
    },
  },
  {
    name: 'a key unlocked by release, or by a session without lock-delay, can be acquired at once',
    run: async (client, { prefix }) => {
      const c = client()
      const a = await session(c, 'release', '10s')
      const b = await session(c, 'release', '10s')
      const noDelay = await session(c, 'release', 0)
      await ok(c.kv.put(`${prefix}/released`, 'x', { acquire: a }))
      await ok(c.kv.put(`${prefix}/released`, 'x', { release: a }))
      assert.equal(await ok(c.kv.put(`${prefix}/released`, 'y', { acquire: b })), true)
      await ok(c.kv.put(`${prefix}/invalidated`, 'x', { acquire: noDelay }))
      await ok(c.session.destroy(noDelay))
      assert.equal(await ok(c.kv.put(`${prefix}/invalidated`, 'y', { acquire: a })), true)
    },
  },
  {
    name: 'session info reads back name, behavior, TTL and lock-delay; renew answers the session',
    run: async (client) => {
      const c = client()
      const id = await ok(
        c.session.create({ name: 'parity', ttl: '15s', behavior: 'delete', lockDelay: '3s' }),
      )
      const info = await ok(c.session.info(id))
      assert.equal(info?.id, id)
      assert.equal(info?.name, 'parity')
      assert.equal(info?.behavior, 'delete')
      assert.equal(info?.ttl, '15s')
      assert.equal(info?.ttlMs, 15_000)
      assert.equal(info?.lockDelayMs, 3_000)
      const renewed = await ok(c.session.renew(id))
      assert.equal(renewed?.id, id)
      assert.equal(renewed?.ttlMs, 15_000)
      const plain = await ok(c.session.info(await ok(c.session.create({}))))
      assert.equal(plain?.behavior, 'release')
      assert.equal(plain?.ttlMs, undefined)
      assert.equal(plain?.lockDelayMs, 15_000)
    },
  },
  {
    name: "Consul 1.8: a session id that is not a UUID is a 500 'failed session lookup' for renew, info, destroy and acquire",
    run: async (client, { prefix }) => {
      const c = client()
      const calls = {
        renew: c.session.renew('not-a-uuid'),
        info: c.session.info('zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz'),
        destroy: c.session.destroy('00000000-0000-4000-8000-00000000000'),
        acquire: c.kv.put(`${prefix}/k`, 'x', { acquire: 'not-a-uuid' }),
      }
      for (const [name, call] of Object.entries(calls)) {
        const error = await failure(call)
        assert.ok(error._tag === 'ServerError' && error.status === 500, `${name}: ${error._tag}`)
        assert.match(error.body, /^failed session lookup: index error: /, name)
      }
      assert.match(
        (await failure(calls.info)).message,
        /Invalid UUID: encoding\/hex: invalid byte: U\+007A 'z'/,
      )
      assert.equal(await ok(c.kv.put(`${prefix}/k`, 'x', { release: 'not-a-uuid' })), false)
    },
  },
  {
    name: 'a destroyed session renews as null and reads as null; destroying it again answers true',
    run: async (client) => {
      const c = client()
      const id = await session(c, 'release', 0)
      assert.equal(await ok(c.session.destroy(id)), true)
      assert.equal(await ok(c.session.renew(id)), null)
      assert.equal(await ok(c.session.info(id)), null)
      assert.equal(await ok(c.session.destroy(id)), true)
    },
  },
  {
    name: 'delete answers true also for a missing key; with cas only on the current ModifyIndex',
    run: async (client, { prefix }) => {
      const c = client()
      assert.equal(await ok(c.kv.delete(`${prefix}/never`)), true)
      assert.equal(await ok(c.kv.delete(`${prefix}/never`, { cas: 5n })), true)
      await ok(c.kv.put(`${prefix}/k`, 'x'))
      const { modifyIndex } = await present(c, `${prefix}/k`)
      assert.equal(await ok(c.kv.delete(`${prefix}/k`, { cas: modifyIndex + 1n })), false)
      assert.equal(await ok(c.kv.delete(`${prefix}/k`, { cas: 0n })), false)
      assert.equal(await ok(c.kv.delete(`${prefix}/k`, { cas: modifyIndex })), true)
      assert.equal(await ok(c.kv.get(`${prefix}/k`)), null)
    },
  },
  {
    name: 'a recursive delete removes every key under the prefix and nothing beside it',
    run: async (client, { prefix }) => {
      const c = client()
      for (const k of ['tree/a', 'tree/b/c', 'treetop', 'other'])
        await ok(c.kv.put(`${prefix}/${k}`, k))
      assert.equal(await ok(c.kv.delete(`${prefix}/tree/`, { recurse: true })), true)
      assert.deepEqual(keys(await ok(c.kv.list(`${prefix}/`))), [
        `${prefix}/other`,
        `${prefix}/treetop`,
      ])
    },
  },
  {
    name: 'a deleted locked key comes back with LockIndex 1 when acquired again',
    run: async (client, { prefix }) => {
      const c = client()
      const s = await session(c, 'release', 0)
      const key = `${prefix}/lock`
      await ok(c.kv.put(key, 'x', { acquire: s }))
      await ok(c.kv.put(key, 'x', { release: s }))
      await ok(c.kv.put(key, 'x', { acquire: s }))
      assert.equal((await present(c, key)).lockIndex, 2n)
      assert.equal(await ok(c.kv.delete(key)), true)
      await ok(c.kv.put(key, 'x', { acquire: s }))
      assert.equal((await present(c, key)).lockIndex, 1n)
    },
  },
  {
    name: 'a committed txn writes at one index and answers results in op order: writes without values, gets with them, deletes not at all',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/gone`, 'x'))
      const results = await committed(c, [
        { verb: 'set', key: `${prefix}/a`, value: bytes('A'), flags: 1n },
        { verb: 'delete', key: `${prefix}/gone` },
        { verb: 'cas', key: `${prefix}/b`, value: bytes('B'), index: 0n },
        { verb: 'get', key: `${prefix}/a` },
      ])
      assert.deepEqual(
        results.map((r) => [r.key, text(r)]),
        [
          [`${prefix}/a`, null],
          [`${prefix}/b`, null],
          [`${prefix}/a`, 'A'],
        ],
      )
      assert.equal(results[0]?.modifyIndex, results[1]?.modifyIndex)
      assert.equal(text(await present(c, `${prefix}/b`)), 'B')
      assert.equal(await ok(c.kv.get(`${prefix}/gone`)), null)
    },
  },
  {
    name: 'a txn with a failing op rolls back every op and reports each failing op by index',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/a`, 'A'))
      const { modifyIndex } = await present(c, `${prefix}/a`)
      const errors = await rolledBack(c, [
        { verb: 'set', key: `${prefix}/new`, value: bytes('never') },
        { verb: 'cas', key: `${prefix}/a`, value: bytes('stale'), index: modifyIndex + 1n },
        { verb: 'delete', key: `${prefix}/a` },
        { verb: 'get', key: `${prefix}/missing` },
      ])
      assert.deepEqual(
        errors.map((e) => e.opIndex),
        [1, 3],
      )
      assert.match(errors[0]?.what ?? '', /index is stale/)
      assert.match(errors[1]?.what ?? '', /doesn't exist/)
      assert.equal(await ok(c.kv.get(`${prefix}/new`)), null)
      const kept = await present(c, `${prefix}/a`)
      assert.equal(text(kept), 'A')
      assert.equal(kept.modifyIndex, modifyIndex)
    },
  },
  {
    name: 'check-session in a txn passes for the holder and rolls back for another session or a free key',
    run: async (client, { prefix }) => {
      const c = client()
      const holder = await session(c, 'release', 0)
      const other = await session(c, 'release', 0)
      await ok(c.kv.put(`${prefix}/held`, 'x', { acquire: holder }))
      await ok(c.kv.put(`${prefix}/free`, 'x'))
      const fenced = await committed(c, [
        { verb: 'check-session', key: `${prefix}/held`, session: holder },
        { verb: 'set', key: `${prefix}/out`, value: bytes('fenced') },
      ])
      assert.equal(fenced[0]?.session, holder)
      assert.equal(fenced[0]?.value, null)
      const errors = await rolledBack(c, [
        { verb: 'check-session', key: `${prefix}/held`, session: other },
        { verb: 'check-session', key: `${prefix}/free`, session: holder },
        { verb: 'check-session', key: `${prefix}/missing`, session: holder },
        { verb: 'set', key: `${prefix}/out`, value: bytes('not fenced') },
      ])
      assert.deepEqual(
        errors.map((e) => e.opIndex),
        [0, 1, 2],
      )
      assert.match(errors[0]?.what ?? '', /session/)
      assert.equal(text(await present(c, `${prefix}/out`)), 'fenced')
    },
  },
  {
    name: 'check-index in a txn passes on the current ModifyIndex and rolls back on another',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/k`, 'x'))
      const { modifyIndex } = await present(c, `${prefix}/k`)
      await committed(c, [{ verb: 'check-index', key: `${prefix}/k`, index: modifyIndex }])
      const errors = await rolledBack(c, [
        { verb: 'check-index', key: `${prefix}/k`, index: modifyIndex + 1n },
        { verb: 'delete-cas', key: `${prefix}/k`, index: modifyIndex + 1n },
      ])
      assert.deepEqual(
        errors.map((e) => e.opIndex),
        [0, 1],
      )
      assert.equal(text(await present(c, `${prefix}/k`)), 'x')
    },
  },
  {
    name: 'txn lock and unlock: a held lock or an unknown session rolls back, the holder unlocks',
    run: async (client, { prefix }) => {
      const c = client()
      const a = await session(c, 'release', 0)
      const b = await session(c, 'release', 0)
      const key = `${prefix}/lock`
      const [locked] = await committed(c, [{ verb: 'lock', key, value: bytes('a'), session: a }])
      assert.equal(locked?.session, a)
      assert.equal(locked?.lockIndex, 1n)
      const refused = await rolledBack(c, [
        { verb: 'set', key: `${prefix}/side`, value: null },
        { verb: 'lock', key, value: bytes('b'), session: b },
        { verb: 'unlock', key, value: null, session: b },
        {
          verb: 'lock',
          key: `${prefix}/x`,
          value: null,
          session: '00000000-0000-4000-8000-0000000000ff',
        },
      ])
      assert.deepEqual(
        refused.map((e) => e.opIndex),
        [1, 2, 3],
      )
      assert.match(refused[0]?.what ?? '', /already held/)
      assert.match(refused[2]?.what ?? '', /invalid session/)
      assert.equal(await ok(c.kv.get(`${prefix}/side`)), null)
      const [unlocked] = await committed(c, [
        { verb: 'unlock', key, value: bytes('a'), session: a },
      ])
      assert.equal(unlocked?.session, undefined)
      assert.equal(unlocked?.lockIndex, 1n)
    },
  },
  {
    name: 'a txn get-tree reads every key under the prefix with values, and fails nothing when empty',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/t/b`, 'B'))
      await ok(c.kv.put(`${prefix}/t/a`, 'A'))
      const tree = await committed(c, [{ verb: 'get-tree', key: `${prefix}/t/` }])
      assert.deepEqual(
        tree.map((e) => [e.key, text(e)]),
        [
          [`${prefix}/t/a`, 'A'],
          [`${prefix}/t/b`, 'B'],
        ],
      )
      assert.deepEqual(await committed(c, [{ verb: 'get-tree', key: `${prefix}/none/` }]), [])
    },
  },
  {
    name: 'a blocking list answers at once when its index is behind the prefix',
    run: async (client, { prefix, now }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/a`, 'x'))
      const { index } = await ok(c.kv.list(`${prefix}/`))
      await ok(c.kv.put(`${prefix}/b`, 'x'))
      const started = now()
      const answer = await ok(c.kv.list(`${prefix}/`, { index, waitMs: 60_000 }))
      assert.ok(answer.index > index)
      assert.deepEqual(keys(answer), [`${prefix}/a`, `${prefix}/b`])
      assert.ok(now() - started < 30_000, 'not held for the wait')
    },
  },
  {
    name: 'a blocking list answers with the write under its prefix that ends its wait',
    run: async (client, { prefix }) => {
      const watcher = client()
      const writer = client()
      await ok(watcher.kv.put(`${prefix}/a`, 'x'))
      const { index } = await ok(watcher.kv.list(`${prefix}/`))
      const pending = watcher.kv.list(`${prefix}/`, { index, waitMs: 60_000 })()
      await ok(writer.kv.put(`${prefix}/b`, 'x'))
      const answer = await ok(() => pending)
      assert.ok(answer.index > index)
      assert.deepEqual(keys(answer), [`${prefix}/a`, `${prefix}/b`])
    },
  },
  {
    name: 'a blocking list with nothing written answers at the end of its wait with the same index, also when keys beside its prefix change',
    run: async (client, { prefix, now }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/in/a`, 'x'))
      const { index } = await ok(c.kv.list(`${prefix}/in/`))
      const started = now()
      const pending = c.kv.list(`${prefix}/in/`, { index, waitMs: WAIT_MS })()
      await ok(client().kv.put(`${prefix}/beside`, 'x'))
      const answer = await ok(() => pending)
      assert.ok(now() - started >= WAIT_MS, `answered after ${now() - started} ms`)
      assert.equal(answer.index, index)
      assert.deepEqual(keys(answer), [`${prefix}/in/a`])
    },
  },
  {
    name: 'a recursive delete of a prefix wakes a blocking list of that prefix, which answers it empty',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/dir/a`, 'x'))
      await ok(c.kv.put(`${prefix}/dir/b`, 'x'))
      const { index } = await ok(c.kv.list(`${prefix}/dir`))
      const pending = c.kv.list(`${prefix}/dir`, { index, waitMs: 60_000 })()
      await ok(client().kv.delete(`${prefix}/dir`, { recurse: true }))
      const answer = await ok(() => pending)
      assert.deepEqual(answer.entries, [])
      assert.ok(answer.index > index)
    },
  },
  {
    name: 'Consul 1.8: a list of prefix/ holding an older tombstone is not answered for DELETE prefix?recurse until its wait ends, with that older index',
    run: async (client, { prefix, now }) => {
      const c = client()
      const dir = `${prefix}/dir`
      await ok(c.kv.put(`${dir}/a`, 'x'))
      await ok(c.kv.put(`${dir}/b`, 'x'))
      await ok(c.kv.delete(`${dir}/b`))
      const { index } = await ok(c.kv.list(`${dir}/`))
      const started = now()
      const pending = c.kv.list(`${dir}/`, { index, waitMs: WAIT_MS })()
      await ok(client().kv.delete(dir, { recurse: true }))
      const answer = await ok(() => pending)
      assert.ok(now() - started >= WAIT_MS, `answered after ${now() - started} ms`)
      assert.deepEqual(answer.entries, [])
      assert.equal(answer.index, index, 'the tombstone of dir/b')
      const fresh = await ok(c.kv.list(`${dir}/`))
      assert.deepEqual(fresh, answer)
    },
  },
  {
    name: "a session's invalidation wakes a blocking list of the prefix its keys were under",
    run: async (client, { prefix }) => {
      const c = client()
      const s = await session(c, 'delete', 0)
      await ok(c.kv.put(`${prefix}/q/${s}`, null, { acquire: s }))
      const { index } = await ok(c.kv.list(`${prefix}/q/`))
      const pending = c.kv.list(`${prefix}/q/`, { index, waitMs: 60_000 })()
      await ok(client().session.destroy(s))
      const answer = await ok(() => pending)
      assert.deepEqual(answer.entries, [])
      assert.ok(answer.index > index)
    },
  },
  {
    name: 'watchPrefix emits the current snapshot, then a snapshot per change under the prefix',
    run: async (client, { prefix }) => {
      const watcher = client()
      const writer = client()
      await ok(writer.kv.put(`${prefix}/w/a`, 'x'))
      // One watch; its events are replayed to each wait below.
      const events = new ReplaySubject<WatchEvent>()
      const subscription = watcher.watchPrefix(`${prefix}/w/`, { waitMs: 60_000 }).subscribe(events)
      const seen = (want: string[]) =>
        firstValueFrom(
          events.pipe(
            filter((e) => e.type === 'snapshot' && keys(e.snapshot).join() === want.join()),
          ),
        )
      try {
        await seen([`${prefix}/w/a`])
        await ok(writer.kv.put(`${prefix}/w/b`, 'x'))
        await ok(writer.kv.put(`${prefix}/elsewhere`, 'x'))
        await seen([`${prefix}/w/a`, `${prefix}/w/b`])
        await ok(writer.kv.delete(`${prefix}/w/a`))
        await seen([`${prefix}/w/b`])
      } finally {
        subscription.unsubscribe()
      }
      const snapshots: KVSnapshot[] = []
      events.subscribe((e) => e.type === 'snapshot' && snapshots.push(e.snapshot))
      assert.equal(snapshots.length, 3, 'one snapshot per change under the prefix')
      snapshots.reduce((previous, s) => (assert.ok(s.index > previous.index), s))
    },
  },
  {
    name: 'watchPrefix from a startIndex blocks on it and emits only a later snapshot',
    run: async (client, { prefix }) => {
      const c = client()
      await ok(c.kv.put(`${prefix}/s/a`, 'x'))
      const { index } = await ok(c.kv.list(`${prefix}/s/`))
      const first = firstValueFrom(
        c.watchPrefix(`${prefix}/s/`, { startIndex: index, waitMs: WAIT_MS }),
      )
      await ok(client().kv.put(`${prefix}/s/b`, 'x'))
      const event = await first
      assert.equal(event.type, 'snapshot')
      assert.ok(event.type === 'snapshot' && event.snapshot.index > index)
      assert.ok(event.type === 'snapshot' && keys(event.snapshot).length === 2)
    },
  },
]
