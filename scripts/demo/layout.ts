// Where everything in the picture of one run goes: a lane per contender with a bar per tenure
// (labelled with its fencing token), the queue time, the operator's cut, and the slots in use
// against the limit. A pure function of the run's record, so that tests can check the placement.
//
// No label may overlap another label, a bar or a mark: each label is tried at a few places next to
// what it names (inside its bar, above, below, beside) and goes to the first that is free, judged
// by an estimate of its size (font size times characters, on the wide side). The operator's dashed
// line is broken where it would cross a label. The "in use" strip counts the real intervals; a
// handover of a few milliseconds is drawn as one step, never as a notch or a spike.
import type { Timeline } from './timeline.js'

export interface SvgFacts {
  readonly runAt: Date
  readonly consulVersion: string
}

/** What the layout reads of a finished run. */
export type RunFacts = Pick<Timeline, 'names' | 'limit' | 'holds' | 'waits' | 'cuts'> & {
  readonly endedAt: number
}

/** The facts of a timeline (a finished one, or one cut at this moment). */
export function runFacts(timeline: Timeline): RunFacts {
  const { names, limit, holds, waits, cuts } = timeline
  return { names, limit, holds, waits, cuts, endedAt: timeline.endedAt ?? timeline.now() }
}

/** What an element shows, for the tests: which elements must stay clear of which. */
export type Role =
  | 'background'
  | 'heading'
  | 'lane'
  | 'lane-name'
  | 'grid'
  | 'wait'
  | 'bar'
  | 'bar-label'
  | 'lost-mark'
  | 'lost-label'
  | 'operator-line'
  | 'operator-label'
  | 'cross'
  | 'strip'
  | 'strip-label'
  | 'limit-line'
  | 'axis'
  | 'axis-label'
  | 'legend'
  | 'legend-label'

export type Element =
  | {
      readonly kind: 'rect'
      readonly role: Role
      readonly x: number
      readonly y: number
      readonly width: number
      readonly height: number
      readonly rx?: number
      readonly fill: string
      /** Written as they are (class, data-*). */
      readonly attrs?: Readonly<Record<string, string>>
    }
  | {
      readonly kind: 'text'
      readonly role: Role
      /** Baseline position; `anchor` says which end of the text `x` is. */
      readonly x: number
      readonly y: number
      readonly text: string
      readonly size: number
      readonly anchor: 'start' | 'middle' | 'end'
      readonly bold?: boolean
      readonly fill?: string
    }
  | {
      readonly kind: 'line'
      readonly role: Role
      readonly x1: number
      readonly y1: number
      readonly x2: number
      readonly y2: number
      readonly stroke: string
      readonly strokeWidth?: number
      readonly dash?: string
    }
  | {
      readonly kind: 'path'
      readonly role: Role
      readonly d: string
      readonly fill: string
      readonly stroke: string
      readonly strokeWidth: number
    }
  | {
      readonly kind: 'cross'
      readonly role: Role
      readonly cx: number
      readonly cy: number
      readonly r: number
      readonly color: string
    }

export interface Layout {
  readonly width: number
  readonly height: number
  readonly title: string
  readonly elements: readonly Element[]
}

const WIDTH = 1200
const LEFT = 120
const RIGHT = 150
const PLOT = WIDTH - LEFT - RIGHT
/** The lanes start here; the operator's label sits just above. */
const TOP = 124
/** A lane: a band for labels above the bar, the bar (or the queue line), a band below it. */
const LANE = 60
const BAR = 26
const BAR_TOP = 17
const STRIP = 64
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#2f9e99', '#9c755f', '#5b5ea6']
const CUT = '#d62728'
const INK = '#1d2733'
const GREY = '#4a5563'
const WAIT = '#c3cad4'
/** Changes of the count closer together than this are one handover, drawn as one step. */
const HANDOVER_S = 0.05
/** The narrowest step the strip draws (a real excess over the limit stays visible). */
const MIN_STEP_PX = 3
const MIN_BAR_PX = 3
/** Space kept clear around every label. */
const PAD = 1.5

