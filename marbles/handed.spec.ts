// A waiter asleep on its own key (the only contender of its process) learns of its turn from that
// key: a release marked it HOLDER_FLAGS in the transaction that listed it in `.lock`. These specs
// pin what the machine does with that news (`handed`), on the production interpreter: it holds at
// once, with the hand-off's index as its token; the listing that follows confirms it or takes it
// back; and nothing older than the hand-off can.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import { distinctUntilChanged, map, type Observable } from 'rxjs'
import { HOLDER_FLAGS } from '../src/base/flags.js'
import type { ContenderEvent } from '../src/core/events.js'
import { contending, holds, type Said } from './support/port.js'
import { created, releaseRequested, renewed, seen } from './support/events.js'
import { prefix } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const options = { prefix, limit: 1 }
const flags = { t: true, f: false }

/** `a` holds the one slot (its key marked at 3); we wait behind it. */
const behindA = snapshotOf([
  contenderEntry(prefix, 'a', 3n, { flags: HOLDER_FLAGS }),
  contenderEntry(prefix, 'me', 5n),
  lockEntry(prefix, '{"Limit":1,"Holders":{"a":true}}', 9n),
])
/** `a` handed us its slot at 40: `.lock` lists us, our key is marked at the same index. */
const handedAt40 = snapshotOf(
  [
    contenderEntry(prefix, 'me', 5n, { flags: HOLDER_FLAGS, modifyIndex: 40n }),
    lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 40n),
  ],
  41n,
)
/** After the hand-off, an operator took us out of `.lock` by hand (at 42). */
const removedAt42 = snapshotOf([
  contenderEntry(prefix, 'me', 5n, { flags: HOLDER_FLAGS, modifyIndex: 40n }),
  lockEntry(prefix, '{"Limit":1,"Holders":{}}', 42n),
])

const handed = (index: bigint, session = 'me'): ContenderEvent => ({
  type: 'handed',
  session,
  index,
})

/** c: session (lease until 900); C: session (lease until 90); w: waiting; h: handed at 40; L: its listing; R: removed. */
const events: Record<string, ContenderEvent> = {
  c: created('me', 1000, 0),
  C: created('me', 100, 0),
  w: seen(behindA),
  h: handed(40n),
  L: seen(handedAt40),
  R: seen(removedAt42),
  r: releaseRequested,
}

/** Each change of holding, as `t40` (holding, token 40) or `f` / `f:removed`. */
const said = (source: Observable<Said>): Observable<string> =>
  source.pipe(
    contending(options),
    map((s) =>
      s.holding ? `t${String(s.fencingToken)}` : s.reason === undefined ? 'f' : `f:${s.reason}`,
    ),
    distinctUntilChanged(),
  )

describe('a slot handed to a waiter asleep on its own key', () => {
  it('holds at the news, with the hand-off index as its token, and the listing confirms it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-h-L', events)
      const expected = '   f---a--'
      expectObservable(said(source), '^ 50ms !').toBe(expected, { f: 'f', a: 't40' })
    })
  })

  it('drops when the listing that follows shows it taken out of `.lock` since', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-h-R', events)
      const expected = '   f---a-x'
      const values = { f: 'f', a: 't40', x: 'f:removed' }
      expectObservable(said(source), '^ 50ms !').toBe(expected, values)
    })
  })

  it('ignores news no newer than what it saw, and news for another session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const stale = { ...events, o: handed(9n), s: handed(40n, 'other') }
      const source = cold('c-w-o-s', stale)
      expectObservable(source.pipe(holds(options)), '^ 50ms !').toBe('f', flags)
    })
  })

  it('does not hold on the news while its lease has lapsed', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-w 97ms h', events)
      expectObservable(source.pipe(holds(options)), '^ 150ms !').toBe('f', flags)
    })
  })

  // A late renewal decides again on the last snapshot, which is from before the hand-off and does
  // not list it: in doubt, it stays false until the listing that follows shows it holding.
  it('holds again after a lapsed lease only when the listing after the hand-off shows the slot', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-w-h 89ms n 4ms L', { ...events, n: renewed(100, 94) })
      const expected = '   f---t 85ms f 8ms t'
      expectObservable(source.pipe(holds(options)), '^ 120ms !').toBe(expected, flags)
    })
  })

  it('releases from the news alone when closed before the listing', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-h-r', events)
      const expected = '   f---t-(f|)'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })
})
