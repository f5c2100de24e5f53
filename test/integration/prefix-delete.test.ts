// An operator deletes a semaphore's whole prefix while contenders hold. Consul 1.8 does not wake a
// blocking listing of `<prefix>/` for `DELETE <prefix>?recurse` once the prefix holds an older
// tombstone (a key released earlier), and answers it at the end of the wait with that
// tombstone's index, below the holder's own CAS. A holder must still learn at once that its key is
// gone. A delete is no write of the protocol: no contender can wait for the holder to notice it, so
// a newcomer on another watch may take the slot while the holder's own long poll is still on its
// way (Consul served it after the newcomer's two writes in about 1 in 400 trials on a loaded
// machine). Such an overlap must end with the holder's drop, and the newcomer's token is larger.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  type ConsulClient,
  type Semaphore,
} from '../../src/index.js'
import type { WatchEvent } from '../../src/consul/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { sharedAgent } from '../support/consul-agent.js'
import { closing, keep, testPrefix, type Scope } from '../support/tracked.js'
import { SafetyRecorder } from '../support/safety-recorder.js'
import {
  deleteTree,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
} from '../support/observe.js'

/** When a contender's `holding$` rose and fell, and its tokens; transitions also go to `safety`. */
interface Tenures {
  readonly rises: number[]
  readonly falls: number[]
  readonly tokens: bigint[]
}

function recordTenures(
  t: Scope,
  sem: Semaphore,
  who: string,
  safety?: SafetyRecorder,
): { tenures: Tenures; stop: () => void } {
  const tenures: Tenures = { rises: [], falls: [], tokens: [] }
  const sub = keep(
    t,
    sem.holding$.subscribe((holding) => {
      safety?.record(who, holding)
      if (holding) tenures.rises.push(performance.now())
      else if (tenures.rises.length > tenures.falls.length) tenures.falls.push(performance.now())
    }),
  )
  sub.add(
    sem.state$.subscribe((s) => {
      if (s.holding && s.fencingToken !== undefined && tenures.tokens.at(-1) !== s.fencingToken)
        tenures.tokens.push(s.fencingToken)
    }),
  )
  return { tenures, stop: () => sub.unsubscribe() }
}

/** After every contender closed: no contender key, and `.lock` (kept, as Go keeps it) empty. */
async function assertNothingHeld(prefix: string): Promise<void> {
  const { url } = await sharedAgent()
  const left = await listPrefix(url, `${prefix}/`)
  assert.deepEqual(
    left.map((e) => e.Key),
    [`${prefix}/.lock`],
  )
  assert.deepEqual(holdersOf((await readLock(url, prefix))?.body), [])
}

const held = (sem: Semaphore): Promise<unknown> =>
  firstValueFrom(sem.holding$.pipe(filter(Boolean)))

