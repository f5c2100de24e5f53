// A holder between two jobs of its process: the `renew` input, the one write it asks for
// (`Refencing`: Refence keeps the slot, Rotate hands it on and rejoins at the tail), and the token the
// next job gets. The production interpreter runs it with the semaphore protocol's own refencing
// (`refencing` on the shared view), as a job pool's worker does; `n` is the pool's refence().
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, distinctUntilChanged, filter, map, type Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type {
  ContenderAction,
  ContenderStateOptions,
} from '../src/core/contender/contender-state-model.js'
import type { RefenceInput } from '../src/core/contender/contender-input.js'
import type { ContenderEvent } from '../src/core/events.js'
import { prefixView } from '../src/core/semaphore/prefix-view.js'
import { refencing, type Refencing } from '../src/core/semaphore/refencing.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS } from '../src/base/flags.js'
import { created, seen } from './support/events.js'
import { contending, type WriteLog } from './support/port.js'
import { poolWorker, prefix } from './support/scenario.js'
import { bytes, contenderEntry, lockEntry, snapshotOf, text } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** The step's options with the semaphore's refencing, limit 2, and no quantum (a job's end yields). */
const two = poolWorker(2, 0)

const holderKey = (session: string, index: bigint) =>
  contenderEntry(prefix, session, 3n, { flags: HOLDER_FLAGS, modifyIndex: index })

/** We hold (our key rewritten at 20 by our CAS), with `a`; nobody waits. */
const weHold = snapshotOf([
  holderKey('a', 10n),
  holderKey('me', 20n),
  lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
])
/** The same, and `w` (one of ours, or another process's) waits behind. */
const wWaits = snapshotOf([
  holderKey('a', 10n),
  holderKey('me', 20n),
  contenderEntry(prefix, 'w', 22n, { flags: CONTENDER_FLAGS }),
  lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
])

const renew: RefenceInput = { type: 'refence' }
const inputs: Record<string, ContenderEvent | RefenceInput> = {
  c: created('me', 10_000, 0),
  h: seen(weHold),
  w: seen(wWaits),
  n: renew,
  a: { type: 'refence', ahead: true },
}

/** A write in a word: `Refence@20`, `Rotate@20>w` (handed to w), `Rotate@20` (released). */
function word(action: ContenderAction): string {
  switch (action.type) {
    case 'Refence':
      return `Refence@${action.cas}`
    case 'Rotate':
      return `Rotate@${action.cas}${action.handOff ? `>${action.handOff.heir}` : ''}`
    default:
      return action.type
  }
}

describe('refencing: the write between two jobs', () => {
  it('should keep the slot when nobody else waits: holding drops, one Refence, and holding comes back under the new token', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const refence = cold<ContenderEvent>('--(r|)', {
        r: { type: 'refenced', ok: true, refencing: 'Refence', modifyIndex: 31n },
      })
      const perform = (action: ContenderAction): Observable<ContenderEvent> => {
        assert.equal(word(action), 'Refence@20')
        return refence
      }
      const states = cold('c-h-n', inputs).pipe(contending({ ...two, perform }))
      const tenure = states.pipe(
        map((state) => (state.holding ? `t${state.fencingToken}` : 'f')),
        distinctUntilChanged(),
        filter((value) => value !== 'f'),
      )
      // Held at 2 under token 20 (its CAS's index), then under 31 once the Refence answered.
      expectObservable(tenure, '^ 50ms !').toBe('--a---b', { a: 't20', b: 't31' })
      expectSubscriptions(refence.subscriptions).toBe('----^-!')
    })
  })

  it('should not hold while the Refence is out, and never again under the last job token', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const states = cold('c-h-n', inputs).pipe(contending({ ...two, perform: () => cold('-') }))
      const holding = states.pipe(
        map((state) => state.holding),
        distinctUntilChanged(),
      )
      expectObservable(holding, '^ 50ms !').toBe('f-t-f', { t: true, f: false })
    })
  })

  it('should rotate when another contender waits: hand it the slot and rejoin at the tail, in one write', () => {
    const action = refencing(
      wWaits,
      { prefix, session: 'me', limit: 2 },
      prefixView(wWaits, { prefix, limit: 2 }),
    ) as Extract<Refencing, { type: 'Rotate' }>
    assert.equal(word(action), 'Rotate@20>w')
    assert.equal(text(action.body), '{"Limit":2,"Holders":{"a":true,"w":true}}')
  })

  it('should leave the tenure after a committed Rotate: not holding, not listed, no token', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const rotate = cold<ContenderEvent>('--(r|)', {
        r: { type: 'refenced', ok: true, refencing: 'Rotate', modifyIndex: 33n },
      })
      const states = cold('c-w-n', inputs).pipe(contending({ ...two, perform: () => rotate }))
      const after = states.pipe(
        map((state) => `${state.holding}/${state.listed}/${state.fencingToken ?? '-'}`),
        distinctUntilChanged(),
      )
      expectObservable(after, '^ 50ms !').toBe('a-b-c-d', {
        a: 'false/false/-',
        b: 'true/true/20',
        c: 'false/true/20',
        d: 'false/false/-',
      })
    })
  })

  it('should try again on the next snapshot when the refencing did not commit, and hold under its token', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const refused = cold<ContenderEvent>('-(r|)', {
        r: { type: 'refenced', ok: false, refencing: 'Refence' },
      })
      const later = snapshotOf([
        holderKey('a', 10n),
        holderKey('me', 20n),
        lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 26n),
      ])
      const committed = cold<ContenderEvent>('-(r|)', {
        r: { type: 'refenced', ok: true, refencing: 'Refence', modifyIndex: 27n },
      })
      const perform = (action: ContenderAction): Observable<ContenderEvent> =>
        action.type === 'Refence' && action.cas === 20n ? refused : committed
      const states = cold('c-h-n---l', { ...inputs, l: seen(later) }).pipe(
        contending({ ...two, perform }),
      )
      const tokens = states.pipe(
        map((state) => (state.holding ? `t${state.fencingToken}` : 'f')),
        distinctUntilChanged(),
        filter((value) => value !== 'f'),
      )
      expectObservable(tokens, '^ 50ms !').toBe('--a------b', { a: 't20', b: 't27' })
      expectSubscriptions(refused.subscriptions).toBe('----^!')
      expectSubscriptions(committed.subscriptions).toBe('--------^!')
    })
  })

  it('should ignore renew when it does not hold, and write nothing', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const waitingOnly = snapshotOf([contenderEntry(prefix, 'me', 5n, { flags: CONTENDER_FLAGS })])
      const writes: WriteLog[] = []
      const states = cold('c-s-n', { ...inputs, s: seen(waitingOnly) }).pipe(
        contending({ ...two, writes }),
      )
      const write = states.pipe(
        map((state) => state.write?.type ?? 'none'),
        distinctUntilChanged(),
      )
      expectObservable(write, '^ 50ms !').toBe('u-T', { u: 'none', T: 'TryAcquire' })
      // The CAS it makes as a waiter at 2 (still out), and nothing at 4.
      asyncScheduler.schedule(() => assert.deepEqual(writes, [{ type: 'TryAcquire', from: 2 }]), 10)
    })
  })
})

