// Where everything in the picture of one run goes: a lane per contender with a bar per tenure
// (labelled with its fencing token), the queue time, the operator's cut, and the slots in use
// against the limit. A pure function of the run's record, so that tests can check the placement.
import type { Hold, Timeline } from './timeline.js'

export interface SvgFacts {
  readonly runAt: Date
  readonly consulVersion: string
}

/** What the layout reads of a finished run. */
export type RunFacts = Pick<
  Timeline,
  'names' | 'limit' | 'holds' | 'waits' | 'cuts' | 'inUse' | 'maxConcurrent'
> & { readonly endedAt: number }

/** The facts of a timeline (a finished one, or one cut at this moment). */
export function runFacts(timeline: Timeline): RunFacts {
  const { names, limit, holds, waits, cuts, inUse, maxConcurrent } = timeline
  return {
    names,
    limit,
    holds,
    waits,
    cuts,
    inUse,
    maxConcurrent,
    endedAt: timeline.endedAt ?? timeline.now(),
  }
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
      /** A white outline under the glyphs. */
      readonly halo?: boolean
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
const TOP = 104
const LANE = 46
const STRIP = 64
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#2f9e99', '#9c755f', '#5b5ea6']
const CUT = '#d62728'
const INK = '#1d2733'
const GREY = '#4a5563'

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
  const height = legendY + 56
  const when = facts.runAt.toISOString().replace('T', ' ').slice(0, 19)

  const out: Element[] = [
    { kind: 'rect', role: 'background', x: 0, y: 0, width: WIDTH, height, fill: '#ffffff' },
    {
      kind: 'text',
      role: 'heading',
      x: LEFT,
      y: 36,
      size: 22,
      bold: true,
      anchor: 'start',
      text: `rx-consul-semaphore: ${run.names.length} contenders share ${run.limit} slots`,
    },
    {
      kind: 'text',
      role: 'heading',
      x: LEFT,
      y: 60,
      size: 13,
      anchor: 'start',
      fill: GREY,
      text:
        `Run of ${when} UTC on a local Consul ${facts.consulVersion} dev agent. Every bar is ` +
        'one real holding$ tenure, labelled with its fencing token.',
    },
  ]

  // Lanes, with second grid lines behind the bars.
  run.names.forEach((name, i) => {
    if (i % 2 === 0) {
      out.push({
        kind: 'rect',
        role: 'lane',
        x: LEFT,
        y: laneY(i),
        width: PLOT,
        height: LANE,
        fill: '#f4f6f9',
      })
    }
    out.push({
      kind: 'text',
      role: 'lane-name',
      x: LEFT - 14,
      y: laneY(i) + LANE / 2 + 5,
      anchor: 'end',
      size: 15,
      text: name,
    })
  })
  for (let s = 0; s <= horizon; s += tick) {
    out.push({
      kind: 'line',
      role: 'grid',
      x1: x(s),
      y1: TOP,
      x2: x(s),
      y2: stripTop + STRIP,
      stroke: '#dde2e8',
    })
  }

  for (const wait of run.waits) {
    const i = run.names.indexOf(wait.name)
    const to = wait.to ?? horizon
    out.push({
      kind: 'rect',
      role: 'wait',
      attrs: { class: 'wait' },
      x: x(wait.from),
      y: laneY(i) + LANE / 2 - 3,
      width: Math.max(1, x(to) - x(wait.from)),
      height: 6,
      rx: 3,
      fill: '#c3cad4',
    })
  }
  for (const hold of run.holds) out.push(...holdBar(hold, run, x, laneY))
  for (const cut of run.cuts) {
    const i = run.names.indexOf(cut.name)
    const cx = x(cut.at)
    const cy = laneY(i) + LANE / 2
    const anchor = cx > LEFT + PLOT * 0.7 ? 'end' : 'start'
    const dx = anchor === 'end' ? -6 : 6
    out.push(
      {
        kind: 'line',
        role: 'operator-line',
        x1: cx,
        y1: TOP - 14,
        x2: cx,
        y2: lanesBottom,
        stroke: CUT,
        strokeWidth: 1.5,
        dash: '5 4',
      },
      {
        kind: 'text',
        role: 'operator-label',
        x: cx + dx,
        y: TOP - 18,
        anchor,
        fill: CUT,
        size: 13,
        bold: true,
        text: `operator destroys ${cut.name}'s session at ${cut.at.toFixed(1)} s`,
      },
      { kind: 'cross', role: 'cross', cx, cy, r: 10, color: CUT },
    )
  }

  out.push(...inUseStrip(run, x, stripTop, horizon))
  out.push(...axis(horizon, tick, x, axisY))
  out.push(...legend(legendY, run))
  return {
    width: WIDTH,
    height,
    title: `rx-consul-semaphore demo, run of ${when} UTC`,
    elements: out,
  }
}

