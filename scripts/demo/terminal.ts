// What a person sees while the demo runs. On a terminal: the event log scrolls as usual and a
// live timeline (one row per contender) stays pinned under it, redrawn 10 times a second. In a
// pipe or a file: only the event log, no escape codes.
import type { Timeline } from './timeline.js'

export interface DemoView {
  /** Prints one line of the log (above the live timeline on a terminal). */
  log(line: string): void
  /** Starts drawing the live timeline under the log (terminal only). */
  follow(timeline: Timeline, title: string): void
  /** Draws the last frame and leaves it on screen; later lines print below it. */
  stop(): void
}

const NAME_WIDTH = 8
/** The timeline starts this wide and grows if the run takes longer. */
const MIN_HORIZON_S = 22
const ansi = {
  bold: (s: string) => `\x1b[1m${s}\x1b[22m`,
  dim: (s: string) => `\x1b[2m${s}\x1b[22m`,
  hold: (s: string) => `\x1b[32m${s}\x1b[39m`,
  cut: (s: string) => `\x1b[1;31m${s}\x1b[22;39m`,
}

export function createView(out: NodeJS.WriteStream): DemoView {
  if (!out.isTTY) {
    return { log: (line) => void out.write(`${line}\n`), follow: () => {}, stop: () => {} }
  }
  let pending: string[] = []
  let frameHeight = 0
  let ticker: NodeJS.Timeout | undefined
  let following: { timeline: Timeline; title: string } | undefined

  const draw = (): void => {
    if (!following) return
    const frame = renderFrame(following.timeline, following.title, out.columns || 100)
    // Back to the top of the previous frame, clear it, print new log lines, then the frame again.
    const up = frameHeight > 0 ? `\x1b[${frameHeight}F\x1b[J` : ''
    out.write(up + pending.map((l) => `${l}\n`).join('') + frame.map((l) => `${l}\n`).join(''))
    pending = []
    frameHeight = frame.length
  }

  return {
    log(line) {
      if (ticker) pending.push(line)
      else out.write(`${line}\n`)
    },
    follow(timeline, title) {
      following = { timeline, title }
      out.write('\x1b[?25l')
      ticker = setInterval(draw, 100)
      draw()
    },
    stop() {
      if (!ticker) return
      clearInterval(ticker)
      ticker = undefined
      draw()
      out.write('\x1b[?25h')
      following = undefined
    },
  }
}

type Cell = 'hold' | 'wait' | 'cut' | 'idle'

function renderFrame(timeline: Timeline, title: string, columns: number): string[] {
  const now = timeline.endedAt ?? timeline.now()
  const cells = Math.max(20, columns - NAME_WIDTH - 1)
  const horizon = Math.max(MIN_HORIZON_S, Math.ceil(now + 1))
  const step = horizon / cells
  const header = `${title} · t=${now.toFixed(1)}s`.slice(0, columns - 1)
  const lanes = timeline.names.map((name) => {
    const row = Array.from({ length: cells }, (_, i) => cellAt(timeline, name, i * step, step, now))
    return name.padEnd(NAME_WIDTH) + row.map(paint).join('')
  })
  const holders = timeline
    .holders()
    .map((h) => `${h.name} (token ${h.fencingToken})`)
    .join(', ')
  return [
    ansi.bold(header),
    ' '.repeat(NAME_WIDTH) + axis(cells, step),
    ...lanes,
    `${'in use'.padEnd(NAME_WIDTH)}${timeline.holders().length}/${timeline.limit}: ${holders || 'nobody'}`.slice(
      0,
      columns - 1,
    ),
    ansi.dim(
      `${' '.repeat(NAME_WIDTH)}█ holding a slot  · waiting  ✕ operator destroyed its session`.slice(
        0,
        columns - 1,
      ),
    ),
  ]
}

function cellAt(timeline: Timeline, name: string, from: number, step: number, now: number): Cell {
  const to = from + step
  if (from > now) return 'idle'
  const overlaps = (a: number, b: number | undefined): boolean => a < to && (b ?? now) > from
  if (timeline.cuts.some((c) => c.name === name && c.at >= from && c.at < to)) return 'cut'
  if (timeline.holds.some((h) => h.name === name && overlaps(h.from, h.to))) return 'hold'
  if (timeline.waits.some((w) => w.name === name && overlaps(w.from, w.to))) return 'wait'
  return 'idle'
}

function paint(cell: Cell): string {
  switch (cell) {
    case 'hold':
      return ansi.hold('█')
    case 'wait':
      return ansi.dim('·')
    case 'cut':
      return ansi.cut('✕')
    case 'idle':
      return ' '
  }
}

/** Second marks every 5 s, placed under the cell where that second starts. */
function axis(cells: number, step: number): string {
  const line = Array.from({ length: cells }, () => ' ')
  for (let s = 0; s < cells * step; s += 5) {
    const label = `${s}s`
    const at = Math.round(s / step)
    if (at + label.length > cells) break
    label.split('').forEach((ch, i) => (line[at + i] = ch))
  }
  return ansi.dim(line.join(''))
}
