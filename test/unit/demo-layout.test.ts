// The demo picture's layout (scripts/demo/layout.ts), on the record of a real run and on the cases
// that crowd it: a 0.1 s tenure, back-to-back handovers, a holder that loses its slot right before
// its next wait, the operator's line at another lane's token label. No label overlaps another
// label, a bar, a mark or a line; every tenure's bar can be seen and has its token beside it; the
// "in use" strip counts the real intervals, with no spike or notch at each handover.
//
// Text is measured as the reader's renderer would roughly draw it: DejaVu Sans (the first font
// the SVG asks for) is about 0.62 em wide per character, 0.7 em in bold, 0.76 em above the
// baseline and 0.24 em below it. The estimate is the test's own, not the layout's.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'
import * as layouts from '../../scripts/demo/layout.js'
import { Timeline, type TimelineCall, type TimelineRecord } from '../../scripts/demo/timeline.js'

type Element = layouts.Element
type Text = Extract<Element, { kind: 'text' }>
type Rect = Extract<Element, { kind: 'rect' }>
type Line = Extract<Element, { kind: 'line' }>
interface Box {
  readonly x0: number
  readonly y0: number
  readonly x1: number
  readonly y1: number
}

const facts = { runAt: new Date('2026-11-27T21:08:52Z'), consulVersion: '1.8.7' }
/** Records of real runs (`npm run demo -- --record <file>`). */
const fixtures = {
  // Carol holds for 0.45 s and is cut by the operator at 8.0 s.
  shortCut: resolve(import.meta.dirname, 'fixtures/demo-run-short-cut.json'),
  // Alice holds for 0.3 s, is cut at 8.0 s and queues again 0.5 s later.
  lostBeforeWait: resolve(import.meta.dirname, 'fixtures/demo-run-lost-before-wait.json'),
}
const readRecord = (path: string): TimelineRecord =>
  JSON.parse(readFileSync(path, 'utf8')) as TimelineRecord

function textBox(t: Text): Box {
  const width = t.text.length * t.size * (t.bold ? 0.7 : 0.62)
  const x0 = t.anchor === 'start' ? t.x : t.anchor === 'middle' ? t.x - width / 2 : t.x - width
  return { x0, x1: x0 + width, y0: t.y - 0.76 * t.size, y1: t.y + 0.24 * t.size }
}

function boxOf(el: Element): Box {
  switch (el.kind) {
    case 'text':
      return textBox(el)
    case 'rect':
      return { x0: el.x, y0: el.y, x1: el.x + el.width, y1: el.y + el.height }
    case 'cross':
      return { x0: el.cx - el.r, y0: el.cy - el.r, x1: el.cx + el.r, y1: el.cy + el.r }
    case 'line':
      return {
        x0: Math.min(el.x1, el.x2),
        y0: Math.min(el.y1, el.y2),
        x1: Math.max(el.x1, el.x2),
        y1: Math.max(el.y1, el.y2),
      }
    case 'path': {
      const xs = pathPoints(el.d).map((p) => p.x)
      const ys = pathPoints(el.d).map((p) => p.y)
      return { x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs), y1: Math.max(...ys) }
    }
  }
}

/** Boxes that share more than a quarter of a pixel each way (touching is fine). */
const overlap = (a: Box, b: Box): boolean =>
  Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.25 &&
  Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.25

const inside = (a: Box, b: Box): boolean =>
  a.x0 >= b.x0 && a.x1 <= b.x1 && a.y0 >= b.y0 && a.y1 <= b.y1

/** Gap between two boxes (0 when they touch or overlap). */
const distance = (a: Box, b: Box): number =>
  Math.hypot(Math.max(0, a.x0 - b.x1, b.x0 - a.x1), Math.max(0, a.y0 - b.y1, b.y0 - a.y1))

