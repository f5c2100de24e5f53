/**
 * Test-only table of the snapshots the semaphore decision is specified on: each scenario is one
 * contender deciding on one snapshot. test/unit/decide.test.ts states what `decide` answers in each;
 * test/unit/prefix-view.test.ts replays every one of them through a decider shared by two contenders.
 */
import { LOCK_FLAGS } from '../../src/base/flags.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { DecideOptions } from '../../src/core/semaphore/decide.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

export const prefix = 'svc/lock'
/** The deciding contender of most scenarios: session 'me', limit 2. */
export const options: DecideOptions = { prefix, session: 'me', limit: 2 }
const me = contenderEntry(prefix, 'me', 50n)
const utf8 = new TextEncoder()

/** One contender deciding on one snapshot. */
export interface DecideScenario {
  readonly snapshot: KVSnapshot
  readonly options: DecideOptions
}

/** `.lock` bodies no client reads, and what the CorruptLock reason must say about each. */
export const corruptBodies: readonly (readonly [string, string | Uint8Array, RegExp])[] = [
  ['not JSON', '{"Limit":2,', /not JSON/],
  ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), /not UTF-8/],
  ['not an object', '[1,2]', /the body is \[1,2\], but it must be a JSON object/],
  [
    'a zero limit',
    '{"Limit":0,"Holders":{}}',
    /Limit is 0, but it must be a whole number of at least 1/,
  ],
  [
    'a fractional limit',
    '{"Limit":1.5,"Holders":[]}',
    /Limit is 1\.5, but it must be a whole number of at least 1/,
  ],
  [
    'a string limit',
    '{"limit":"2","holders":[]}',
    /limit is "2", but it must be a whole number of at least 1/,
  ],
  ['no limit', '{"Holders":{}}', /Limit is missing, but it must be a whole number of at least 1/],
  [
    'a holder that is not a string',
    '{"Limit":2,"Holders":["a",5]}',
    /Holders\.1 is 5, but it must be a string \(a session id\)/,
  ],
  [
    'holders of the wrong type',
    '{"Limit":2,"Holders":7}',
    /Holders is 7, but it must be a list of session ids or a map/,
  ],
  ['mixed key casing', '{"Limit":2,"holders":["a"]}', /mixes/],
  ['a holder map value that is a number', '{"Limit":2,"Holders":{"a":1}}', /"a" has a number/],
  ['a holder map value that is a string', '{"Limit":2,"Holders":{"a":"true"}}', /"a" has a string/],
  ['a holder map value that is an object', '{"Limit":2,"Holders":{"a":{}}}', /"a" has an object/],
  ['a holder map value that is an array', '{"Limit":2,"Holders":{"a":[]}}', /"a" has an array/],
]

/** Go-shaped holder map values that consul lock reads, each counting its key as a holder. */
export const goMapHolderValues = ['true', 'false', 'null'] as const

const twoWaiters = [contenderEntry(prefix, 'first', 10n), contenderEntry(prefix, 'second', 11n)]
const twoSlotsFree = snapshotOf([lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n), ...twoWaiters])
const oneSlotFree = snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{}}', 40n), ...twoWaiters])
const tiedWaiters = snapshotOf([contenderEntry(prefix, 'b', 10n), contenderEntry(prefix, 'a', 10n)])
const twoInLine = snapshotOf([contenderEntry(prefix, 'a', 10n), contenderEntry(prefix, 'b', 11n)])

