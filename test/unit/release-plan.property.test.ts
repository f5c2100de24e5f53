// Properties of the semaphore release plan over generated conversations with Consul: whatever
// Consul answers, and in whatever order, the plan ends, destroys its session once and last, and
// writes `.lock` only by a CAS on the ModifyIndex it last saw. A failure prints its seed, path and
// shrunk case; FC_SEED=<seed> FC_PATH=<path> replays it (test/support/property-runs.ts).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import fc from 'fast-check'
import type { TxnResult } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, LOCK_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { ReleaseAnswer, ReleaseCall } from '../../src/core/release/release-call.js'
import {
  releaseNext,
  releaseStart,
  type ReleaseOutcome,
} from '../../src/core/release/release-slot-plan.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'
import { runs } from '../support/property-runs.js'

const prefix = 'svc/sem'
const lockKey = `${prefix}/.lock`
const ownKey = `${prefix}/me`
const ours = (session: string, createIndex: bigint, flags = CONTENDER_FLAGS) =>
  contenderEntry(prefix, session, createIndex, { flags })

/** `.lock` bodies Consul may answer with: listing us, not listing us, served heir, must-not-write. */
const BODIES = [
  { body: '{"Limit":2,"Holders":{"me":true}}' },
  { body: '{"Limit":2,"Holders":{"me":true,"other":true}}' },
  { body: '{"Limit":2,"Holders":{"me":true,"w1":true}}' },
  { body: '{"Limit":2,"Holders":{"other":true}}' },
  { body: '{"Limit":2,"Holders":{}}' },
  { body: '{"Limit":2,' },
  { body: '{"Limit":3,"Holders":{"me":true}}' },
  { body: 'x', flags: LOCK_FLAGS },
] as const

const HINTS: readonly (KVSnapshot | undefined)[] = [
  undefined,
  snapshotOf([lockEntry(prefix, BODIES[0].body, 40n), ours('me', 5n, HOLDER_FLAGS)]),
  snapshotOf([lockEntry(prefix, BODIES[0].body, 40n), ours('me', 5n), ours('w1', 10n)]),
  snapshotOf([lockEntry(prefix, BODIES[3].body, 40n), ours('me', 5n), ours('w1', 10n)]),
  snapshotOf([ours('me', 5n)]),
]

const ERRORS: readonly ConsulError[] = [
  { _tag: 'ServerError', status: 500, body: 'rpc error', message: '500' },
  { _tag: 'ServerError', status: 429, body: 'slow down', retryAfterMs: 3000, message: '429' },
  { _tag: 'Timeout', timeoutMs: 1000, message: 'timeout' },
  { _tag: 'PermissionDenied', status: 403, body: 'Permission denied', message: '403' },
  { _tag: 'Aborted', message: 'aborted' },
]

/**
 * How Consul answers the next call, whatever it is: `txn`, `get` and `other` choose among the
 * answers that fit a transaction, a read, and a delete or destroy. Lost CASes and reads that list
 * the session weigh most: they are what makes a release go round.
 */
interface Pick {
  /** 0-4 the CAS lost, 5-6 committed, 7 the heir left, 8-9 a failure. */
  readonly txn: number
  /** 0-5 `.lock` lists the session, 6-7 it does not, 8 missing, 9 must not be written, 10 a failure. */
  readonly get: number
  /** 0-7 done, 8-9 a failure. */
  readonly other: number
  readonly error: number
  readonly random: number
}

interface Conversation {
  readonly attempts: number
  readonly hint: number
  /** The release lists the prefix wherever it would read `.lock` (`listReads`). */
  readonly listReads: boolean
  /**
   * Consul's answers: the n-th transaction is answered by `picks[n].txn`, the n-th read by
   * `picks[n].get`, and so on; past the end the last pick stands, so that a Consul that keeps
   * answering the same (a CAS lost, and `.lock` listing the session, again and again) is common.
   */
  readonly picks: readonly Pick[]
}

const conversation: fc.Arbitrary<Conversation> = fc.record({
  attempts: fc.oneof(
    { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: 12 }), weight: 1 },
  ),
  hint: fc.nat({ max: HINTS.length - 1 }),
  listReads: fc.boolean(),
  picks: fc.array(
    fc.record({
      txn: fc.nat({ max: 9 }),
      get: fc.nat({ max: 10 }),
      other: fc.nat({ max: 9 }),
      error: fc.nat({ max: ERRORS.length - 1 }),
      random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    }),
    { minLength: 1, maxLength: 80 },
  ),
})

