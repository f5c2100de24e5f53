// docs/bench-handover.svg: handover and wait-time distributions per implementation, as box plots
// (p25–p75 box, p50 bar, p5–p95 whiskers) over a strip of every sample, on log-scaled time axes.
// Standalone SVG: inline styles only, no fonts or scripts from elsewhere.
import { percentile } from './stats.js'

export interface Series {
  readonly label: string
  readonly color: string
  readonly samples: readonly number[]
  /** Shown instead of a plot when there are no samples. */
  readonly note?: string
}

export interface Panel {
  readonly title: string
  readonly series: readonly Series[]
  /** A dashed reference line, e.g. the floor handover. */
  readonly reference?: { readonly ms: number; readonly label: string }
}

const WIDTH = 1200
const LEFT = 170
const RIGHT = 190
const ROW = 46
const PANEL_GAP = 70
const TOP = 110

const escape = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

function ticks(min: number, max: number): number[] {
  const out: number[] = []
  for (let decade = Math.floor(Math.log10(min)); decade <= Math.ceil(Math.log10(max)); decade++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** decade
      if (v >= min && v <= max) out.push(v)
    }
  }
  return out
}

const formatMs = (ms: number): string =>
  ms >= 1000
    ? `${+(ms / 1000).toFixed(1)} s`
    : ms >= 1
      ? `${+ms.toFixed(1)} ms`
      : `${+ms.toFixed(2)} ms`

export function renderChart(title: string, subtitle: string, panels: readonly Panel[]): string {
  const parts: string[] = []
  let y = TOP
  const plotWidth = WIDTH - LEFT - RIGHT
  for (const panel of panels) {
    const values = panel.series.flatMap((s) => s.samples).filter((v) => v > 0)
    if (panel.reference) values.push(panel.reference.ms)
    const lo = values.length ? 10 ** Math.floor(Math.log10(Math.min(...values))) : 1
    const hi = values.length ? 10 ** Math.ceil(Math.log10(Math.max(...values))) : 1000
    const x = (ms: number): number =>
      LEFT +
      ((Math.log10(Math.max(ms, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) *
        plotWidth
    const height = panel.series.length * ROW
    parts.push(
      `<text x="${LEFT}" y="${y - 14}" font-size="16" font-weight="bold">${escape(panel.title)}</text>`,
    )
    parts.push(
      `<rect x="${LEFT}" y="${y}" width="${plotWidth}" height="${height}" fill="#fafafa" stroke="#ccc"/>`,
    )
    for (const t of ticks(lo, hi)) {
      const tx = x(t).toFixed(1)
      parts.push(`<line x1="${tx}" y1="${y}" x2="${tx}" y2="${y + height}" stroke="#e4e4e4"/>`)
      parts.push(
        `<text x="${tx}" y="${y + height + 16}" font-size="12" text-anchor="middle" fill="#555">${formatMs(t)}</text>`,
      )
    }
    if (panel.reference) {
      const rx = x(panel.reference.ms).toFixed(1)
      parts.push(
        `<line x1="${rx}" y1="${y - 4}" x2="${rx}" y2="${y + height}" stroke="#333" stroke-dasharray="5,4"/>`,
      )
      parts.push(
        `<text x="${rx}" y="${y - 4}" dx="4" font-size="11" fill="#333">${escape(panel.reference.label)}</text>`,
      )
    }
    panel.series.forEach((series, row) => {
      const cy = y + row * ROW + ROW / 2
      parts.push(
        `<text x="${LEFT - 10}" y="${cy + 4}" font-size="13" text-anchor="end">${escape(series.label)}</text>`,
      )
      const samples = series.samples.filter((v) => v > 0)
      if (samples.length === 0) {
        parts.push(
          `<text x="${LEFT + 10}" y="${cy + 4}" font-size="12" fill="#888">${escape(series.note ?? 'not measured')}</text>`,
        )
        return
      }
      // Deterministic jitter (golden-ratio sequence) so that repeated values stay visible.
      samples.forEach((v, i) => {
        const jitter = (((i * 0.618034) % 1) - 0.5) * (ROW - 18)
        parts.push(
          `<circle cx="${x(v).toFixed(1)}" cy="${(cy + jitter).toFixed(1)}" r="2.2" fill="${series.color}" fill-opacity="0.35"/>`,
        )
      })
      const [p5, p25, p50, p75, p95] = [5, 25, 50, 75, 95].map((p) => x(percentile(samples, p)))
      if (
        p5 === undefined ||
        p25 === undefined ||
        p50 === undefined ||
        p75 === undefined ||
        p95 === undefined
      )
        return
      const half = 11
      parts.push(
        `<line x1="${p5.toFixed(1)}" y1="${cy}" x2="${p25.toFixed(1)}" y2="${cy}" stroke="${series.color}" stroke-width="1.5"/>`,
      )
      parts.push(
        `<line x1="${p75.toFixed(1)}" y1="${cy}" x2="${p95.toFixed(1)}" y2="${cy}" stroke="${series.color}" stroke-width="1.5"/>`,
      )
      for (const w of [p5, p95]) {
        parts.push(
          `<line x1="${w.toFixed(1)}" y1="${cy - 6}" x2="${w.toFixed(1)}" y2="${cy + 6}" stroke="${series.color}" stroke-width="1.5"/>`,
        )
      }
      parts.push(
        `<rect x="${p25.toFixed(1)}" y="${cy - half}" width="${Math.max(1, p75 - p25).toFixed(1)}" height="${2 * half}" fill="${series.color}" fill-opacity="0.15" stroke="${series.color}" stroke-width="1.5"/>`,
      )
      parts.push(
        `<line x1="${p50.toFixed(1)}" y1="${cy - half - 3}" x2="${p50.toFixed(1)}" y2="${cy + half + 3}" stroke="${series.color}" stroke-width="3"/>`,
      )
      // The figures go in a column right of the plot, where no whisker can run into them.
      const labelX = WIDTH - RIGHT + 12
      parts.push(
        `<text x="${labelX}" y="${cy - 3}" font-size="12" fill="#222">p50 ${formatMs(percentile(samples, 50))}</text>`,
      )
      parts.push(
        `<text x="${labelX}" y="${cy + 12}" font-size="11" fill="#666">p95 ${formatMs(percentile(samples, 95))} · n=${samples.length}</text>`,
      )
    })
    y += height + PANEL_GAP
  }
  const legendY = y - PANEL_GAP + 44
  const total = legendY + 20
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${total}" viewBox="0 0 ${WIDTH} ${total}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif">`,
    `<rect width="${WIDTH}" height="${total}" fill="#fff"/>`,
    `<text x="${LEFT}" y="28" font-size="20" font-weight="bold">${escape(title)}</text>`,
    `<text x="${LEFT}" y="48" font-size="12" fill="#555">${escape(subtitle)}</text>`,
    ...parts,
    `<text x="${LEFT}" y="${legendY}" font-size="12" fill="#555">Box: p25–p75; thick bar: p50; whiskers: p5–p95; dots: every sample (log time axis).</text>`,
    '</svg>',
    '',
  ].join('\n')
}
