// The picture of one run: a lane per contender with a bar per tenure (labelled with its fencing
// token), the queue time, the operator's cut, and the slots in use against the limit. A standalone
// SVG: no scripts, no external fonts or images, so it opens anywhere, e.g. in a README.
import type { Hold, Timeline } from './timeline.js'

export interface SvgFacts {
  readonly runAt: Date
  readonly consulVersion: string
}

const WIDTH = 1200
const LEFT = 120
const RIGHT = 150
const PLOT = WIDTH - LEFT - RIGHT
const TOP = 104
const LANE = 46
const STRIP = 64
const FONT = 'DejaVu Sans, Verdana, Arial, sans-serif'
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#2f9e99', '#9c755f', '#5b5ea6']
const CUT = '#d62728'
/** A white outline keeps a label readable where it crosses a bar (a quick re-contend). */
const HALO = 'stroke="#ffffff" stroke-width="4" paint-order="stroke"'

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const n = (v: number): string => (Math.round(v * 10) / 10).toString()

export function timelineSvg(timeline: Timeline, facts: SvgFacts): string {
  const ended = timeline.endedAt ?? timeline.now()
  const tick = ended <= 30 ? 2 : 5
  // End the axis on a labelled second.
  const horizon = Math.max(tick, Math.ceil(ended / tick) * tick)
  const x = (t: number): number => LEFT + (Math.min(t, horizon) / horizon) * PLOT
  const laneY = (i: number): number => TOP + i * LANE
  const lanesBottom = laneY(timeline.names.length)
  const stripTop = lanesBottom + 16
  const axisY = stripTop + STRIP + 10
  const legendY = axisY + 74
  const height = legendY + 56
  const when = facts.runAt.toISOString().replace('T', ' ').slice(0, 19)

  const out: string[] = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" ` +
      `viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}" font-size="13" fill="#1d2733">`,
    `<title>rx-consul-semaphore demo, run of ${when} UTC</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="36" font-size="22" font-weight="bold">rx-consul-semaphore: ` +
      `${timeline.names.length} contenders share ${timeline.limit} slots</text>`,
    `<text x="${LEFT}" y="60" fill="#4a5563">Run of ${when} UTC on a local Consul ` +
      `${esc(facts.consulVersion)} dev agent. Every bar is one real holding$ tenure, ` +
      `labelled with its fencing token.</text>`,
  )

  // Lanes, with second grid lines behind the bars.
  timeline.names.forEach((name, i) => {
    if (i % 2 === 0) {
      out.push(
        `<rect x="${LEFT}" y="${laneY(i)}" width="${PLOT}" height="${LANE}" fill="#f4f6f9"/>`,
      )
    }
    out.push(
      `<text x="${LEFT - 14}" y="${laneY(i) + LANE / 2 + 5}" text-anchor="end" font-size="15">` +
        `${esc(name)}</text>`,
    )
  })
  for (let s = 0; s <= horizon; s += tick) {
    out.push(
      `<line x1="${n(x(s))}" y1="${TOP}" x2="${n(x(s))}" y2="${stripTop + STRIP}" stroke="#dde2e8"/>`,
    )
  }

  for (const wait of timeline.waits) {
    const i = timeline.names.indexOf(wait.name)
    const to = wait.to ?? horizon
    out.push(
      `<rect class="wait" x="${n(x(wait.from))}" y="${laneY(i) + LANE / 2 - 3}" ` +
        `width="${n(Math.max(1, x(to) - x(wait.from)))}" height="6" rx="3" fill="#c3cad4"/>`,
    )
  }
  for (const hold of timeline.holds) out.push(...holdBar(hold, timeline, x, laneY))
  for (const cut of timeline.cuts) {
    const i = timeline.names.indexOf(cut.name)
    const cx = x(cut.at)
    const cy = laneY(i) + LANE / 2
    const anchor = cx > LEFT + PLOT * 0.7 ? 'end' : 'start'
    const dx = anchor === 'end' ? -6 : 6
    out.push(
      `<line x1="${n(cx)}" y1="${TOP - 14}" x2="${n(cx)}" y2="${lanesBottom}" stroke="${CUT}" ` +
        `stroke-width="1.5" stroke-dasharray="5 4"/>`,
      `<text x="${n(cx + dx)}" y="${TOP - 18}" text-anchor="${anchor}" fill="${CUT}" ` +
        `font-weight="bold">operator destroys ${esc(cut.name)}'s session at ` +
        `${cut.at.toFixed(1)} s</text>`,
      cross(cx, cy),
    )
  }

  out.push(...inUseStrip(timeline, x, stripTop, horizon))
  out.push(...axis(horizon, tick, x, axisY))
  out.push(...legend(legendY, timeline))
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