/** Whether a line segment passes through the inside of a box (Liang-Barsky clipping). */
function crosses(line: Line, box: Box): boolean {
  const shrink = 0.25
  const [x0, y0, x1, y1] = [box.x0 + shrink, box.y0 + shrink, box.x1 - shrink, box.y1 - shrink]
  const dx = line.x2 - line.x1
  const dy = line.y2 - line.y1
  let lo = 0
  let hi = 1
  for (const [p, q] of [
    [-dx, line.x1 - x0],
    [dx, x1 - line.x1],
    [-dy, line.y1 - y0],
    [dy, y1 - line.y1],
  ] as const) {
    if (p === 0) {
      if (q < 0) return false
    } else {
      const r = q / p
      if (p < 0) lo = Math.max(lo, r)
      else hi = Math.min(hi, r)
      if (lo > hi) return false
    }
  }
  return true
}

function pathPoints(d: string): { x: number; y: number }[] {
  return [...d.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
  }))
}

const describeEl = (el: Element): string =>
  el.kind === 'text'
    ? `${el.role} "${el.text}"`
    : el.kind === 'rect' && el.attrs?.['data-token']
      ? `${el.role} ${el.attrs['data-name']} ${el.attrs['data-token']}`
      : `${el.role} ${el.kind} at ${JSON.stringify(boxOf(el), (_, v: unknown) => (typeof v === 'number' ? Math.round(v) : v))}`

/** What a label must not overlap: every mark drawn on the picture (not its backgrounds). */
const SOLID = new Set(['bar', 'wait', 'lost-mark', 'cross', 'strip', 'legend'])
/** The lines a label must not be crossed by (grid lines run behind everything, faint). */
const LINES = new Set(['operator-line', 'leader', 'limit-line', 'axis'])

/** Every collision in a layout, named; empty when the picture is clear. */
function collisions(layout: layouts.Layout): string[] {
  const texts = layout.elements.filter((e): e is Text => e.kind === 'text')
  const solids = layout.elements.filter((e) => SOLID.has(e.role))
  const lines = layout.elements.filter((e): e is Line => e.kind === 'line' && LINES.has(e.role))
  const found: string[] = []
  texts.forEach((t, i) => {
    const box = textBox(t)
    if (box.x0 < 0 || box.y0 < 0 || box.x1 > layout.width || box.y1 > layout.height) {
      found.push(`${describeEl(t)} leaves the picture`)
    }
    for (const other of texts.slice(i + 1)) {
      if (overlap(box, textBox(other))) found.push(`${describeEl(t)} overlaps ${describeEl(other)}`)
    }
    for (const solid of solids) {
      const onBar = t.role === 'bar-label' && solid.role === 'bar' && inside(box, boxOf(solid))
      if (!onBar && overlap(box, boxOf(solid))) {
        found.push(`${describeEl(t)} overlaps ${describeEl(solid)}`)
      }
    }
    for (const line of lines) {
      if (crosses(line, box)) found.push(`${describeEl(line)} runs through ${describeEl(t)}`)
    }
  })
  return found
}

const bars = (layout: layouts.Layout): Rect[] =>
  layout.elements.filter((e): e is Rect => e.kind === 'rect' && e.role === 'bar')

/** The bars, their marks and labels are readable: nothing covers a bar, each has its token. */
function tenureProblems(layout: layouts.Layout, timeline: Timeline): string[] {
  const found: string[] = []
  const drawn = bars(layout)
  const texts = layout.elements.filter((e): e is Text => e.kind === 'text')
  const covers = layout.elements.filter((e) => e.role === 'cross' || e.role === 'bar')
  assert.equal(drawn.length, timeline.holds.length, 'one bar per tenure')
  timeline.holds.forEach((hold, i) => {
    const bar = drawn[i]
    assert.ok(bar)
    const token = hold.fencingToken.toString()
    const name = `${hold.name}'s tenure ${token} (${hold.from.toFixed(2)}-${hold.to?.toFixed(2)} s)`
    assert.equal(bar.attrs?.['data-token'], token)
    const box = boxOf(bar)
    if (bar.width < 3) found.push(`${name} is ${bar.width.toFixed(1)} px wide`)
    for (const other of covers) {
      if (other !== bar && overlap(box, boxOf(other))) {
        found.push(`${name} is covered by ${describeEl(other)}`)
      }
    }
    const labels = texts.filter((t) => t.role === 'bar-label' && t.text.split(' ').includes(token))
    if (!labels.some((t) => distance(textBox(t), box) <= 6)) {
      found.push(`${name} has no token label beside it`)
    }
    if (hold.endReason !== undefined && hold.endReason !== 'released') {
      const end = { x0: box.x1, x1: box.x1, y0: box.y0, y1: box.y1 }
      const lost = texts.filter((t) => t.text === `lost (${hold.endReason})`)
      if (!lost.some((t) => distance(textBox(t), end) <= 8)) {
        found.push(`${name} has no "lost (${hold.endReason})" beside its end`)
      }
    }
  })
  return found
}