interface Box {
  readonly x0: number
  readonly y0: number
  readonly x1: number
  readonly y1: number
}

type Text = Extract<Element, { kind: 'text' }>
type Rect = Extract<Element, { kind: 'rect' }>

/**
 * How wide a label is drawn, estimated on the wide side: characters times the font size times
 * about the widest average of DejaVu Sans (digits are 0.64 em, bold ones 0.7 em).
 */
function textWidth(text: string, size: number, bold = false): number {
  return text.length * size * (bold ? 0.7 : 0.62)
}

/** The box a label covers: its estimated width, 0.76 em above the baseline and 0.24 em below. */
function textBox(t: Pick<Text, 'x' | 'y' | 'text' | 'size' | 'anchor' | 'bold'>): Box {
  const width = textWidth(t.text, t.size, t.bold)
  const x0 = t.anchor === 'start' ? t.x : t.anchor === 'middle' ? t.x - width / 2 : t.x - width
  return { x0, x1: x0 + width, y0: t.y - 0.76 * t.size, y1: t.y + 0.24 * t.size }
}

const rectBox = (r: Rect): Box => ({ x0: r.x, y0: r.y, x1: r.x + r.width, y1: r.y + r.height })
const overlaps = (a: Box, b: Box, pad = 0): boolean =>
  a.x0 < b.x1 + pad && b.x0 < a.x1 + pad && a.y0 < b.y1 + pad && b.y0 < a.y1 + pad

/** The marks and labels placed so far, which a new label must stay clear of. */
class Occupied {
  private readonly boxes: Box[] = []
  add(box: Box): void {
    this.boxes.push(box)
  }
  free(box: Box, except?: Box): boolean {
    return !this.boxes.some((b) => b !== except && overlaps(box, b, PAD))
  }
}

/** The first candidate that is free (inside the plot), else the first one. */
function place(occupied: Occupied, candidates: Text[], within: Box, except?: Box): Text {
  const fits = (t: Text): boolean => {
    const box = textBox(t)
    return box.x0 >= within.x0 && box.x1 <= within.x1 && occupied.free(box, except)
  }
  const chosen = candidates.find(fits) ?? candidates[0]
  if (!chosen) throw new Error('place: no candidate')
  occupied.add(textBox(chosen))
  return chosen
}

/**
 * The count of tenures held from each moment on, from the tenures' own intervals (a tenure holds
 * from its start up to, not including, its end). Changes less than HANDOVER_S apart are one step
 * to the count after them: a slot handed from one holder to the next in a few milliseconds is
 * not drawn as a notch. A moment with more holders than the limit is never merged away.
 */
export function inUseSteps(run: RunFacts): { at: number; count: number }[] {
  const changes = new Map<number, number>()
  for (const hold of run.holds) {
    const to = hold.to ?? run.endedAt
    changes.set(hold.from, (changes.get(hold.from) ?? 0) + 1)
    changes.set(to, (changes.get(to) ?? 0) - 1)
  }
  let count = 0
  const raw = [...changes.entries()]
    .sort(([a], [b]) => a - b)
    .filter(([, delta]) => delta !== 0)
    .map(([at, delta]) => ({ at, count: (count += delta) }))

  const steps = [{ at: 0, count: 0 }]
  for (let i = 0; i < raw.length;) {
    let j = i
    while (j + 1 < raw.length && (raw[j + 1]?.at ?? 0) - (raw[j]?.at ?? 0) < HANDOVER_S) j++
    const group = raw.slice(i, j + 1)
    const before = steps.at(-1)?.count ?? 0
    const last = group.at(-1)
    const first = group[0]
    if (group.some((s) => s.count > run.limit)) steps.push(...group)
    else if (first && last && last.count !== before) steps.push({ at: first.at, count: last.count })
    i = j + 1
  }
  return steps
}

/**
 * How long each handover took: from a slot's release to its next holder's acquisition, for a
 * holder that was already queued when the slot was released (one that queued later found the slot
 * free, which is no handover). Releases are matched to acquisitions first in, first out.
 */
