// The contender's one pure step, as the library runs it: `contenderStep` is what the machine of a
// contender's life (`lifeStep`) steps each session's run on. These specs pin its commands, step by
// step as plain function calls, and, on the production interpreter, show when each write is
// subscribed and cancelled.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, distinctUntilChanged, filter, map, type Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type {
  ContenderAction,
  ContenderStateOptions,
} from '../src/core/contender/contender-state-model.js'
import { contenderStep, type ContenderCommand } from '../src/core/contender/contender-step.js'
import { initialContenderState } from '../src/core/contender/contender-state-model.js'
import type { ContenderEvent, Decision } from '../src/core/events.js'
import { decide } from '../src/core/semaphore/decide.js'
import {
  casOk,
  created,
  disconnected,
  releaseRequested,
  seen,
  sessionGone,
} from './support/events.js'
import { contending, type Released } from './support/port.js'
import { keyGone, listed, me, prefix, waiting } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** One command in a word: `write:TryAcquire@0` (the CAS index), `cancel`, `wake@900`, `end:released+release`. */
function show(command: ContenderCommand): string {
  switch (command.type) {
    case 'write':
      return command.action.type === 'TryAcquire'
        ? `write:TryAcquire@${command.action.cas}`
        : `write:${command.action.type}`
    case 'cancel-write':
      return 'cancel'
    case 'wake':
      return `wake@${command.at ?? 'none'}`
    case 'end':
      return `end:${command.why}${command.release ? '+release' : ''}`
  }
}

const one = { prefix, limit: 1 }
const two = { prefix, limit: 2 }
/** Our key and `a`'s, and `.lock` (ModifyIndex 9) naming `a`: one of two slots free. */
const aHolds = snapshotOf([
  contenderEntry(prefix, 'a', 3n),
  me,
  lockEntry(prefix, '{"Limit":2,"Holders":{"a":true}}', 9n),
])

/** The events of these specs, each in one letter. */
const events: Record<string, ContenderEvent> = {
  c: created('me', 1000, 0),
  w: seen(waiting),
  k: casOk(['me'], 21n),
  l: seen(listed),
  a: seen(aHolds),
  f: seen(
    snapshotOf([
      contenderEntry(prefix, 'a', 3n),
      me,
      lockEntry(prefix, '{"Limit":1,"Holders":{"a":true}}', 9n),
    ]),
  ),
  g: seen(keyGone),
  d: disconnected,
  x: sessionGone,
  r: releaseRequested,
}

/**
 * Steps `source` (letters of `events`, each at the frame of its place) through `contenderStep`,
 * one plain call each with no timer, and expects the commands of each step, in words: the letter of
 * `expected` at a step's frame, or `-` for a step that asks for nothing.
 */
function expectCommands(
  options: ContenderStateOptions,
  source: string,
  expected: string,
  words: Record<string, string>,
): void {
  let state = initialContenderState
  const actual = [...source].map((letter, at) => {
    if (letter === '-') return '-'
    const step = contenderStep(state, events[letter] as ContenderEvent, at, options)
    state = step.state
    const said = step.commands.map(show).join(' ')
    return said === '' ? '-' : (Object.keys(words).find((key) => words[key] === said) ?? said)
  })
  assert.equal(actual.join('').replace(/-+$/, ''), expected)
}

describe('contenderStep: the commands', () => {
  it('should set the lease wake-up, ask for the CAS, cancel it once answered, and end with a release', () => {
    expectCommands(one, 'c-w-k-l-r', 'a-b-c---d', {
      a: 'wake@900',
      b: 'write:TryAcquire@0',
      c: 'cancel',
      d: 'end:released+release',
    })
  })

  it('should end without a release when the session is gone, and cancel the write first', () => {
    expectCommands(one, 'c-w-x', 'a-b-c', {
      a: 'wake@900',
      b: 'write:TryAcquire@0',
      c: 'cancel end:session-gone',
    })
  })

  it('should end with a release when the session is gone while .lock lists it', () => {
    expectCommands(one, 'c-w-k-l-x', 'a-b-c---d', {
      a: 'wake@900',
      b: 'write:TryAcquire@0',
      c: 'cancel',
      d: 'end:session-gone+release',
    })
  })

  it('should end with a release when the session goes after a snapshot showed its key gone under .lock', () => {
    // The listing that showed the key gone (Consul deleted it with the session) unlisted the
    // contender, but `.lock` still names it: a dead holder that the process gives back.
    // The key gone, it asks for it again (`NotContending`) until the session's loss ends the run.
    expectCommands(one, 'c-w-k-l-g-x', 'a-b-c---d-e', {
      a: 'wake@900',
      b: 'write:TryAcquire@0',
      c: 'cancel',
      d: 'write:NotContending',
      e: 'cancel end:session-gone+release',
    })
  })

  it('should replace the CAS when another holder rewrites .lock before it answers', () => {
    expectCommands(two, 'c-w-a', 'x-y-z', {
      x: 'wake@900',
      y: 'write:TryAcquire@0',
      z: 'write:TryAcquire@9',
    })
  })

  it('should give up a try-once contender at the first refusal, with a release', () => {
    expectCommands({ ...one, fairness: false, tryOnce: true }, 'c-f', 'a-b', {
      a: 'wake@900',
      b: 'end:refused+release',
    })
  })

  it('should drop the write when the watch fails, and ask for it again when it answers', () => {
    expectCommands(one, 'c-w-d-w', 'a-b-c-b', {
      a: 'wake@900',
      b: 'write:TryAcquire@0',
      c: 'cancel',
    })
  })

  it('should wake at the lease deadline with no event, and drop the hold there', () => {
    // On the production interpreter: its wake-up timer is the step's `wake` command.
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k', events)
      const holding = source.pipe(
        contending(one),
        map((state) => state.holding),
        distinctUntilChanged(),
      )
      // f from its session at 0, t at 4 (k answers the CAS), f at 900 (the wake-up).
      expectObservable(holding, '^ 950ms !').toBe('f---t 895ms f', { f: false, t: true })
    })
  })
})