/**
 * The "in use" outline's flat runs, left to right: a run of under 3 px between two others is a
 * spike or a notch too short to read (a handover's few milliseconds).
 */
function stripRuns(layout: layouts.Layout): { x0: number; x1: number; y: number }[] {
  const strip = layout.elements.find((e) => e.role === 'strip')
  assert.ok(strip?.kind === 'path', 'an "in use" strip')
  const points = pathPoints(strip.d)
  // The outline ends by going down to the baseline at the right edge and back along it.
  const top = points.slice(0, -1)
  const runs: { x0: number; x1: number; y: number }[] = []
  for (let i = 1; i < top.length; i++) {
    const [a, b] = [top[i - 1], top[i]]
    if (!a || !b || a.y !== b.y) continue
    const last = runs.at(-1)
    if (last && last.y === a.y && last.x1 === a.x) last.x1 = b.x
    else runs.push({ x0: a.x, x1: b.x, y: a.y })
  }
  return runs.filter((r) => r.x1 > r.x0 || runs.length === 1)
}

function shortRuns(layout: layouts.Layout): string[] {
  const runs = stripRuns(layout)
  return runs
    .slice(1, -1)
    .filter((r) => r.x1 - r.x0 < 3)
    .map((r) => `a ${(r.x1 - r.x0).toFixed(1)} px step at x=${r.x0.toFixed(0)}`)
}

/** How many tenures were open at `t` (a tenure is [from, to)). */
const heldAt = (timeline: Timeline, t: number): number =>
  timeline.holds.filter((h) => h.from <= t && t < (h.to ?? Infinity)).length

/** The layout's account of what the strip draws: the count from each moment on. */
type InUseSteps = (run: layouts.RunFacts) => { readonly at: number; readonly count: number }[]
const stepsOf = (): InUseSteps | undefined =>
  (layouts as unknown as { inUseSteps?: InUseSteps }).inUseSteps

function layoutOf(timeline: Timeline): layouts.Layout {
  return layouts.layoutTimeline(layouts.runFacts(timeline), facts)
}

function assertReadable(timeline: Timeline): layouts.Layout {
  const layout = layoutOf(timeline)
  const problems = [
    ...collisions(layout),
    ...tenureProblems(layout, timeline),
    ...shortRuns(layout),
  ]
  assert.deepEqual(problems, [], problems.join('\n'))
  return layout
}

// Synthetic runs: calls in time order, each made at its `at`.
const session = (name: string, at: number): string => `${name}-${at}`
const contends = (at: number, name: string): TimelineCall => ({
  at,
  call: 'contends',
  name,
  session: session(name, at),
})
const acquired = (at: number, name: string, token: number): TimelineCall => ({
  at,
  call: 'acquired',
  name,
  fencingToken: String(token),
  session: `${name}-${token}`,
})
const released = (at: number, name: string): TimelineCall => ({
  at,
  call: 'lost',
  name,
  reason: 'released',
})
const removed = (at: number, name: string): TimelineCall => ({
  at,
  call: 'lost',
  name,
  reason: 'removed',
})
const roundEnded = (at: number, name: string): TimelineCall => ({ at, call: 'round-ended', name })
const operator = (at: number, name: string): TimelineCall => ({
  at,
  call: 'operator',
  name,
  session: `${name}-victim`,
})
/** A contender's round: contends, holds [from, to), gives back (or loses it to the operator). */
function round(
  name: string,
  token: number,
  waitFrom: number,
  from: number,
  to: number,
  cut?: number,
): TimelineCall[] {
  return [
    contends(waitFrom, name),
    acquired(from, name, token),
    ...(cut === undefined ? [released(to, name)] : [operator(cut, name), removed(to, name)]),
    roundEnded(to + 0.002, name),
  ]
}
function story(names: string[], limit: number, end: number, ...calls: TimelineCall[][]): Timeline {
  const record: TimelineRecord = {
    names,
    limit,
    calls: [...calls.flat(), { at: end, call: 'finish' } as const].sort((a, b) => a.at - b.at),
  }
  return Timeline.replay(record)
}