function handoverGaps(run: RunFacts): number[] {
  const events = [
    ...run.holds.flatMap((h) =>
      h.to !== undefined && h.to < run.endedAt ? [{ at: h.to, release: true, name: h.name }] : [],
    ),
    ...run.holds.map((h) => ({ at: h.from, release: false, name: h.name })),
  ].sort((a, b) => a.at - b.at || Number(b.release) - Number(a.release))
  const released: number[] = []
  const gaps: number[] = []
  for (const event of events) {
    if (event.release) {
      released.push(event.at)
      continue
    }
    const queued = run.waits.find((w) => w.name === event.name && w.to === event.at)?.from
    const release = released.shift()
    if (release !== undefined && queued !== undefined && queued <= release) {
      gaps.push(event.at - release)
    }
  }
  return gaps
}

export function layoutTimeline(run: RunFacts, facts: SvgFacts): Layout {
  const ended = run.endedAt
  const tick = ended <= 30 ? 2 : 5
  // End the axis on a labelled second.
  const horizon = Math.max(tick, Math.ceil(ended / tick) * tick)
  const x = (t: number): number => LEFT + (Math.min(t, horizon) / horizon) * PLOT
  const laneY = (i: number): number => TOP + i * LANE
  const lanesBottom = laneY(run.names.length)
  const stripTop = lanesBottom + 16
  const axisY = stripTop + STRIP + 10
  const legendY = axisY + 74
  const height = legendY + 74
  const when = facts.runAt.toISOString().replace('T', ' ').slice(0, 19)
  const plot: Box = { x0: LEFT, y0: TOP, x1: LEFT + PLOT, y1: lanesBottom }
  const text = (t: Omit<Text, 'kind'>): Text => ({ kind: 'text', ...t })

  const back: Element[] = [
    { kind: 'rect', role: 'background', x: 0, y: 0, width: WIDTH, height, fill: '#ffffff' },
    text({
      role: 'heading',
      x: LEFT,
      y: 36,
      size: 22,
      bold: true,
      anchor: 'start',
      text: `rx-consul-semaphore: ${run.names.length} contenders share ${run.limit} slots`,
    }),
    text({
      role: 'heading',
      x: LEFT,
      y: 60,
      size: 13,
      anchor: 'start',
      fill: GREY,
      text: `Run of ${when} UTC on a local Consul ${facts.consulVersion} dev agent.`,
    }),
    text({
      role: 'heading',
      x: LEFT,
      y: 78,
      size: 13,
      anchor: 'start',
      fill: GREY,
      text:
        'Every bar is one real holding$ tenure, labelled with its fencing token; ' +
        'the strip below counts the slots in use.',
    }),
  ]

  // Lanes, with second grid lines behind the bars.
  run.names.forEach((name, i) => {
    if (i % 2 === 0) {
      back.push({
        kind: 'rect',
        role: 'lane',
        x: LEFT,
        y: laneY(i),
        width: PLOT,
        height: LANE,
        fill: '#f4f6f9',
      })
    }
    back.push(
      text({
        role: 'lane-name',
        x: LEFT - 14,
        y: laneY(i) + LANE / 2 + 5,
        anchor: 'end',
        size: 15,
        text: name,
      }),
    )
  })
  for (let s = 0; s <= horizon; s += tick) {
    back.push({
      kind: 'line',
      role: 'grid',
      x1: x(s),
      y1: TOP,
      x2: x(s),
      y2: stripTop + STRIP,
      stroke: '#dde2e8',
    })
  }

  // The marks first: queue lines, bars, lost marks, the operator's crosses. Labels go around them.
  const occupied = new Occupied()
  const marks: Element[] = []
  const mark = <E extends Element>(el: E, box: Box): E => {
    marks.push(el)
    occupied.add(box)
    return el
  }
  for (const wait of run.waits) {
    const i = run.names.indexOf(wait.name)
    const to = wait.to ?? ended
    const rect: Rect = {
      kind: 'rect',
      role: 'wait',
      attrs: { class: 'wait' },
      x: x(wait.from),
      y: laneY(i) + BAR_TOP + BAR / 2 - 3,
      width: Math.max(1, x(to) - x(wait.from)),
      height: 6,
      rx: 3,
      fill: WAIT,
    }
    mark(rect, rectBox(rect))
  }
  const bars = run.holds.map((hold) => {
    const i = run.names.indexOf(hold.name)
    const to = hold.to ?? ended
    const token = hold.fencingToken.toString()
    const rect: Rect = {
      kind: 'rect',
      role: 'bar',
      attrs: {
        class: 'hold',
        'data-name': hold.name,
        'data-token': token,
        'data-from': hold.from.toFixed(3),
        'data-to': to.toFixed(3),
      },
      x: x(hold.from),
      y: laneY(i) + BAR_TOP,
      // A tenure of a few milliseconds is still a bar one can see.
      width: Math.max(MIN_BAR_PX, x(to) - x(hold.from)),
      height: BAR,
      rx: 3,
      fill: COLORS[i % COLORS.length] ?? INK,
    }
    const box = rectBox(rect)
    mark(rect, box)
    return { hold, rect, box, token }
  })
  for (const { hold, rect } of bars) {
    if (hold.endReason === undefined || hold.endReason === 'released') continue
    const lost: Rect = {
      kind: 'rect',
      role: 'lost-mark',
      x: rect.x + rect.width - 2,
      y: rect.y - 1,
      width: 4,
      height: BAR + 2,
      fill: CUT,
    }
    mark(lost, rectBox(lost))
  }
  const crosses = run.cuts.map((cut) => {
    const i = run.names.indexOf(cut.name)
    // Above the victim's bar, where the operator's line comes down: it covers no bar.
    const cross = { kind: 'cross', role: 'cross', cx: x(cut.at), cy: laneY(i) + 8, r: 7 } as const
    mark(
      { ...cross, color: CUT },
      { x0: cross.cx - 7, y0: cross.cy - 7, x1: cross.cx + 7, y1: cross.cy + 7 },
    )
    return { cut, cross }
  })

  const labels: Text[] = []
  // "lost (reason)" first, as it names what happened at the bar's end: beside it, else above or
  // below it.
  for (const { hold, rect } of bars) {
    if (hold.endReason === undefined || hold.endReason === 'released') continue
    const end = rect.x + rect.width
    const words = `lost (${hold.endReason})`
    const at = (x0: number, y: number, anchor: Text['anchor']): Text =>
      text({ role: 'lost-label', x: x0, y, anchor, fill: CUT, size: 12, text: words })
    const above = rect.y - 5
    const below = rect.y + BAR + 3 + 0.76 * 12
    labels.push(
      place(
        occupied,
        [
          at(end + 6, rect.y + BAR / 2 + 4, 'start'),
          at(end + 4, above, 'start'),
          at(end + 4, below, 'start'),
          at(end - 4, above, 'end'),
          at(end - 4, below, 'end'),
        ],
        plot,
      ),
    )
  }
  // Token labels: inside the bar when they fit, else next to it, in the lane's bands.
  for (const { rect, box, token } of bars) {
    const mid = rect.x + rect.width / 2
    const end = rect.x + rect.width
    const middle = rect.y + BAR / 2
    const inside = [`token ${token}`, token]
      .filter((words) => textWidth(words, 12, true) + 6 <= rect.width)
      .map((words) =>
        text({
          role: 'bar-label',
          x: mid,
          y: rect.y + 18,
          anchor: 'middle',
          fill: '#ffffff',
          size: 12,
          bold: true,
          text: words,
        }),
      )
    const outside = [`token ${token}`, token].flatMap((words) => {
      const at = (x0: number, y: number, anchor: Text['anchor']): Text =>
        text({ role: 'bar-label', x: x0, y, anchor, size: 11, bold: true, text: words })
      const above = rect.y - 5
      const below = rect.y + BAR + 3 + 0.76 * 11
      return [
        at(mid, above, 'middle'),
        at(rect.x, above, 'start'),
        at(end, above, 'end'),
        at(mid, below, 'middle'),
        at(rect.x, below, 'start'),
        at(end, below, 'end'),
        at(end + 4, middle + 4, 'start'),
        at(rect.x - 4, middle + 4, 'end'),
      ]
    })
    labels.push(place(occupied, [...inside, ...outside], plot, box))
  }
  // The operator's label in the row above the lanes, right of its line (left near the edge).
  const headerRow: Box = { x0: LEFT - 40, y0: TOP - 40, x1: WIDTH - 10, y1: TOP }
  const operatorParts: Element[] = []
  for (const { cut, cross } of crosses) {
    const words = `operator destroys ${cut.name}'s session at ${cut.at.toFixed(1)} s`
    const at = (y: number, anchor: 'start' | 'end'): Text =>
      text({
        role: 'operator-label',
        x: cross.cx + (anchor === 'start' ? 6 : -6),
        y,
        anchor,
        fill: CUT,
        size: 13,
        bold: true,
        text: words,
      })
    const label = place(
      occupied,
      [at(TOP - 18, 'start'), at(TOP - 18, 'end'), at(TOP - 34, 'start'), at(TOP - 34, 'end')],
      headerRow,
    )
    labels.push(label)
    // The dashed line from the label's row down to the cross, broken where a label sits on it.
    const gaps = labels
      .map(textBox)
      .filter((b) => b.x0 - 2 <= cross.cx && cross.cx <= b.x1 + 2)
      .map((b) => ({ from: b.y0 - 2, to: b.y1 + 2 }))
      .sort((a, b) => a.from - b.from)
    let from = label.y + 4
    const bottom = cross.cy - cross.r
    for (const gap of [...gaps, { from: bottom, to: bottom }]) {
      if (gap.to <= from) continue
      const to = Math.min(gap.from, bottom)
      if (to - from > 2) {
        operatorParts.push({
          kind: 'line',
          role: 'operator-line',
          x1: cross.cx,
          y1: from,
          x2: cross.cx,
          y2: to,
          stroke: CUT,
          strokeWidth: 1.5,
          dash: '5 4',
        })
      }
      from = Math.max(from, gap.to)
      if (from >= bottom) break
    }
  }

  return {
    width: WIDTH,
    height,
    title: `rx-consul-semaphore demo, run of ${when} UTC`,
    elements: [
      ...back,
      ...marks,
      ...operatorParts,
      ...labels,
      ...inUseStrip(run, x, stripTop, horizon),
      ...axis(horizon, tick, x, axisY),
      ...legend(legendY, run),
    ],
  }
}