function holdBar(
  hold: Hold,
  timeline: Timeline,
  x: (t: number) => number,
  laneY: (i: number) => number,
): string[] {
  const i = timeline.names.indexOf(hold.name)
  const to = hold.to ?? timeline.endedAt ?? timeline.now()
  const x0 = x(hold.from)
  const width = Math.max(2, x(to) - x0)
  const y = laneY(i) + LANE / 2 - 13
  const color = COLORS[i % COLORS.length] ?? COLORS[0]
  const token = hold.fencingToken.toString()
  const label = width >= 74 ? `token ${token}` : token
  const lost = hold.endReason !== undefined && hold.endReason !== 'released'
  const parts = [
    `<rect class="hold" data-name="${esc(hold.name)}" data-token="${token}" ` +
      `data-from="${hold.from.toFixed(3)}" data-to="${to.toFixed(3)}" x="${n(x0)}" y="${y}" ` +
      `width="${n(width)}" height="26" rx="4" fill="${color}"/>`,
  ]
  // A label that does not fit inside a short bar goes above it.
  parts.push(
    width >= 8 * label.length + 8
      ? `<text x="${n(x0 + width / 2)}" y="${y + 18}" text-anchor="middle" fill="#ffffff" ` +
          `font-size="12" font-weight="bold">${label}</text>`
      : `<text x="${n(x0 + width / 2)}" y="${y - 3}" text-anchor="middle" font-size="11" ${HALO}>` +
          `${label}</text>`,
  )
  if (lost) {
    parts.push(
      `<rect x="${n(x0 + width - 3)}" y="${y - 2}" width="4" height="30" fill="${CUT}"/>`,
      // Clear of the operator's cross, which sits at about the same time.
      `<text x="${n(x0 + width + 16)}" y="${y + 18}" fill="${CUT}" font-size="12" ${HALO}>` +
        `lost (${esc(hold.endReason ?? '')})</text>`,
    )
  }
  return parts
}

function cross(cx: number, cy: number): string {
  return (
    `<g stroke="${CUT}" stroke-width="3" stroke-linecap="round"><circle cx="${n(cx)}" ` +
    `cy="${n(cy)}" r="10" fill="#ffffff" stroke-width="2"/>` +
    `<line x1="${n(cx - 5)}" y1="${n(cy - 5)}" x2="${n(cx + 5)}" y2="${n(cy + 5)}"/>` +
    `<line x1="${n(cx - 5)}" y1="${n(cy + 5)}" x2="${n(cx + 5)}" y2="${n(cy - 5)}"/></g>`
  )
}

/** A step chart of how many contenders held, with the limit as a dashed line above it. */
function inUseStrip(
  timeline: Timeline,
  x: (t: number) => number,
  top: number,
  horizon: number,
): string[] {
  const most = Math.max(timeline.limit, timeline.maxConcurrent)
  const y = (count: number): number => top + STRIP - 6 - (count / most) * (STRIP - 16)
  let d = `M${n(x(0))},${n(y(0))}`
  let last = 0
  for (const point of timeline.inUse) {
    d += ` L${n(x(point.at))},${n(y(last))} L${n(x(point.at))},${n(y(point.count))}`
    last = point.count
  }
  d += ` L${n(x(horizon))},${n(y(last))} L${n(x(horizon))},${n(y(0))} Z`
  return [
    `<text x="${LEFT - 14}" y="${top + STRIP / 2 + 5}" text-anchor="end" font-size="15">` +
      `in use</text>`,
    `<path d="${d}" fill="#cfe3cf" stroke="#3d8b3d" stroke-width="1.5"/>`,
    `<line x1="${LEFT}" y1="${n(y(timeline.limit))}" x2="${LEFT + PLOT}" ` +
      `y2="${n(y(timeline.limit))}" stroke="#1d2733" stroke-dasharray="6 4"/>`,
    `<text x="${LEFT + PLOT + 8}" y="${n(y(timeline.limit) + 4)}" font-size="12">` +
      `limit ${timeline.limit}</text>`,
    `<text x="${LEFT + PLOT + 8}" y="${n(y(0) + 4)}" font-size="12" fill="#4a5563">0</text>`,
  ]
}

function axis(horizon: number, tick: number, x: (t: number) => number, y: number): string[] {
  const parts = [`<line x1="${LEFT}" y1="${y}" x2="${LEFT + PLOT}" y2="${y}" stroke="#1d2733"/>`]
  for (let s = 0; s <= horizon; s++) {
    const major = s % tick === 0
    parts.push(
      `<line x1="${n(x(s))}" y1="${y}" x2="${n(x(s))}" y2="${y + (major ? 7 : 4)}" ` +
        `stroke="#1d2733"/>`,
    )
    if (major) {
      parts.push(
        `<text x="${n(x(s))}" y="${y + 22}" text-anchor="middle" font-size="12">${s} s</text>`,
      )
    }
  }
  parts.push(
    `<text x="${LEFT + PLOT / 2}" y="${y + 42}" text-anchor="middle" font-size="12" ` +
      `fill="#4a5563">seconds since the contenders started</text>`,
  )
  return parts
}

function legend(y: number, timeline: Timeline): string[] {
  const summary =
    `max concurrent holders: ${timeline.maxConcurrent} (limit ${timeline.limit}) · ` +
    `${timeline.holds.length} tenures`
  return [
    `<rect x="${LEFT}" y="${y - 13}" width="34" height="18" rx="4" fill="${COLORS[0]}"/>`,
    `<text x="${LEFT + 42}" y="${y}">holding a slot (fencing token)</text>`,
    `<rect x="${LEFT + 270}" y="${y - 7}" width="34" height="6" rx="3" fill="#c3cad4"/>`,
    `<text x="${LEFT + 312}" y="${y}">waiting in the queue</text>`,
    cross(LEFT + 500, y - 4),
    `<text x="${LEFT + 518}" y="${y}">operator destroyed the session</text>`,
    `<rect x="${LEFT + 760}" y="${y - 14}" width="4" height="20" fill="${CUT}"/>`,
    `<text x="${LEFT + 772}" y="${y}">slot lost (reason)</text>`,
    `<text x="${LEFT}" y="${y + 30}" fill="#4a5563">${esc(summary)}</text>`,
  ]
}