describe('the demo picture: labels never overlap', () => {
  for (const [name, path] of Object.entries(fixtures)) {
    it(`on the record of a real run (${name})`, () => {
      const timeline = Timeline.replay(readRecord(path))
      assert.equal(timeline.holds.length, 16)
      assert.equal(timeline.cuts.length, 1)
      assertReadable(timeline)
    })
  }

  it('a 0.1 s tenure: a bar that can be seen, its token beside it', () => {
    const timeline = story(
      ['alice', 'bob', 'carol'],
      2,
      16,
      round('alice', 10, 0, 0.01, 3),
      round('bob', 11, 0, 0.02, 1.5),
      round('carol', 12, 0.1, 1.505, 1.605),
      round('bob', 15, 1.9, 1.9, 2.0),
      round('carol', 17, 2.2, 3.004, 7),
    )
    assertReadable(timeline)
  })

  it('a 0.1 s tenure cut by the operator: bar, cross, token and "lost" all readable', () => {
    const timeline = story(
      ['alice', 'bob', 'carol'],
      2,
      16,
      round('alice', 10, 0, 0.01, 8.1),
      round('bob', 11, 0, 0.02, 8.0),
      round('carol', 14, 0.5, 8.005, 8.105, 8.1),
      round('bob', 16, 8.3, 8.11, 11),
    )
    assertReadable(timeline)
  })

  it('back-to-back handovers, a few milliseconds each, all through the run', () => {
    const names = ['alice', 'bob', 'carol', 'dave']
    const calls: TimelineCall[][] = []
    let token = 20
    // Two slots, each passed on every second with a 3-6 ms gap; everyone queues from the start.
    for (let s = 0; s < 12; s++) {
      for (const slot of [0, 1]) {
        const name = names[(s * 2 + slot) % names.length] ?? 'alice'
        const from = s + slot * 0.4 + (s === 0 ? 0.01 : 0.003 + slot * 0.003)
        const to = s + 1 + slot * 0.4
        calls.push(round(name, token++, Math.max(0, from - 0.5), from, to))
      }
    }
    const timeline = story(names, 2, 13, ...calls)
    assertReadable(timeline)
  })

  it('a holder loses its slot right before its next wait: "lost (removed)" gets room', () => {
    const timeline = story(
      ['alice', 'bob', 'carol'],
      2,
      16,
      round('alice', 10, 0, 0.01, 3),
      round('bob', 11, 0, 0.02, 5.0, 4.99),
      round('carol', 12, 0.1, 3.004, 9),
      // Bob queues again 50 ms after his loss, and waits until alice's next tenure ends.
      round('bob', 15, 5.05, 9.004, 12),
      round('alice', 13, 3.5, 5.004, 11),
    )
    assertReadable(timeline)
  })

  it('a short tenure lost right before its next wait: its token and "lost" both find room', () => {
    // As in a real run: dave holds for 0.2 s, is cut, and queues again 30 ms after his loss.
    const timeline = story(
      ['alice', 'bob', 'carol', 'dave'],
      2,
      16,
      round('alice', 10, 0, 0.01, 7.8),
      round('bob', 11, 0, 0.02, 3),
      round('carol', 12, 0.1, 3.004, 8.21),
      round('dave', 14, 0.2, 7.804, 8.004, 8.0),
      round('dave', 17, 8.034, 10.5, 13),
      round('bob', 15, 3.5, 8.01, 10.5),
      round('alice', 16, 8.3, 8.214, 11),
    )
    assertReadable(timeline)
  })

  it("the operator's line at another lane's token label", () => {
    const timeline = story(
      ['alice', 'bob', 'carol', 'dave'],
      2,
      16,
      // Bob's bar is 6-9 s, its label centred on 7.5 s, where the operator cuts carol (below).
      round('alice', 10, 0, 0.01, 6),
      round('bob', 11, 0, 6.004, 9),
      round('carol', 12, 0, 0.02, 7.52, 7.5),
      round('dave', 13, 0, 7.525, 12),
      round('alice', 14, 7, 9.004, 15),
    )
    assertReadable(timeline)
  })

  it('an operator cut near the right edge, on the last lane', () => {
    const timeline = story(
      ['alice', 'bob', 'carol'],
      2,
      16,
      round('alice', 10, 0, 0.01, 15.9),
      round('bob', 11, 0, 0.02, 13),
      round('carol', 12, 0.1, 13.004, 15.52, 15.5),
    )
    assertReadable(timeline)
  })
})

