// The pure parts of the `rxsem` command line: argument splitting and checking, the try-once
// rule on the public state, and the watch frame's layout.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EMPTY, NEVER, of, Subject } from 'rxjs'
import { splitAtCommand, UsageError } from '../../src/cli/args/parse-flags.js'
import { planRun, runFlagSpec, type RunPlan } from '../../src/cli/run/plan.js'
import { tryOnceVerdictOf } from '../../src/cli/run/contender.js'
import { waitForSlot } from '../../src/cli/run/phases.js'
import { describeTransition } from '../../src/cli/run/transitions.js'
import type { SemaphoreState } from '../../src/recipes/semaphore.js'
import { renderFrame, type WatchView } from '../../src/cli/watch/frame.js'
import { SemaphoreError } from '../../src/base/semaphore-error.js'

const plan = (argv: string[]): RunPlan => {
  const planned = planRun(argv)
  if (planned.help) throw new Error('expected a plan, got --help')
  return planned
}

describe('rxsem run arguments', () => {
  it('takes the command after --, and never parses its flags as rxsem flags', () => {
    assert.deepEqual(splitAtCommand(['--prefix', 'p', '--', 'ls', '--limit', '-l'], runFlagSpec), {
      flags: ['--prefix', 'p'],
      command: ['ls', '--limit', '-l'],
    })
  })

  it('takes the command from the first word that is not a flag or a flag value', () => {
    assert.deepEqual(splitAtCommand(['--prefix', 'p', '--shell', 'ls', '-l'], runFlagSpec), {
      flags: ['--prefix', 'p', '--shell'],
      command: ['ls', '-l'],
    })
  })

  it('reads durations, defaults and the Consul flags', () => {
    const p = plan([
      '--prefix',
      'svc/lock/',
      '--limit',
      '3',
      '--timeout',
      '1m30s',
      '--http-addr',
      '127.0.0.1:8501',
      '--',
      'true',
    ])
    assert.equal(p.prefix, 'svc/lock')
    assert.equal(p.limit, 3)
    assert.equal(p.timeoutMs, 90_000)
    assert.equal(p.graceMs, 5000)
    assert.equal(p.verbosity, 'normal')
    assert.equal(p.consul.address, '127.0.0.1:8501')
    assert.equal(p.sessionName, "rxsem run 'true' at svc/lock")
    assert.equal(p.followLimit, false)
    assert.equal(p.rideThrough, false)
  })

  it('takes --follow-limit for a semaphore, and refuses it with --leader', () => {
    assert.equal(
      plan(['--prefix', 'p', '--limit', '2', '--follow-limit', '--', 'true']).followLimit,
      true,
    )
    assert.throws(
      () => planRun(['--leader', '--prefix', 'p', '--follow-limit', '--', 'true']),
      /--leader holds a one-holder lock, whose limit is always 1/,
    )
  })

  it('rides through a Consul outage only when --ride-through is given', () => {
    const base = ['--prefix', 'p', '--limit', '1']
    assert.equal(plan([...base, '--ride-through', '--', 'true']).rideThrough, true)
    assert.equal(plan([...base, '--', 'true']).rideThrough, false)
    assert.equal(
      plan(['--prefix', 'p', '--leader', '--ride-through', '--', 'true']).rideThrough,
      true,
    )
  })

  it('refuses a raw token, a missing command, --limit with --leader, and a bad TTL', () => {
    const base = ['--prefix', 'p', '--limit', '1']
    assert.throws(() => planRun([...base, '--token=abc', '--', 'true']), UsageError)
    assert.throws(() => planRun(base), /no command to run/)
    assert.throws(
      () => planRun(['--leader', '--prefix', 'p', '--limit', '2', '--', 'true']),
      /--leader/,
    )
    assert.throws(
      () => planRun([...base, '--ttl', '5s', '--', 'true']),
      (e: unknown) => e instanceof SemaphoreError && e.kind === 'InvalidOptions',
    )
  })
})

describe('tryOnceVerdictOf (the try-once rule on the public state)', () => {
  const state = {
    holding: false,
    session: 's',
    contending: true,
    holders: [] as string[],
    waiting: [] as SemaphoreState['waiting'],
    limit: 2,
    rank: 0,
  }
  it('should say held when holding', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holding: true }, false), 'held'))
  it('should wait for the decision before the key is in Consul', () =>
    assert.equal(tryOnceVerdictOf({ ...state, contending: false }, false), 'undecided'))
  it('should wait for holding when listed as a holder', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['s'] }, false), 'undecided'))
  it('should say not held when every slot is taken', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['a', 'b'] }, false), 'not-held'))
  it('should take a free slot behind waiters when it does not wait (--timeout 0)', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['a'], rank: 1 }, false), 'undecided'))
  it('should say no slot is for it when waiters ranked first take the free slots', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['a'], rank: 1 }, true), 'not-held'))
  it('should wait for the CAS when a free slot is meant for it', () =>
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['a'], rank: 0 }, true), 'undecided'))
  it('should say not held to a request of two permits when one slot is free', () => {
    const waiting = [{ session: 's', rank: 0, value: null, createIndex: 9n, weight: 2 }]
    assert.equal(tryOnceVerdictOf({ ...state, holders: ['a'], waiting }, false), 'not-held')
    assert.equal(tryOnceVerdictOf({ ...state, holders: [], waiting }, false), 'undecided')
  })
  it('should wait for the error after a prefix problem (no rank)', () =>
    assert.equal(
      tryOnceVerdictOf({ ...state, holders: ['a', 'b'], rank: undefined }, false),
      'undecided',
    ))
})