describe('a recursive delete of the prefix', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let clientA: ConsulClient
  let clientB: ConsulClient
  before(async () => {
    consul = await sharedAgent()
    clientA = createConsulClient({ address: consul.addr })
    clientB = createConsulClient({ address: consul.addr })
  })
  after(async () => {
    await clientA.close()
    await clientB.close()
    await consul.close()
  })

  /**
   * A holds on `prefix` after an earlier contender of its client released a key there (so the
   * prefix has a tombstone); B waits behind it on another client (another watch).
   */
  async function holderAndWaiter(
    t: Scope,
    prefix: string,
    watchWait: string,
    safety: SafetyRecorder,
  ) {
    const earlier = closing(t, semaphore({ prefix, limit: 1, consul: clientA, watchWait }))
    const earlierSub = keep(t, earlier.holding$.subscribe())
    await held(earlier)
    await earlier.close()
    earlierSub.unsubscribe()

    const a = closing(t, semaphore({ prefix, limit: 1, consul: clientA, watchWait }))
    const recordA = recordTenures(t, a, 'a', safety)
    await held(a)
    const b = closing(t, semaphore({ prefix, limit: 1, consul: clientB, watchWait }))
    const recordB = recordTenures(t, b, 'b', safety)
    await firstValueFrom(b.state$.pipe(filter((s) => s.rank === 0)))
    return {
      a,
      b,
      tenuresA: recordA.tenures,
      tenuresB: recordB.tenures,
      close: async () => {
        await Promise.all([a.close(), b.close()])
        recordA.stop()
        recordB.stop()
      },
    }
  }

  it('drops the holder at once, and a newcomer overlaps it only until it drops, in 40 of 40 trials', async (t) => {
    const base = testPrefix(t, consul.url, 'prefix-delete')
    // A long-poll wait far above the bound below: a holder that only learns of the delete at the
    // end of its wait fails the test.
    const watchWait = '20s'
    const lags: number[] = []
    let overlapping = 0
    for (let trial = 0; trial < 40; trial++) {
      const prefix = `${base}/t${trial}`
      const safety = new SafetyRecorder(1)
      const run = await holderAndWaiter(t, prefix, watchWait, safety)
      const deletedAt = performance.now()
      await deleteTree(consul.url, prefix)
      // Both contenders are still subscribed: both find their keys gone and contend again, and
      // one of them (either) takes the empty prefix's slot.
      await eventually(
        `trial ${trial}: the slot is held again after the delete`,
        () => (run.tenuresA.rises.length > 1 || run.tenuresB.rises.length > 0 ? true : undefined),
        10_000,
      )
      const fellAt = run.tenuresA.falls[0]
      assert.ok(fellAt !== undefined, `trial ${trial}: the old holder dropped`)
      // Two holders at once only from the delete until the old holder's drop: a newcomer that rose
      // before the delete, or an old holder that rose again, fails here.
      safety.allowOverlap({
        from: performance.timeOrigin + deletedAt,
        to: performance.timeOrigin + fellAt,
        why: 'an operator deleted the prefix; the holder learns it from its own long poll',
      })
      if (safety.assertSafe() > 0) overlapping++
      const oldToken = run.tenuresA.tokens[0]
      const newToken = run.tenuresA.tokens[1] ?? run.tenuresB.tokens[0]
      assert.ok(
        oldToken !== undefined && newToken !== undefined && newToken > oldToken,
        `trial ${trial}: the new tenure's token (${newToken}) is larger than the old (${oldToken})`,
      )
      lags.push(fellAt - deletedAt)
      assert.ok(
        fellAt - deletedAt < 2000,
        `trial ${trial}: the old holder dropped ${(fellAt - deletedAt).toFixed(0)} ms after the delete`,
      )
      await run.close()
      await assertNothingHeld(prefix)
    }
    lags.sort((x, y) => x - y)
    console.log(
      `holder dropped after the delete: median ${lags[20]?.toFixed(1)} ms, max ${lags[39]?.toFixed(1)} ms; ` +
        `a newcomer held before that drop in ${overlapping} of 40 trials`,
    )
  })

  it('drops a lone holder within one long-poll wait when a parent prefix is deleted', async (t) => {
    // Consul 1.8 wakes no listing of the prefix for a delete of its parent: the holder learns it
    // from the late answer whose index went backwards. It then contends again, as a newcomer.
    const parent = testPrefix(t, consul.url, 'parent-delete')
    const prefix = `${parent}/sem`
    const waitMs = 3000
    const earlier = closing(
      t,
      semaphore({ prefix, limit: 1, consul: clientA, watchWait: `${waitMs}ms` }),
    )
    const earlierSub = keep(t, earlier.holding$.subscribe())
    await held(earlier)
    await earlier.close()
    earlierSub.unsubscribe()

    const a = closing(t, semaphore({ prefix, limit: 1, consul: clientA, watchWait: `${waitMs}ms` }))
    const tokens: bigint[] = []
    const tokenSub = keep(
      t,
      a.state$.subscribe((s) => {
        if (s.fencingToken !== undefined && tokens.at(-1) !== s.fencingToken)
          tokens.push(s.fencingToken)
      }),
    )
    const { tenures, stop } = recordTenures(t, a, 'a')
    await held(a)
    const deletedAt = performance.now()
    await deleteTree(consul.url, parent)
    await eventually(
      'the holder drops',
      () => (tenures.falls.length > 0 ? true : undefined),
      15_000,
    )
    const lag = (tenures.falls[0] ?? Infinity) - deletedAt
    // One wait, plus the poll interval and a loaded machine's slack.
    assert.ok(lag < waitMs + 2000, `dropped ${lag.toFixed(0)} ms after the delete`)
    // Still subscribed, it contends again on the empty prefix: a new tenure, a larger token.
    await eventually('it holds again', () => (tenures.rises.length > 1 ? true : undefined), 15_000)
    assert.equal(tokens.length, 2)
    assert.ok((tokens[1] ?? 0n) > (tokens[0] ?? 0n), 'the new tenure has a larger fencing token')
    await a.close()
    stop()
    tokenSub.unsubscribe()
    await assertNothingHeld(prefix)
  })
})