/** A step chart of how many contenders held, with the limit as a dashed line above it. */
function inUseStrip(
  run: RunFacts,
  x: (t: number) => number,
  top: number,
  horizon: number,
): Element[] {
  const steps = inUseSteps(run)
  const most = Math.max(run.limit, ...steps.map((s) => s.count))
  const y = (count: number): number => top + STRIP - 6 - (count / most) * (STRIP - 16)
  const n = (v: number): string => (Math.round(v * 10) / 10).toString()
  let d = `M${n(x(0))},${n(y(0))}`
  let last = 0
  let lastX = x(0)
  for (const [i, step] of steps.entries()) {
    // Every step but the first at least MIN_STEP_PX wide, so none is too narrow to see.
    const at = i === 0 ? x(step.at) : Math.max(x(step.at), lastX + MIN_STEP_PX)
    d += ` L${n(at)},${n(y(last))} L${n(at)},${n(y(step.count))}`
    last = step.count
    lastX = at
  }
  d += ` L${n(Math.max(x(horizon), lastX))},${n(y(last))} L${n(Math.max(x(horizon), lastX))},${n(y(0))} Z`
  return [
    {
      kind: 'text',
      role: 'lane-name',
      x: LEFT - 14,
      y: top + STRIP / 2 + 5,
      anchor: 'end',
      size: 15,
      text: 'in use',
    },
    { kind: 'path', role: 'strip', d, fill: '#cfe3cf', stroke: '#3d8b3d', strokeWidth: 1.5 },
    {
      kind: 'line',
      role: 'limit-line',
      x1: LEFT,
      y1: y(run.limit),
      x2: LEFT + PLOT,
      y2: y(run.limit),
      stroke: INK,
      dash: '6 4',
    },
    {
      kind: 'text',
      role: 'strip-label',
      x: LEFT + PLOT + 8,
      y: y(run.limit) + 4,
      anchor: 'start',
      size: 12,
      text: `limit ${run.limit}`,
    },
    {
      kind: 'text',
      role: 'strip-label',
      x: LEFT + PLOT + 8,
      y: y(0) + 4,
      anchor: 'start',
      size: 12,
      fill: GREY,
      text: '0',
    },
  ]
}