/** The write asked for, in a word, each time it changes. */
const writeWords = (states: Observable<{ write: ContenderAction | undefined }>) =>
  states.pipe(
    map((state) => (state.write === undefined ? '-' : word(state.write))),
    distinctUntilChanged(),
    filter((value) => value !== '-'),
  )

/** Holding, and under which token: `t20`, or `f`. */
const tenures = (states: Observable<{ holding: boolean; fencingToken: bigint | undefined }>) =>
  states.pipe(
    map((state) => (state.holding ? `t${state.fencingToken}` : 'f')),
    distinctUntilChanged(),
  )

describe('refencing: the quantum a worker keeps its slot for while others wait', () => {
  /** `two` with a quantum of 10 ms from the first holding. */
  const quantum: ContenderStateOptions = { ...two, quantumMs: 10 }

  it('should keep the slot for the next job of its process when a job ends within the quantum, although w waits', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Holding from 2 with w behind; the job ends at 6, 4 ms into the quantum.
      const states = cold('c-w---n', inputs).pipe(
        contending({ ...quantum, perform: () => cold('-') }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('------a', { a: 'Refence@20' })
    })
  })

  it('should hand the slot within the quantum to a process that holds none, when its own holds another', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // a and me are of one process (A); w, without a value, is a process of its own that holds
      // nothing. The job ends at 6, 4 ms into the quantum, and the slot goes to w.
      const ofA = { value: bytes('host:A') }
      const twoOfA = snapshotOf([
        contenderEntry(prefix, 'a', 3n, { flags: HOLDER_FLAGS, modifyIndex: 10n, ...ofA }),
        contenderEntry(prefix, 'me', 3n, { flags: HOLDER_FLAGS, modifyIndex: 20n, ...ofA }),
        contenderEntry(prefix, 'w', 22n, { flags: CONTENDER_FLAGS }),
        lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
      ])
      const states = cold('c-w---n', { ...inputs, w: seen(twoOfA) }).pipe(
        contending({ ...quantum, perform: () => cold('-') }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('------a', { a: 'Rotate@20>w' })
    })
  })

  it('should hand the slot within the quantum to a process holding two fewer, and keep it from one holding one fewer', () => {
    /** Limit 4, a quantum of 10 ms. */
    const four = poolWorker(4, 10)
    const heldBy = (holders: readonly [string, string][]) =>
      snapshotOf([
        ...holders.map(([session, value], i) =>
          contenderEntry(prefix, session, BigInt(3 + i), {
            flags: HOLDER_FLAGS,
            modifyIndex: session === 'me' ? 20n : BigInt(10 + i),
            value: bytes(value),
          }),
        ),
        contenderEntry(prefix, 'w', 22n, { flags: CONTENDER_FLAGS, value: bytes('host:B') }),
        lockEntry(
          prefix,
          `{"Limit":4,"Holders":{${holders.map(([session]) => `"${session}":true`).join(',')}}}`,
          20n,
        ),
      ])
    // A (me among them) holds 3, B holds 1: w's turn is 1, less than 3 - 1.
    const threeToOne = heldBy([
      ['a1', 'host:A'],
      ['a2', 'host:A'],
      ['me', 'host:A'],
      ['b1', 'host:B'],
    ])
    // A holds 2, B holds 2: w's turn is 2, not less than 2 - 1.
    const twoToTwo = heldBy([
      ['a1', 'host:A'],
      ['me', 'host:A'],
      ['b1', 'host:B'],
      ['b2', 'host:B'],
    ])
    for (const [listing, write] of [
      [threeToOne, 'Rotate@20>w'],
      [twoToTwo, 'Refence@20'],
    ] as const) {
      testScheduler().run(({ cold, expectObservable }) => {
        // The job ends at 6, 4 ms into the quantum.
        const states = cold('c-w---n', { ...inputs, w: seen(listing) }).pipe(
          contending({ ...four, perform: () => cold('-') }),
        )
        expectObservable(writeWords(states), '^ 50ms !').toBe('------a', { a: write })
      })
    }
  })

  it('should hand the slot to w when a job ends once the quantum is over', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Holding from 2; the job ends at 12, 10 ms on the slot.
      const states = cold('c-w 9ms n', inputs).pipe(
        contending({ ...quantum, perform: () => cold('-') }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('------------a', {
        a: 'Rotate@20>w',
      })
    })
  })

  it('should count the quantum from the first holding, across the re-fences that keep the slot', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Kept at 4 (Refence, answered at 5 under token 31); the next job ends at 13: 11 ms on the
      // slot since 2, though 8 ms since the Refence.
      const kept = snapshotOf([
        holderKey('a', 10n),
        holderKey('me', 31n),
        contenderEntry(prefix, 'w', 22n, { flags: CONTENDER_FLAGS }),
        lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
      ])
      const answered = cold<ContenderEvent>('-(r|)', {
        r: { type: 'refenced', ok: true, refencing: 'Refence', modifyIndex: 31n },
      })
      const perform = (action: ContenderAction): Observable<ContenderEvent> =>
        action.type === 'Refence' ? answered : cold('-')
      const states = cold('c-w-n-k------n', { ...inputs, k: seen(kept) }).pipe(
        contending({ ...quantum, perform }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('----a--------b', {
        a: 'Refence@20',
        b: 'Rotate@20>w',
      })
    })
  })

  it('should give a slot up within the quantum when the limit was lowered under the holders', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const lowered = snapshotOf([
        holderKey('a', 10n),
        holderKey('me', 20n),
        lockEntry(prefix, '{"Limit":1,"Holders":{"a":true,"me":true}}', 24n),
      ])
      const states = cold('c-h-l-n', { ...inputs, l: seen(lowered) }).pipe(
        contending({ ...quantum, perform: () => cold('-') }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('------a', { a: 'Rotate@24' })
    })
  })
})