const LISTING = [0, 1, 2] as const
const NOT_LISTING = [3, 4] as const
const MUST_NOT_WRITE = [5, 6, 7] as const

/** Consul's answer to `call` for `pick`; `.lock` moves on to index 41, 42, … with each read. */
function answerFor(call: ReleaseCall, pick: Pick, reads: number): ReleaseAnswer {
  const { random } = pick
  const error = ERRORS[pick.error]!
  switch (call.type) {
    case 'wait':
      return { type: 'wait', random }
    case 'txn': {
      if (pick.txn >= 8) return { type: 'txn', result: E.left(error), random }
      const result: TxnResult =
        pick.txn >= 7
          ? { committed: false, errors: [{ opIndex: 0, what: 'failed session check' }] }
          : pick.txn >= 5
            ? { committed: true, results: [] }
            : { committed: false, errors: [{ opIndex: 1, what: 'failed cas' }] }
      return { type: 'txn', result: E.right(result), random }
    }
    case 'get':
    case 'list': {
      if (pick.get === 10) {
        return call.type === 'get'
          ? { type: 'get', result: E.left(error), random }
          : { type: 'list', result: E.left(error), random }
      }
      const entry = pick.get === 8 ? null : lockAnswer(pick, reads)
      if (call.type === 'get') return { type: 'get', result: E.right(entry), random }
      // The prefix: `.lock` as a read would find it, this contender's key, a waiter of ours.
      const others = [ours('me', 5n, HOLDER_FLAGS), ours('w1', 10n)]
      const listing = snapshotOf(entry === null ? others : [entry, ...others])
      return { type: 'list', result: E.right(listing), random }
    }
    case 'put':
    case 'delete':
    case 'destroy':
      return { type: call.type, result: pick.other >= 8 ? E.left(error) : E.right(true), random }
  }
}

/** `.lock` as a read finds it for `pick` (not missing): it moves on to 41, 42, … with each read. */
function lockAnswer(pick: Pick, reads: number): KVEntry {
  const from = pick.get <= 5 ? LISTING : pick.get <= 7 ? NOT_LISTING : MUST_NOT_WRITE
  const chosen = BODIES[from[pick.error % from.length]!]
  const overrides = 'flags' in chosen ? { flags: chosen.flags } : {}
  return lockEntry(prefix, chosen.body, 41n + BigInt(reads), overrides)
}

/** The `.lock` a read or a listing answered with (null: missing), or undefined for any other. */
function lockRead(answer: ReleaseAnswer | undefined): KVEntry | null | undefined {
  if (answer?.type === 'get' && E.isRight(answer.result)) return answer.result.right
  if (answer?.type === 'list' && E.isRight(answer.result)) {
    return answer.result.right.entries.find((e) => e.key === lockKey) ?? null
  }
  return undefined
}

interface Played {
  readonly calls: readonly ReleaseCall[]
  readonly answers: readonly ReleaseAnswer[]
  readonly result: E.Either<ConsulError, ReleaseOutcome> | undefined
}

/** Plays the conversation until the plan is done or `maxSteps` calls were made. */
function playConversation(c: Conversation, maxSteps: number): Played {
  const calls: ReleaseCall[] = []
  const answers: ReleaseAnswer[] = []
  let step = releaseStart({
    prefix,
    session: 'me',
    limit: 2,
    attempts: c.attempts,
    hint: HINTS[c.hint],
    ...(c.listReads ? { listReads: true } : {}),
  })
  const asked = new Map<ReleaseCall['type'], number>()
  while (step.type === 'call' && calls.length < maxSteps) {
    const n = asked.get(step.call.type) ?? 0
    asked.set(step.call.type, n + 1)
    const pick = c.picks[Math.min(n, c.picks.length - 1)]!
    const answer = answerFor(step.call, pick, (asked.get('get') ?? 0) + (asked.get('list') ?? 0))
    calls.push(step.call)
    answers.push(answer)
    step = releaseNext(step.state, answer)
  }
  return { calls, answers, result: step.type === 'done' ? step.result : undefined }
}

/** Whether call i sends again a call that failed: it follows a wait after a failed answer. */
function isRetry(answers: readonly ReleaseAnswer[], i: number): boolean {
  const failed = answers[i - 2]
  return (
    answers[i - 1]?.type === 'wait' &&
    failed !== undefined &&
    failed.type !== 'wait' &&
    failed.type !== 'stale' &&
    E.isLeft(failed.result)
  )
}