function axis(horizon: number, tick: number, x: (t: number) => number, y: number): Element[] {
  const parts: Element[] = [
    { kind: 'line', role: 'axis', x1: LEFT, y1: y, x2: LEFT + PLOT, y2: y, stroke: INK },
  ]
  for (let s = 0; s <= horizon; s++) {
    const major = s % tick === 0
    parts.push({
      kind: 'line',
      role: 'axis',
      x1: x(s),
      y1: y,
      x2: x(s),
      y2: y + (major ? 7 : 4),
      stroke: INK,
    })
    if (major) {
      parts.push({
        kind: 'text',
        role: 'axis-label',
        x: x(s),
        y: y + 22,
        anchor: 'middle',
        size: 12,
        text: `${s} s`,
      })
    }
  }
  parts.push({
    kind: 'text',
    role: 'axis-label',
    x: LEFT + PLOT / 2,
    y: y + 42,
    anchor: 'middle',
    size: 12,
    fill: GREY,
    text: 'seconds since the contenders started',
  })
  return parts
}

/** "3 handovers took 4-9 ms from a release to the next holder; ..." (to the millisecond). */
function handovers(gapsMs: number[]): string {
  const [low, high] = [Math.min(...gapsMs), Math.max(...gapsMs)].map((g) => g.toFixed(0))
  const count = gapsMs.length === 1 ? 'one handover' : `${gapsMs.length} handovers`
  return (
    `${count} took ${low === high ? low : `${low}-${high}`} ms from a release to the next ` +
    `holder; the strip draws those under ${(HANDOVER_S * 1000).toFixed(0)} ms as one step`
  )
}