describe('the demo picture: the "in use" strip', () => {
  for (const [name, path] of Object.entries(fixtures)) {
    it(`counts the real intervals; the real run never held more than the limit (${name})`, () => {
      const record = readRecord(path)
      const timeline = Timeline.replay(record)
      const inUse = stepsOf()
      assert.ok(inUse, 'the layout says what the strip draws (inUseSteps)')
      const steps = inUse(layouts.runFacts(timeline))
      // The run's own record: at no moment were more tenures open than the limit.
      const edges = timeline.holds.flatMap((h) => [h.from, h.to ?? Infinity])
      assert.ok(edges.every((t) => heldAt(timeline, t) <= record.limit))
      // What is drawn is the real count, except across a handover's few milliseconds.
      for (const [i, step] of steps.entries()) {
        const next = steps[i + 1]?.at ?? timeline.endedAt ?? step.at
        if (next - step.at > 0.06) {
          assert.equal(step.count, heldAt(timeline, (step.at + next) / 2), `at ${step.at} s`)
        }
      }
      assert.equal(Math.max(...steps.map((s) => s.count)), 2)
    })
  }

  it('draws a handover as one step, and a real excess over the limit as a step above it', () => {
    const inUse = stepsOf()
    assert.ok(inUse, 'the layout says what the strip draws (inUseSteps)')
    const handover = story(
      ['alice', 'bob', 'carol'],
      2,
      8,
      round('alice', 10, 0, 1, 3),
      round('bob', 11, 0, 1, 5),
      round('carol', 12, 0, 3.005, 6),
    )
    assert.deepEqual(
      inUse(layouts.runFacts(handover)).map((s) => [s.at, s.count]),
      [
        [0, 0],
        [1, 2],
        [5, 1],
        [6, 0],
      ],
    )
    // The picture says what it merged: carol was queued when alice gave her slot back.
    const said = layoutOf(handover).elements.flatMap((e) => (e.kind === 'text' ? [e.text] : []))
    assert.ok(
      said.some((t) => t.startsWith('one handover took 5 ms from a release to the next holder')),
      said.join('\n'),
    )
    // Should tenures ever overlap beyond the limit, even for 2 ms, the strip must show it.
    const excess = story(
      ['alice', 'bob', 'carol'],
      2,
      8,
      round('alice', 10, 0, 1, 3.002),
      round('bob', 11, 0, 1, 5),
      round('carol', 12, 0, 3, 6),
    )
    const steps = inUse(layouts.runFacts(excess))
    assert.deepEqual(
      steps.map((s) => s.count),
      [0, 2, 3, 2, 1, 0],
    )
    const layout = layoutOf(excess)
    assert.deepEqual(shortRuns(layout), [], 'the excess is drawn wide enough to see')
    const runs = stripRuns(layout)
    const limitLine = layout.elements.find((e) => e.role === 'limit-line')
    assert.ok(limitLine?.kind === 'line')
    assert.ok(
      runs.some((r) => r.y < limitLine.y1 - 5),
      'a step above the limit line',
    )
  })
})