describe('the production interpreter: the writes it runs', () => {
  it('should subscribe the CAS when asked, and cancel it when a new CAS replaces it', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('c-w---a', events)
      const first = cold<ContenderEvent>('-')
      const second = cold<ContenderEvent>('--k', { k: casOk(['a', 'me'], 12n) })
      const perform = (action: ContenderAction): Observable<ContenderEvent> =>
        action.type === 'TryAcquire' && action.cas === 0n ? first : second
      const held = source.pipe(
        contending({ ...two, perform }),
        map((state) => state.holding),
      )
      expectObservable(held.pipe(filter(Boolean)), '^ 50ms !').toBe('--------t', { t: true })
      expectSubscriptions(first.subscriptions).toBe('  --^---!')
      expectSubscriptions(second.subscriptions).toBe(' ------^-!')
    })
  })

  it('should tear the write down when the run ends, at the end command', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('c-w---r', events)
      const write = cold<ContenderEvent>('-')
      const released: Released[] = []
      const states = source.pipe(contending({ ...one, perform: () => write, released }))
      // close() at 6: the write is cancelled, the release starts, and the states complete.
      expectObservable(states.pipe(filter(() => false)), '^ 50ms !').toBe('------|')
      expectSubscriptions(write.subscriptions).toBe('--^---!')
      asyncScheduler.schedule(
        () =>
          assert.deepEqual(
            released.map((r) => r.at),
            [6],
          ),
        10,
      )
    })
  })

  it('should make a completed write again when a later decision still asks for it', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      // The contender key written, then a snapshot without it (an operator deleted it).
      const source = cold('c-e---e', { ...events, e: seen(snapshotOf([])) })
      const write = cold<ContenderEvent>('-|')
      const writes = source.pipe(
        contending({ ...one, perform: () => write }),
        map((state) => state.write?.type ?? 'none'),
        distinctUntilChanged(),
      )
      // Each write completes a frame later (`written`): the step forgets it, and asks again.
      expectObservable(writes, '^ 50ms !').toBe('u-Nu--Nu', { u: 'none', N: 'NotContending' })
      expectSubscriptions(write.subscriptions).toBe(['--^!', '------^!'])
    })
  })
})

describe('contenderStep: the decision a snapshot carries', () => {
  const session = created('me', 1000, 0)
  const started = contenderStep(initialContenderState, session, 0, one).state
  const counted = (): { count: () => number; decideStep: typeof decide } => {
    let n = 0
    return {
      count: () => n,
      decideStep: (snapshot, options) => {
        n++
        return decide(snapshot, options)
      },
    }
  }

  it('should take the decision given with the snapshot and not decide again', () => {
    const { count, decideStep } = counted()
    const given: Decision = decide(waiting, { prefix, session: 'me', limit: 1 })
    const { state } = contenderStep(
      started,
      { type: 'snapshot', snapshot: waiting, decision: given },
      1,
      { ...one, decide: decideStep },
    )
    assert.equal(state.decision, given)
    assert.equal(count(), 0)
  })

  it('should decide afresh when given the decision it already took', () => {
    const { count, decideStep } = counted()
    const options = { ...one, decide: decideStep }
    const given: Decision = decide(waiting, { prefix, session: 'me', limit: 1 })
    const first = contenderStep(
      started,
      { type: 'snapshot', snapshot: waiting, decision: given },
      1,
      options,
    )
    const again = contenderStep(
      first.state,
      { type: 'snapshot', snapshot: waiting, decision: given },
      2,
      options,
    )
    assert.equal(count(), 1)
    assert.notEqual(again.state.decision, given)
    assert.deepEqual(again.state.decision, given)
  })
})