describe('watch frame', () => {
  it('fits 80 columns with long values and names', () => {
    const view: WatchView = {
      prefix: 'a/very/long/prefix/'.repeat(6),
      address: 'http://127.0.0.1:8500',
      connection: { type: 'disconnected', attempt: 3, retryInMs: 2000, message: 'x '.repeat(80) },
      status: {
        prefix: 'p',
        limit: 2,
        shape: 'go-map',
        holders: [
          {
            session: '1'.repeat(36),
            alive: true,
            value: 'v'.repeat(60),
            name: 'n'.repeat(90),
            revoke: { graceMs: 30_000, reason: 'r'.repeat(90) },
          },
          { session: '2'.repeat(36), alive: false, value: null, name: null, revoke: null },
        ],
        waiting: [{ session: '3'.repeat(36), rank: 0, value: null, name: 'w'.repeat(90) }],
      },
      problem: undefined,
      firstSeen: new Map([['1'.repeat(36), { at: 0, seenTaken: true }]]),
    }
    const lines = renderFrame(view, 75_000, 80)
    assert.ok(
      lines.every((line) => line.length <= 80),
      lines.join('\n'),
    )
    assert.ok(lines.some((line) => line.startsWith('11111111  ') && line.includes('1m15s')))
    assert.ok(lines.some((line) => line.startsWith('22222222  DEAD')))
    assert.ok(
      lines.some((line) =>
        line.startsWith(' '.repeat(10) + 'asked to give the slot back within 30s: rrr'),
      ),
      'the request under its holder',
    )
  })
})

describe('rxsem run --verbose on a failed watch', () => {
  const held: SemaphoreState = {
    holding: true,
    reason: 'acquired',
    session: 'abcdef0123',
    contending: true,
    fencingToken: 7n,
    holders: ['abcdef0123'],
    waiting: [],
    rank: undefined,
    estimatedWaitMs: undefined,
    limit: 1,
    connected: true,
    leaseDeadline: 1000,
  }
  const messages = (previous: SemaphoreState, next: SemaphoreState): string[] =>
    describeTransition(previous, next).map((line) => line.message)

  it('says how long a waiter may still wait once its process can estimate it', () => {
    const waiting: SemaphoreState = {
      ...held,
      holding: false,
      fencingToken: undefined,
      holders: ['0123abcdef'],
      rank: 2,
    }
    const moved = { ...waiting, rank: 1, estimatedWaitMs: 1234 }
    assert.deepEqual(describeTransition(waiting, moved), [
      { level: 'detail', message: 'still waiting (1 of 1 held, rank 1, about 1.2s to wait)' },
    ])
  })

  it('says a holder that rides the failure holds on until the lease deadline', () => {
    assert.ok(
      messages(held, { ...held, connected: false }).includes(
        'watch disconnected; retrying, holding on until the lease deadline (--ride-through)',
      ),
    )
  })

  it('says only that it retries when the failure dropped the slot', () => {
    const dropped = { ...held, holding: false, reason: 'watch-failed' as const, connected: false }
    const lines = messages(held, dropped)
    assert.ok(lines.includes('watch disconnected; retrying'))
    assert.ok(lines.includes('slot dropped (watch-failed)'))
  })
})

describe('rxsem run waiting for a slot', () => {
  const waiting: SemaphoreState = {
    holding: false,
    reason: undefined,
    session: 'abcdef0123',
    contending: true,
    fencingToken: undefined,
    holders: ['0123abcdef'],
    waiting: [],
    rank: 1,
    estimatedWaitMs: undefined,
    limit: 1,
    connected: true,
    leaseDeadline: 1000,
  }
  const held: SemaphoreState = {
    ...waiting,
    holding: true,
    fencingToken: 9n,
    holders: ['abcdef0123'],
  }
  const plan = { timeoutMs: undefined, prefix: 'jobs' }

  it('hands the held state to onHeld in its own emission, before later subscribers see it', async () => {
    const state$ = new Subject<SemaphoreState>()
    const seen: string[] = []
    const waited = waitForSlot(state$, NEVER, plan, EMPTY, (state) =>
      seen.push(`onHeld ${state.fencingToken}`),
    )
    state$.subscribe((state) => seen.push(`narrator holding=${state.holding}`))
    state$.next(waiting)
    state$.next(held)
    state$.next({ ...held, fencingToken: 10n })
    assert.deepEqual(await waited, { type: 'held', state: held })
    assert.deepEqual(seen, [
      'narrator holding=false',
      'onHeld 9',
      'narrator holding=true',
      'narrator holding=true',
    ])
  })

  it('does not call onHeld when the wait ends otherwise', async () => {
    const state$ = new Subject<SemaphoreState>()
    let called = 0
    const waited = waitForSlot(state$, of<NodeJS.Signals>('SIGTERM'), plan, EMPTY, () => called++)
    state$.next(held)
    assert.deepEqual(await waited, { type: 'signal', signal: 'SIGTERM' })
    assert.equal(called, 0)
  })
})