function holdBar(
  hold: Hold,
  run: RunFacts,
  x: (t: number) => number,
  laneY: (i: number) => number,
): Element[] {
  const i = run.names.indexOf(hold.name)
  const to = hold.to ?? run.endedAt
  const x0 = x(hold.from)
  const width = Math.max(2, x(to) - x0)
  const y = laneY(i) + LANE / 2 - 13
  const color = COLORS[i % COLORS.length] ?? INK
  const token = hold.fencingToken.toString()
  const label = width >= 74 ? `token ${token}` : token
  const lost = hold.endReason !== undefined && hold.endReason !== 'released'
  const parts: Element[] = [
    {
      kind: 'rect',
      role: 'bar',
      attrs: {
        class: 'hold',
        'data-name': hold.name,
        'data-token': token,
        'data-from': hold.from.toFixed(3),
        'data-to': to.toFixed(3),
      },
      x: x0,
      y,
      width,
      height: 26,
      rx: 4,
      fill: color,
    },
  ]
  // A label that does not fit inside a short bar goes above it.
  parts.push(
    width >= 8 * label.length + 8
      ? {
          kind: 'text',
          role: 'bar-label',
          x: x0 + width / 2,
          y: y + 18,
          anchor: 'middle',
          fill: '#ffffff',
          size: 12,
          bold: true,
          text: label,
        }
      : {
          kind: 'text',
          role: 'bar-label',
          x: x0 + width / 2,
          y: y - 3,
          anchor: 'middle',
          size: 11,
          halo: true,
          text: label,
        },
  )
  if (lost) {
    parts.push(
      {
        kind: 'rect',
        role: 'lost-mark',
        x: x0 + width - 3,
        y: y - 2,
        width: 4,
        height: 30,
        fill: CUT,
      },
      // Clear of the operator's cross, which sits at about the same time.
      {
        kind: 'text',
        role: 'lost-label',
        x: x0 + width + 16,
        y: y + 18,
        anchor: 'start',
        fill: CUT,
        size: 12,
        halo: true,
        text: `lost (${hold.endReason ?? ''})`,
      },
    )
  }
  return parts
}

/** A step chart of how many contenders held, with the limit as a dashed line above it. */
function inUseStrip(
  run: RunFacts,
  x: (t: number) => number,
  top: number,
  horizon: number,
): Element[] {
  const most = Math.max(run.limit, run.maxConcurrent)
  const y = (count: number): number => top + STRIP - 6 - (count / most) * (STRIP - 16)
  const n = (v: number): string => (Math.round(v * 10) / 10).toString()
  let d = `M${n(x(0))},${n(y(0))}`
  let last = 0
  for (const point of run.inUse) {
    d += ` L${n(x(point.at))},${n(y(last))} L${n(x(point.at))},${n(y(point.count))}`
    last = point.count
  }
  d += ` L${n(x(horizon))},${n(y(last))} L${n(x(horizon))},${n(y(0))} Z`
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

function legend(y: number, run: RunFacts): Element[] {
  const summary =
    `max concurrent holders: ${run.maxConcurrent} (limit ${run.limit}) · ` +
    `${run.holds.length} tenures`
  const text = (at: number, words: string, fill?: string, dy = 0): Element => ({
    kind: 'text',
    role: 'legend-label',
    x: at,
    y: y + dy,
    anchor: 'start',
    size: 13,
    text: words,
    ...(fill ? { fill } : {}),
  })
  return [
    {
      kind: 'rect',
      role: 'legend',
      x: LEFT,
      y: y - 13,
      width: 34,
      height: 18,
      rx: 4,
      fill: COLORS[0] ?? INK,
    },
    text(LEFT + 42, 'holding a slot (fencing token)'),
    {
      kind: 'rect',
      role: 'legend',
      x: LEFT + 270,
      y: y - 7,
      width: 34,
      height: 6,
      rx: 3,
      fill: '#c3cad4',
    },
    text(LEFT + 312, 'waiting in the queue'),
    { kind: 'cross', role: 'legend', cx: LEFT + 500, cy: y - 4, r: 10, color: CUT },
    text(LEFT + 518, 'operator destroyed the session'),
    { kind: 'rect', role: 'legend', x: LEFT + 760, y: y - 14, width: 4, height: 20, fill: CUT },
    text(LEFT + 772, 'slot lost (reason)'),
    text(LEFT, summary, GREY, 30),
  ]
}