/** The key, each entry as wide as its estimated text, and the run's numbers under it. */
function legend(y: number, run: RunFacts): Element[] {
  const steps = inUseSteps(run)
  const most = Math.max(...steps.map((s) => s.count))
  const gaps = handoverGaps(run).map((g) => g * 1000)
  const summary = [
    `max concurrent holders: ${most} (limit ${run.limit}) · ${run.holds.length} tenures`,
    ...(gaps.length === 0 ? [] : [handovers(gaps)]),
  ]
  const parts: Element[] = []
  let at = LEFT
  const entry = (icon: Element, width: number, words: string): void => {
    parts.push(icon, {
      kind: 'text',
      role: 'legend-label',
      x: at + width + 8,
      y,
      anchor: 'start',
      size: 13,
      text: words,
    })
    at += width + 8 + textWidth(words, 13) + 24
  }
  entry(
    {
      kind: 'rect',
      role: 'legend',
      x: at,
      y: y - 13,
      width: 34,
      height: 18,
      rx: 3,
      fill: COLORS[0] ?? INK,
    },
    34,
    'holding a slot (fencing token)',
  )
  entry(
    { kind: 'rect', role: 'legend', x: at, y: y - 7, width: 34, height: 6, rx: 3, fill: WAIT },
    34,
    'waiting in the queue',
  )
  entry(
    { kind: 'cross', role: 'legend', cx: at + 7, cy: y - 4, r: 7, color: CUT },
    14,
    'operator destroyed the session',
  )
  entry(
    { kind: 'rect', role: 'legend', x: at, y: y - 14, width: 4, height: 20, fill: CUT },
    4,
    'slot lost (reason)',
  )
  summary.forEach((words, i) =>
    parts.push({
      kind: 'text',
      role: 'legend-label',
      x: LEFT,
      y: y + 30 + i * 18,
      anchor: 'start',
      size: 13,
      fill: GREY,
      text: words,
    }),
  )
  return parts
}