/**
 * The most calls a release can make: at most `attempts` CAS writes, each after a pause and a read;
 * a first read, the waiter's delete and its read after it, a read after a heir left, the destroy;
 * each Consul call tried up to 4 times with 3 waits between.
 */
const maxCalls = (attempts: number) => 7 * (3 * attempts + 5)

describe('releaseStart / releaseNext over any answers', () => {
  it('ends in done within a bounded number of calls', () => {
    fc.assert(
      fc.property(conversation, (c) => {
        const played = playConversation(c, maxCalls(c.attempts) + 1)
        assert.ok(played.result !== undefined, `not done after ${played.calls.length} calls`)
        assert.ok(played.calls.length <= maxCalls(c.attempts))
      }),
      runs(1000),
    )
  })

  it('destroys the session once, as its last call: nothing but tries of that destroy follow it', () => {
    fc.assert(
      fc.property(conversation, (c) => {
        const { calls, answers } = playConversation(c, maxCalls(c.attempts))
        const first = calls.findIndex((call) => call.type === 'destroy')
        assert.ok(first >= 0, 'the session is destroyed')
        const tail = calls.slice(first)
        assert.ok(tail.every((call) => call.type === 'destroy' || call.type === 'wait'))
        assert.equal(calls.at(-1)?.type, 'destroy')
        const destroys = answers.filter((a) => a.type === 'destroy')
        assert.ok(destroys.length <= 4, 'at most 4 tries')
        // Every try but the last failed: the session is destroyed once.
        assert.ok(destroys.slice(0, -1).every((a) => a.type === 'destroy' && E.isLeft(a.result)))
      }),
      runs(1000),
    )
  })

  it('writes .lock only by a CAS on the ModifyIndex it last saw, at most `attempts` times', () => {
    fc.assert(
      fc.property(conversation, (c) => {
        const { calls, answers } = playConversation(c, maxCalls(c.attempts))
        let seen: bigint | undefined = HINTS[c.hint]?.entries.find(
          (e) => e.key === lockKey,
        )?.modifyIndex
        let casWrites = 0
        calls.forEach((call, i) => {
          if (call.type === 'put' || call.type === 'delete') assert.notEqual(call.key, lockKey)
          if (call.type === 'txn') {
            const writes = call.ops.filter((op) => op.key === lockKey)
            assert.equal(writes.length, 1, 'one op on .lock per transaction')
            const op = writes[0]!
            assert.equal(op.verb, 'cas')
            assert.ok(op.verb === 'cas' && op.index === seen, `cas on ${seen}`)
            if (!isRetry(answers, i)) casWrites++
          }
          const read = lockRead(answers[i])
          if (read !== undefined) seen = read?.modifyIndex
        })
        assert.ok(casWrites <= c.attempts, `${casWrites} CAS writes, ${c.attempts} attempts`)
      }),
      runs(1000),
    )
  })

  it('ends NotListed only after deleting its key and reading .lock after that', () => {
    fc.assert(
      fc.property(conversation, (c) => {
        const { calls, answers, result } = playConversation(c, maxCalls(c.attempts))
        if (result === undefined || E.isLeft(result) || result.right.type !== 'NotListed') return
        const deleted = calls.findIndex(
          (call, i) =>
            call.type === 'delete' &&
            call.key === ownKey &&
            answers[i]?.type === 'delete' &&
            E.isRight((answers[i] as { result: E.Either<ConsulError, boolean> }).result),
        )
        assert.ok(deleted >= 0, 'its key was deleted')
        const readAfter = answers.some((a, i) => i > deleted && lockRead(a) !== undefined)
        assert.ok(readAfter, '.lock was read after the delete')
      }),
      runs(1000),
    )
  })
})

describe('the generated conversations', () => {
  it('reach every outcome of a release, and failures, often enough to test them', () => {
    const counts = new Map<string, number>()
    for (const c of fc.sample(conversation, { numRuns: 1000, seed: 23 })) {
      const { result } = playConversation(c, maxCalls(c.attempts))
      const name =
        result === undefined ? 'unfinished' : E.isLeft(result) ? 'Left' : result.right.type
      counts.set(name, (counts.get(name) ?? 0) + 1)
    }
    for (const outcome of ['HandedOff', 'Released', 'NotListed', 'KeyOnly', 'GaveUp', 'Left']) {
      assert.ok((counts.get(outcome) ?? 0) >= 20, `${outcome}: ${JSON.stringify([...counts])}`)
    }
  })
})
