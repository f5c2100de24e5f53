// The nemesis suite's checker must find what it looks for: each rule is shown a history that
// breaks it and one that does not.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  check,
  freeTime,
  type ActorEvent,
  type CheckOptions,
  type Fault,
  type Occupancy,
} from '../support/nemesis-history.js'

const options: CheckOptions = {
  limit: 1,
  gapMs: 100,
  longWaitMs: 1000,
  editWindowMs: 300,
}

const ev = (
  who: string,
  e: ActorEvent['e'],
  at: number,
  extra: Partial<ActorEvent> = {},
): ActorEvent => ({
  who,
  kind: who.startsWith('go') ? 'consul-lock' : 'library',
  e,
  at,
  ...extra,
})

/** A tenure from `from` to `to`, acting every 20 ms, with a token. */
const tenure = (
  who: string,
  wantAt: number,
  from: number,
  to: number,
  token: number,
): ActorEvent[] => {
  const acts: ActorEvent[] = []
  for (let at = from; at <= to; at += 20) acts.push(ev(who, 'act', at, { token: String(token) }))
  return [
    ev(who, 'want', wantAt),
    ev(who, 'hold', from, { token: String(token) }),
    ...acts,
    ev(who, 'end', to + 1),
  ]
}

describe('the nemesis checker', () => {
  it('finds no crowd in a clean hand-over, and one when two act at once at limit 1', () => {
    const clean = [...tenure('a', 0, 10, 200, 5), ...tenure('b', 5, 202, 400, 9)]
    const ok = check(clean, [], [], options, 500)
    assert.equal(ok.maxActing, 1)
    assert.deepEqual(ok.crowds, [])

    const bad = [...tenure('a', 0, 10, 200, 5), ...tenure('b', 5, 150, 400, 9)]
    const report = check(bad, [], [], options, 500)
    assert.equal(report.maxActing, 2)
    assert.equal(report.crowds.length, 1)
    assert.deepEqual([...(report.crowds[0]?.actors ?? [])].sort(), ['a', 'b'])
    assert.equal(report.crowds[0]?.from, 150)
  })

  it("counts a moment over the limit right after an operator's delete apart", () => {
    const bad = [...tenure('a', 0, 10, 200, 5), ...tenure('b', 5, 150, 400, 9)]
    const edit: Fault[] = [{ kind: 'delete-lock', from: 100, to: 100 }]
    const report = check(bad, [], edit, options, 500)
    assert.equal(report.crowds.length, 0)
    assert.equal(report.editWindows.length, 1)
    // Past the window, it is a violation again.
    const late: Fault[] = [{ kind: 'delete-lock', from: -500, to: -500 }]
    assert.equal(check(bad, [], late, options, 500).crowds.length, 1)
  })

  it('does not count a frozen holder while it is silent, but counts one act after a resume', () => {
    // a acts until 100, is frozen (silent) until 900, b holds from 300; a's single act at 905
    // after the resume is a crowd, its silence before is not.
    const a = [ev('a', 'want', 0), ev('a', 'hold', 10, { token: '1' })]
    for (let at = 10; at <= 100; at += 20) a.push(ev('a', 'act', at))
    const b = tenure('b', 20, 300, 1000, 7)
    const silent = check([...a, ev('a', 'lost', 905), ...b], [], [], options, 1100)
    assert.deepEqual(silent.crowds, [])
    const acted = check(
      [...a, ev('a', 'act', 905), ev('a', 'lost', 906), ...b],
      [],
      [],
      options,
      1100,
    )
    assert.equal(acted.crowds.length, 1)
    assert.equal(acted.crowds[0]?.from, 905)
  })

  it('counts an actor of several permits as that many: a writer beside a reader is a crowd at limit 3', () => {
    const three = { ...options, limit: 3 }
    const withPermits = (events: ActorEvent[], permits: number): ActorEvent[] =>
      events.map((e) => (e.e === 'act' || e.e === 'want' ? { ...e, permits } : e))
    // Two readers together: 2 of 3.
    const readers = [...tenure('r1', 0, 10, 200, 5), ...tenure('r2', 0, 10, 200, 6)]
    assert.deepEqual(check(readers, [], [], three, 500).crowds, [])
    // A writer of 3 after them, then beside a reader.
    const writer = withPermits(tenure('w', 0, 202, 400, 9), 3)
    const clean = check([...readers, ...writer], [], [], three, 500)
    assert.deepEqual(clean.crowds, [])
    assert.equal(clean.maxActing, 3)
    const overlap = [...readers, ...withPermits(tenure('w', 0, 150, 400, 9), 3)]
    const report = check(overlap, [], [], three, 500)
    assert.equal(report.maxActing, 5)
    assert.equal(report.crowds[0]?.from, 150)
  })

  it('judges the wait of several permits by the time as many slots were free', () => {
    // Limit 3, one slot taken all along: a writer of 3 waits 3 s with only 2 free.
    const events = [
      ...tenure('a', 0, 0, 3100, 1),
      ...tenure('w', 0, 3200, 3300, 2).map((e) => (e.e === 'want' ? { ...e, permits: 3 } : e)),
    ]
    const oneTaken: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 3150, taken: 0 },
      { at: 3200, taken: 3 },
    ]
    const three = { ...options, limit: 3 }
    assert.equal(check(events, oneTaken, [], three, 4000).longWaits.length, 0)
    // A wait of one permit through the same is long.
    const one = [...tenure('a', 0, 0, 3100, 1), ...tenure('w', 0, 3200, 3300, 2)]
    assert.equal(check(one, oneTaken, [], three, 4000).longWaits.length, 1)
  })

  it('judges a waiter behind a larger request by what that request needs while it waits ahead', () => {
    const four = { ...options, limit: 4 }
    // A Go holder keeps one slot from 0 to 5 s; the writer (4 permits) wants at 0, a reader at 100.
    const taken: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 5000, taken: 4 },
      { at: 5200, taken: 1 },
    ]
    const writer = tenure('w', 0, 5000, 5100, 2).map((e) =>
      e.e === 'want' || e.e === 'act' ? { ...e, permits: 4 } : e,
    )
    const behind = [...writer, ...tenure('r', 100, 5200, 5300, 3)]
    assert.deepEqual(check(behind, taken, [], four, 6000).longWaits, [], 'waits behind the writer')
    // Without the writer ahead, three free slots for 5 s strand the reader.
    const alone = tenure('r', 100, 5200, 5300, 3)
    assert.equal(check(alone, taken, [], four, 6000).longWaits.length, 1)
    // The writer served at 2 s: from then on the reader's free slots count again.
    const servedEarly = [
      ...tenure('w', 0, 2000, 2100, 2).map((e) => (e.e === 'want' ? { ...e, permits: 4 } : e)),
      ...tenure('r', 100, 5200, 5300, 3),
    ]
    assert.equal(check(servedEarly, taken, [], four, 6000).longWaits.length, 1)
  })

  it('keeps a waiter killed in the queue ahead of those behind it until its keys are gone', () => {
    const four = { ...options, limit: 4 }
    // A Go holder keeps one slot; the writer (4 permits, process 7) wants at 0 and is killed at
    // 1 s, a reader wants at 100 ms and is served at 3.1 s.
    const writer = [ev('w', 'want', 0, { permits: 4, pid: 7 }), ev('w', 'killed', 1000)]
    const events = [...writer, ...tenure('r', 100, 3100, 3200, 3)]
    const keysUntil = (goneAt: number): Occupancy[] => [
      { at: 0, taken: 1, keys: ['go@1#0', 'w1@7#4', 'r1@8#1'] },
      { at: goneAt, taken: 1, keys: ['go@1#0', 'r1@8#1'] },
    ]
    // Its session ends at 3 s: the reader waited behind its keys, as behind a live writer.
    assert.deepEqual(check(events, keysUntil(3000), [], four, 4000).longWaits, [])
    // Its keys gone at 1.1 s: two seconds with three slots free strand the reader.
    assert.equal(check(events, keysUntil(1100), [], four, 4000).longWaits.length, 1)
  })

  it('judges a long wait only when Consul had a slot free most of it and no fault hit the waiter', () => {
    const events = [...tenure('a', 0, 0, 100, 1), ...tenure('b', 0, 3000, 3100, 2)]
    // Consul: a held until 100, then nobody: b waited 3 s with the slot free.
    const free: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 100, taken: 0 },
      { at: 3000, taken: 1 },
    ]
    const report = check(events, free, [], options, 4000)
    assert.equal(report.longWaits.length, 1)
    assert.equal(report.longWaits[0]?.who, 'b')
    // The same wait while b was paused is not judged.
    const paused: Fault[] = [{ kind: 'pause', who: 'b', from: 500, to: 2500 }]
    assert.equal(check(events, free, paused, options, 4000).longWaits.length, 0)
    // A slot that a live session held (a killed process's, until its TTL) was not free.
    const held: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 2900, taken: 0 },
      { at: 3000, taken: 1 },
    ]
    assert.equal(check(events, held, [], options, 4000).longWaits.length, 0)
    // Nor was one while Consul could not be read.
    const down: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 100, taken: undefined },
      { at: 3000, taken: 1 },
    ]
    assert.equal(check(events, down, [], options, 4000).longWaits.length, 0)
  })

  it('judges the wait of a waiter a fault hit from the end of its last fault', () => {
    const events = [...tenure('a', 0, 0, 100, 1), ...tenure('b', 0, 5000, 5100, 2)]
    const free: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 100, taken: 0 },
      { at: 5000, taken: 1 },
    ]
    // Cut off until 2500, then 2.5 s more with the slot free: stranded after healing.
    const cut: Fault[] = [{ kind: 'blackhole', who: 'b', from: 500, to: 2500 }]
    const stranded = check(events, free, cut, options, 6000)
    assert.equal(stranded.longWaits.length, 1)
    assert.equal(stranded.longWaits[0]?.healedAt, 2500)
    // Healed at 4500: served 0.5 s later, within the bound.
    const late: Fault[] = [{ kind: 'blackhole', who: 'b', from: 500, to: 4500 }]
    assert.equal(check(events, free, late, options, 6000).longWaits.length, 0)
  })

  it('compares tokens only within one history of Consul state', () => {
    // After a state-losing restart at 150, indexes (and tokens) start low again.
    const across = [...tenure('a', 0, 10, 100, 500), ...tenure('a', 120, 200, 300, 7)]
    assert.ok(check(across, [], [], options, 400).tokenViolations.length > 0)
    const loss: Fault[] = [{ kind: 'state-loss', from: 150, to: 190 }]
    assert.deepEqual(check(across, [], loss, options, 400).tokenViolations, [])
    // Within the new history the rules still hold.
    const after = [...across, ...tenure('b', 250, 310, 400, 6)]
    assert.ok(check(after, [], loss, options, 500).tokenViolations.length > 0)
  })

  it('starts the new history where the old server stopped answering, not where its restart began', () => {
    // The restart began at 150; the old server, shutting down, still granted token 500 at 160,
    // and had stopped at 180; the new one granted 7.
    const during = [...tenure('a', 140, 160, 170, 500), ...tenure('a', 200, 250, 300, 7)]
    const began: Fault[] = [{ kind: 'state-loss', from: 150, to: 240 }]
    assert.ok(check(during, [], began, options, 400).tokenViolations.length > 0)
    const stopped: Fault[] = [{ kind: 'state-loss', from: 150, to: 240, stoppedAt: 180 }]
    assert.deepEqual(check(during, [], stopped, options, 400).tokenViolations, [])
  })

  it("counts apart a moment over the limit after a state loss only when consul lock's actors make it", () => {
    // Consul forgot go0's session at 100; go0's child acts until its client notices, lib b holds.
    const goAfterLoss = [...tenure('go0', 0, 10, 600, 1), ...tenure('b', 5, 300, 800, 9)]
    const loss: Fault[] = [{ kind: 'state-loss', from: 100, to: 250 }]
    const apart = check(goAfterLoss, [], loss, { ...options, lossWindowMs: 1000 }, 900)
    assert.equal(apart.crowds.length, 0)
    assert.equal(apart.lossWindows.length, 1)
    // Two library actors at once at limit 1 are a violation, state loss or not.
    const twoLibraries = [...tenure('a', 0, 10, 600, 1), ...tenure('b', 5, 300, 800, 9)]
    const bad = check(twoLibraries, [], loss, { ...options, lossWindowMs: 1000 }, 900)
    assert.equal(bad.crowds.length, 1)
    // Past the window, consul lock's too.
    assert.equal(check(goAfterLoss, [], loss, options, 900).crowds.length, 1)
  })

  it('adds up the free time of a wait from the occupancy steps', () => {
    const steps: Occupancy[] = [
      { at: 0, taken: 2 },
      { at: 100, taken: 1 },
      { at: 250, taken: undefined },
      { at: 300, taken: 0 },
    ]
    assert.equal(freeTime(steps, 2, 50, 400), 150 + 100)
    assert.equal(freeTime(steps, 1, 50, 400), 100)
    // Never more than the wait, whatever the steps outside it.
    assert.equal(freeTime(steps, 2, 120, 130), 10)
    assert.equal(freeTime(steps, 2, 10, 60), 0)
  })

  it('finds tokens that repeat, go back, or contradict the order of acquisition', () => {
    const fine = [...tenure('a', 0, 10, 100, 5), ...tenure('b', 50, 120, 200, 9)]
    assert.deepEqual(check(fine, [], [], options, 300).tokenViolations, [])
    const repeated = [...tenure('a', 0, 10, 100, 5), ...tenure('b', 50, 120, 200, 5)]
    assert.ok(check(repeated, [], [], options, 300).tokenViolations.length > 0)
    const backwards = [...tenure('a', 0, 10, 100, 9), ...tenure('b', 50, 120, 200, 5)]
    assert.ok(check(backwards, [], [], options, 300).tokenViolations.length > 0)
  })

  it('counts a counter value acknowledged twice as a lost update', () => {
    const incs = [1, 2, 3, 3, 4].map((value, i) => ev('a', 'inc', i, { value }))
    assert.deepEqual(check(incs, [], [], options, 10).counter, {
      acknowledged: 5,
      distinct: 4,
      lost: 1,
      conflicts: 0,
    })
  })

  it("counts a CAS that lost under a holding fence as a conflict, not as an act's end", () => {
    const events = [
      ...tenure('a', 0, 10, 100, 5),
      ev('a', 'conflict', 50),
      ...tenure('b', 0, 120, 200, 9),
    ]
    const report = check(events, [], [], options, 300)
    assert.equal(report.counter.conflicts, 1)
    assert.deepEqual(report.crowds, [])
  })

  it('finds a tenure that read a token of another writer not smaller than its own', () => {
    const older = [...tenure('a', 0, 10, 100, 9), ev('a', 'seen', 50, { token: '5' })]
    assert.deepEqual(check(older, [], [], options, 300).tokenViolations, [])
    for (const token of ['9', '12']) {
      const newer = [...tenure('a', 0, 10, 100, 9), ev('a', 'seen', 50, { token })]
      const found = check(newer, [], [], options, 300).tokenViolations
      assert.equal(found.length, 1, `saw ${token} holding 9`)
      assert.match(found[0] ?? '', /read a write made under token/)
    }
  })

  it('orders the tokens of the jobs of one process as those of one actor, and judges their waits by its faults', () => {
    // Two jobs of process a, the later one under a smaller token: the process's tokens went back.
    const backwards = [...tenure('a/0.1', 0, 10, 100, 9), ...tenure('a/0.2', 0, 120, 200, 5)]
    assert.ok(
      check(backwards, [], [], options, 300).tokenViolations.some((v) =>
        v.startsWith("a's token went from 9 to 5"),
      ),
    )
    const fine = [...tenure('a/0.1', 0, 10, 100, 5), ...tenure('a/0.2', 0, 120, 200, 9)]
    assert.deepEqual(check(fine, [], [], options, 300).tokenViolations, [])
    // A job waits 5 s with the slot free; a pause of its process until 4500 excuses all but 0.5 s.
    const events = [...tenure('b', 0, 0, 100, 1), ...tenure('a/0.1', 0, 5000, 5100, 2)]
    const free: Occupancy[] = [
      { at: 0, taken: 1 },
      { at: 100, taken: 0 },
      { at: 5000, taken: 1 },
    ]
    assert.equal(check(events, free, [], options, 6000).longWaits.length, 1)
    const paused: Fault[] = [{ kind: 'pause', who: 'a', from: 500, to: 4500 }]
    assert.equal(check(events, free, paused, options, 6000).longWaits.length, 0)
    // Acquisitions count processes as actors, and jobs' tenures as tenures.
    assert.deepEqual(check(fine, [], [], options, 1000).acquisitions.library, {
      tenures: 2,
      actors: 1,
      healthySeconds: 1,
    })
  })

  it('counts acquisitions per kind of actor', () => {
    const events = [
      ...tenure('a', 0, 10, 100, 1),
      ...tenure('a', 110, 120, 200, 2),
      ...tenure('go1', 0, 300, 400, 0),
    ]
    const paused: Fault[] = [{ kind: 'pause', who: 'a', from: 100, to: 200 }]
    const { acquisitions } = check(events, [], paused, options, 500)
    // a: from its first line at 0 to the end at 500, less 100 ms paused; go1: from 0 to 500.
    assert.deepEqual(acquisitions.library, { tenures: 2, actors: 1, healthySeconds: 0.4 })
    assert.deepEqual(acquisitions['consul-lock'], { tenures: 1, actors: 1, healthySeconds: 0.5 })
  })
})