/** Every scenario of the decide tests, by name. */
export const decideScenarios = {
  'a missing .lock': { snapshot: snapshotOf([me]), options },
  'an empty .lock value': { snapshot: snapshotOf([lockEntry(prefix, null, 7n), me]), options },
  'a go-map .lock': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Holders":{"zz":true},"Limit":3}', 40n),
      contenderEntry(prefix, 'zz', 10n),
      me,
    ]),
    options: { ...options, limit: 3 },
  },
  'a guide-list .lock': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":3,"Holders":["zz","aa"]}', 40n),
      contenderEntry(prefix, 'zz', 10n),
      contenderEntry(prefix, 'aa', 11n),
      me,
    ]),
    options: { ...options, limit: 3 },
  },
  'a java-list .lock': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"limit":3,"holders":["zz"]}', 40n, { flags: 0n }),
      contenderEntry(prefix, 'zz', 10n),
      me,
    ]),
    options: { ...options, limit: 3 },
  },
  'extra fields in any order': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Owner":"ops","Holders":["a"],"Version":2,"Limit":2}', 40n),
      contenderEntry(prefix, 'a', 10n),
      me,
    ]),
    options,
  },
  'Holders null': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":2,"Holders":null}', 40n), me]),
    options,
  },
  'a .lock with flags 0': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n, { flags: 0n }), me]),
    options,
  },
  'a .lock with the flags of consul lock': {
    snapshot: snapshotOf([lockEntry(prefix, 'anything', 40n, { flags: LOCK_FLAGS }), me]),
    options,
  },
  'a contender key with the flags of consul lock': {
    snapshot: snapshotOf([contenderEntry(prefix, 'me', 50n, { flags: LOCK_FLAGS })]),
    options,
  },
  'a .lock with another limit': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":5,"Holders":{}}', 40n), me]),
    options,
  },
  'a .lock with another limit that lists me': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":5,"Holders":{"me":true}}', 40n), me]),
    options,
  },
  'a raised limit, followed': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":3,"Holders":{"a":true,"b":true}}', 40n),
      contenderEntry(prefix, 'a', 10n),
      contenderEntry(prefix, 'b', 11n),
      me,
    ]),
    options: { ...options, followLimit: true },
  },
  'a limit lowered under its holders, followed': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":1,"Holders":{"a":true,"b":true}}', 40n),
      contenderEntry(prefix, 'a', 10n),
      contenderEntry(prefix, 'b', 11n),
      me,
    ]),
    options: { ...options, followLimit: true },
  },
  ...Object.fromEntries(
    corruptBodies.map(([what, body]) => [
      `a corrupt .lock: ${what}`,
      {
        snapshot: snapshotOf([
          lockEntry(prefix, null, 40n, {
            value: typeof body === 'string' ? utf8.encode(body) : body,
          }),
          me,
        ]),
        options,
      },
    ]),
  ),
  ...Object.fromEntries(
    goMapHolderValues.map((value) => [
      `a go-map holder whose value is ${value}`,
      {
        snapshot: snapshotOf([
          lockEntry(prefix, `{"Limit":2,"Holders":{"a":${value}}}`, 40n),
          contenderEntry(prefix, 'a', 10n),
          me,
        ]),
        options,
      },
    ]),
  ),
  'live holders with false and null values': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":2,"Holders":{"a":false,"b":null}}', 40n),
      contenderEntry(prefix, 'a', 10n),
      contenderEntry(prefix, 'b', 11n),
      me,
    ]),
    options,
  },
  'a live holder': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":2,"Holders":{"me":true}}', 40n), me]),
    options,
  },
  'a missing contender key': {
    snapshot: snapshotOf([lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n)]),
    options,
  },
  'a contender key locked by nobody': {
    snapshot: snapshotOf([contenderEntry(prefix, 'me', 50n, { session: undefined })]),
    options,
  },
  'a holder whose contender key disappeared': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"gone":true}}', 40n),
      contenderEntry(prefix, 'a', 10n),
      me,
    ]),
    options,
  },
  'live holders filling the limit': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"b":true}}', 40n),
      contenderEntry(prefix, 'a', 10n),
      contenderEntry(prefix, 'b', 11n),
      me,
    ]),
    options,
  },
  'the first of two waiters for one slot': {
    snapshot: oneSlotFree,
    options: { prefix, limit: 1, session: 'first' },
  },
  'the second of two waiters for one slot': {
    snapshot: oneSlotFree,
    options: { prefix, limit: 1, session: 'second' },
  },
  'the first of two waiters for two slots': {
    snapshot: twoSlotsFree,
    options: { prefix, limit: 2, session: 'first' },
  },
  'the second of two waiters for two slots': {
    snapshot: twoSlotsFree,
    options: { prefix, limit: 2, session: 'second' },
  },
  'the second of two waiters once the first holds one of two slots': {
    snapshot: snapshotOf([
      lockEntry(prefix, '{"Limit":2,"Holders":{"first":true}}', 41n),
      ...twoWaiters,
    ]),
    options: { prefix, limit: 2, session: 'second' },
  },
  'waiters with the same CreateIndex': {
    snapshot: tiedWaiters,
    options: { prefix, limit: 1, session: 'b' },
  },
  'the second in line with fairness off': {
    snapshot: twoInLine,
    options: { prefix, limit: 1, session: 'b', fairness: false },
  },
  'the second in line ignoring its rank': {
    snapshot: twoInLine,
    options: { prefix, limit: 1, session: 'b', ignoreRank: true },
  },
  'keys that are not direct children locked by their own session': {
    snapshot: snapshotOf([
      contenderEntry(prefix, 'a', 1n, { key: 'svc/lock/deep/a' }),
      contenderEntry(prefix, 'b', 2n, { key: 'svc/lockx/b' }),
      contenderEntry(prefix, 'c', 3n, { session: 'someone-else' }),
      contenderEntry(prefix, 'me', 9n),
    ]),
    options: { ...options, limit: 1 },
  },
  'a prefix with a trailing slash': {
    snapshot: snapshotOf([me]),
    options: { ...options, prefix: 'svc//lock/' },
  },
} satisfies Record<string, DecideScenario>

/** The name of a scenario of the table. */
export type ScenarioName = keyof typeof decideScenarios