describe('watchPrefix and a recursive delete', () => {
  const agent = agentSuite()

  /** A prefix with two keys and the tombstone of a third, and a sibling tree beside it. */
  async function prefixWithTombstone(t: Scope): Promise<string> {
    const prefix = testPrefix(t, agent.url, 'watch-delete')
    for (const key of ['a', 'b', 'c']) await putRaw(agent.url, `${prefix}/${key}`, key)
    await putRaw(agent.url, `${prefix}-sibling/x`, 'x')
    await fetch(`${agent.url}/v1/kv/${prefix}/a`, { method: 'DELETE' }).then((r) => r.text())
    return prefix
  }

  it('wakes a watch of `<prefix>/` at once for DELETE <prefix>?recurse, and keeps siblings out', async (t) => {
    const prefix = await prefixWithTombstone(t)
    const events: WatchEvent[] = []
    const sub = keep(
      t,
      agent.client.watchPrefix(`${prefix}/`, { waitMs: 20_000 }).subscribe((e) => events.push(e)),
    )
    await eventually('the first snapshot', () => (events.length > 0 ? true : undefined))
    const first = events[0]
    assert.equal(first?.type, 'snapshot')
    if (first?.type === 'snapshot') {
      assert.deepEqual(
        first.snapshot.entries.map((e) => e.key),
        [`${prefix}/b`, `${prefix}/c`],
        'the sibling tree is not part of the snapshot',
      )
    }
    const deletedAt = performance.now()
    await deleteTree(agent.url, prefix)
    await eventually('the delete wakes the watch', () => (events.length > 1 ? true : undefined))
    sub.unsubscribe()
    assert.ok(performance.now() - deletedAt < 5000, 'woken long before the 20 s wait ended')
    const woken = events[1]
    assert.ok(woken?.type === 'snapshot' && woken.snapshot.entries.length === 0)
  })

  it('marks the late answer to a delete of a parent prefix as a reset', async (t) => {
    const prefix = await prefixWithTombstone(t)
    const parent = prefix.slice(0, prefix.lastIndexOf('/'))
    const events: WatchEvent[] = []
    const sub = keep(
      t,
      agent.client.watchPrefix(`${prefix}/`, { waitMs: 1500 }).subscribe((e) => events.push(e)),
    )
    await eventually('the first snapshot', () => (events.length > 0 ? true : undefined))
    const before = events[0]?.type === 'snapshot' ? events[0].snapshot.index : 0n
    await deleteTree(agent.url, parent)
    const reset = await eventually(
      'a reset snapshot',
      () => events.find((e) => e.type === 'snapshot' && e.reset === true),
      10_000,
    )
    sub.unsubscribe()
    assert.ok(reset.type === 'snapshot' && reset.snapshot.entries.length === 0)
    assert.ok(
      reset.type === 'snapshot' && reset.snapshot.index <= before,
      'its index did not move on',
    )
  })
})