describe("refencing ahead: the next job's token written while this one runs", () => {
  const committed = (index: bigint) =>
    ({ type: 'refenced', ok: true, refencing: 'Refence', modifyIndex: index }) as const

  it('should write the token ahead while holding all along, and take it at the job end with no second write', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const ahead = cold<ContenderEvent>('--(r|)', { r: committed(31n) })
      const states = cold('c-h-a---n', inputs).pipe(contending({ ...two, perform: () => ahead }))
      // Held under 20 from 2; the job ends at 8 and the next holds under 31 at once.
      expectObservable(tenures(states), '^ 50ms !').toBe('f-a-----b', {
        f: 'f',
        a: 't20',
        b: 't31',
      })
      expectSubscriptions(ahead.subscriptions).toBe('----^-!')
    })
  })

  it('should make the write ahead the refence of a job that ends before its answer', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const ahead = cold<ContenderEvent>('---(r|)', { r: committed(31n) })
      const states = cold('c-h-a-n', inputs).pipe(contending({ ...two, perform: () => ahead }))
      // Not holding from the job's end at 6 until the answer at 7: never under 20 again.
      expectObservable(tenures(states), '^ 50ms !').toBe('f-a---fb', {
        f: 'f',
        a: 't20',
        b: 't31',
      })
      expectSubscriptions(ahead.subscriptions).toBe('----^--!')
    })
  })

  it('should refence at the job end when the write ahead did not commit', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const refused = cold<ContenderEvent>('-(r|)', {
        r: { type: 'refenced', ok: false, refencing: 'Refence' },
      })
      const later = cold<ContenderEvent>('-(r|)', { r: committed(33n) })
      let writes = 0
      const perform = (): Observable<ContenderEvent> => (++writes === 1 ? refused : later)
      const states = cold('c-h-a---n', inputs).pipe(contending({ ...two, perform }))
      expectObservable(tenures(states), '^ 50ms !').toBe('f-a-----fb', {
        f: 'f',
        a: 't20',
        b: 't33',
      })
    })
  })

  it('should not take a token written ahead once the quantum is over and w waits: it hands the slot on', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Written ahead at 4 (answered at 5, token 31); w queues at 6; the job ends at 15, 13 ms
      // into a 10 ms quantum.
      const wAfterAhead = snapshotOf([
        holderKey('a', 10n),
        holderKey('me', 31n),
        contenderEntry(prefix, 'w', 32n, { flags: CONTENDER_FLAGS }),
        lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
      ])
      const ahead = cold<ContenderEvent>('-(r|)', { r: committed(31n) })
      const perform = (action: ContenderAction): Observable<ContenderEvent> =>
        action.type === 'Refence' ? ahead : cold('-')
      const states = cold('c-h-a-v--------n', { ...inputs, v: seen(wAfterAhead) }).pipe(
        contending({ ...two, quantumMs: 10, perform }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('----a----------b', {
        a: 'Refence@20',
        b: 'Rotate@20>w',
      })
    })
  })

  it('should write nothing ahead when the slot is to be handed on: the quantum over and w waiting', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const states = cold('c-w 9ms a---n', inputs).pipe(
        contending({ ...two, quantumMs: 10, perform: () => cold('-') }),
      )
      expectObservable(writeWords(states), '^ 50ms !').toBe('----------------a', {
        a: 'Rotate@20>w',
      })
    })
  })
})
