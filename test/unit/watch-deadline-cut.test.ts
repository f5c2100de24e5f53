// A Consul client agent of 1.11.9 to 1.14.x may answer a blocking read with a 500
// "rpc error making call: i/o deadline reached": the wait was cut short, the agent did not fail.
// watchPrefix re-reads at once without blocking (consistent, unless the watch reads stale) and
// reports no disconnect; the same 500 on a read that did not block is a failure as any other. A
// stub of `kv.list` answers each poll in turn and records what it asked for and when.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient, ListOptions } from '../../src/consul/client-api.js'
import { isDeadlineCut, type ConsulError } from '../../src/base/consul-error.js'
import type { KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'
import { CUT_POLL_SPACING_MS, watchPrefix } from '../../src/consul/watch-prefix.js'
import { advanceBy, httpFailure, unreachable } from '../support/consul-double.js'

type Answer = E.Either<ConsulError, KVSnapshot>
const at = (index: bigint): Answer => E.right({ index, entries: [] })
const DEADLINE = 'rpc error making call: i/o deadline reached'
const cut: Answer = E.left(httpFailure(500, DEADLINE, 'GET /v1/kv/p'))

interface Watched {
  /** `read|block <consistency> @<virtual ms>` per poll. */
  readonly polls: string[]
  /** `s<index>` per snapshot, `d` per disconnect. */
  readonly events: string[]
}

/**
 * Runs a watch over `answers` (then polls that never answer) for 30 s of virtual time: less than a
 * blocking read's wait, so the last one is never overdue (see watch-overdue-poll.test.ts).
 */
async function watch(
  answers: Answer[],
  options: { readonly consistency?: 'stale'; readonly answerAfterMs?: number } = {},
): Promise<Watched> {
  const scheduler = new VirtualTimeScheduler()
  const polls: string[] = []
  const list =
    (_prefix: string, listOptions: ListOptions = {}) =>
    () => {
      const kind = listOptions.index === undefined ? 'read' : 'block'
      polls.push(`${kind} ${listOptions.consistency ?? '-'} @${scheduler.now()}`)
      const next = answers.shift()
      return next === undefined ? new Promise<Answer>(() => undefined) : Promise.resolve(next)
    }
  const client = { kv: { list } } as unknown as Pick<ConsulClient, 'kv' | 'network'>
  const events: string[] = []
  const subscription = watchPrefix(client, 'p/', {
    scheduler,
    random: () => 0.5,
    minIntervalMs: 0,
    ...(options.consistency === undefined ? {} : { consistency: options.consistency }),
  }).subscribe({
    next: (event: WatchEvent) =>
      events.push(event.type === 'snapshot' ? `s${event.snapshot.index}` : 'd'),
    error: (error: unknown) => events.push(`error ${String(error)}`),
  })
  await advanceBy(scheduler, 30_000)
  subscription.unsubscribe()
  return { polls, events }
}

describe('watchPrefix: a blocking read cut short by "i/o deadline reached"', () => {
  it('re-reads at once without blocking, in consistent mode, and reports no disconnect', async () => {
    const { polls, events } = await watch([at(5n), cut, at(5n)])
    assert.deepEqual(polls, ['read - @0', 'block - @0', 'read consistent @0', 'block - @1000'])
    assert.deepEqual(events, ['s5'])
  })

  it('emits what the re-read shows when the prefix changed meanwhile', async () => {
    const { events } = await watch([at(5n), cut, at(7n)])
    assert.deepEqual(events, ['s5', 's7'])
  })

  it('keeps going through one cut after another without a disconnect', async () => {
    const { polls, events } = await watch([at(5n), cut, at(5n), cut, at(5n), cut, at(6n)])
    assert.deepEqual(events, ['s5', 's6'])
    assert.equal(polls.filter((p) => p.startsWith('block')).length, 4)
  })

  it('starts the blocking reads after cuts at least CUT_POLL_SPACING_MS apart', async () => {
    const { polls } = await watch([at(5n), cut, at(5n), cut, at(5n), cut, at(5n)])
    const starts = polls.filter((p) => p.startsWith('block')).map((p) => Number(p.split('@')[1]))
    assert.deepEqual(starts, [
      0,
      CUT_POLL_SPACING_MS,
      2 * CUT_POLL_SPACING_MS,
      3 * CUT_POLL_SPACING_MS,
    ])
  })

  it('keeps the re-read stale when the watch was asked for stale reads', async () => {
    const { polls } = await watch([at(5n), cut, at(5n)], { consistency: 'stale' })
    assert.deepEqual(polls.slice(0, 3), ['read stale @0', 'block stale @0', 'read stale @0'])
  })

  it('reports a disconnect when the re-read fails', async () => {
    const { events } = await watch([at(5n), cut, E.left(unreachable()), at(5n)])
    assert.deepEqual(events, ['s5', 'd', 's5'])
  })

  it('takes the same 500 on a read that did not block as a failure', async () => {
    const { events } = await watch([cut, at(5n)])
    assert.deepEqual(events, ['d', 's5'])
  })

  it('takes the same 500 on the re-read as a failure', async () => {
    const { events } = await watch([at(5n), cut, cut, at(5n)])
    assert.deepEqual(events, ['s5', 'd', 's5'])
  })

  it('takes another 500 on a blocking read as a failure', async () => {
    const other = E.left<ConsulError, KVSnapshot>(
      httpFailure(500, 'No cluster leader', 'GET /v1/kv/p'),
    )
    const { events } = await watch([at(5n), other, at(5n)])
    assert.deepEqual(events, ['s5', 'd', 's5'])
  })
})

describe('isDeadlineCut', () => {
  it('knows the 500 of a client agent whose RPC hit its deadline, also when nested', () => {
    assert.equal(isDeadlineCut(httpFailure(500, DEADLINE)), true)
    assert.equal(isDeadlineCut(httpFailure(500, `rpc error making call: ${DEADLINE}`)), true)
  })

  it('leaves other failures alone', () => {
    assert.equal(isDeadlineCut(httpFailure(500, 'No cluster leader')), false)
    assert.equal(isDeadlineCut(httpFailure(503, DEADLINE)), false)
    assert.equal(isDeadlineCut(httpFailure(400, DEADLINE)), false)
    assert.equal(isDeadlineCut(unreachable()), false)
  })
})
