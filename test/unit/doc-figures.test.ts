// Every measured figure the pages quote is one that its source has, quoted the same: the bench's
// figures come from bench/results.md (written by `npm run bench`), the fault tests' from
// docs/reliability.md. A page that quotes 9.3 s where results.md says 11.8 s, "about 6" where it
// says 5.9, or 0.85 % where it says 0.81 % fails here; so does a CHANGELOG entry that keeps the
// figure of an old run.
//
// What is a measured figure. The test reads the README, docs/*.md (but docs/reliability.md, a
// source itself, and docs/testing.md, the contributors' page) and CHANGELOG.md, block by block (a
// paragraph, a list item, a table row), and checks the blocks that speak of measurements: the
// README's Performance section, and any block that names the bench or results.md or a
// performance measure (p50, p95, RSS, ms of CPU, requests per acquisition, jobs/s,
// acquisitions/s). In such a block a figure is a number with a unit (ms, µs, s, MB, kB, %, ×,
// jobs/s, acquisitions/s, requests) or a bare number in the forms the docs compare with
// ("against about 67", "188 and 434 ms": the bare one takes the unit of the figure it is compared
// with). Not treated as measured figures, and so not checked: numbers without a unit (counts of
// jobs, replicas, contenders, the limit, version numbers), anything in code (fenced blocks and
// code spans: option values such as `ttl: '30s'`, commands, examples), and blocks that speak of
// no measurement (option defaults such as a TTL of 15 s, limits such as 64 operations in a
// transaction, timeouts). Nor are the timings that the integration and fault tests observed,
// quoted where no bench or performance measure is named (a holder dropping within 13 ms of a
// restart, the watchdog's 0.5 s): their record is docs/reliability.md and the tests themselves.
// A setting in a measured block that results.md does not state as such is listed in SETTINGS,
// with why. Matching is by number and unit, so a figure can pass by coincidence with another
// figure of results.md of the same number and unit; it cannot pass with another rounding.
//
// Sizes of the build are checked against the build by the package test; docs/design.md's picture
// of the CLI is checked here against the commands of src/cli/main.ts.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'

const root = resolve(import.meta.dirname, '../..')
const read = (file: string): string => readFileSync(join(root, file), 'utf8')

/** The pages whose figures are checked. */
const PAGES = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'reliability.md' && f !== 'testing.md')
    .map((f) => `docs/${f}`),
]

/**
 * Figures in measured blocks that are settings or definitions, not measurements, and that
 * results.md does not state with that unit: page, the text around the figure, and why.
 */
const SETTINGS: readonly { page: string; text: RegExp; why: string }[] = [
  {
    page: 'docs/cli.md',
    text: /one file of about [\d,.]+ kB/,
    why: "the bin's size, which the package test checks against the build",
  },
  {
    page: 'docs/operations.md',
    text: /at a time, 30 s wait/,
    why: "the long poll's wait, the default of the watchWait option",
  },
  {
    page: 'docs/operations.md',
    text: /at most one poll every 10 ms: up to 100 requests a second/,
    why: 'a bound worked out from the 10 ms between polls, not a measurement',
  },
]

/** A unit as the pages and results.md write it, to one spelling. */
function unitOf(raw: string): string {
  const unit = raw.trim()
  if (unit === 'x' || unit === '×') return '×'
  if (unit === 'KB') return 'kB'
  if (/^(?:acquisitions|acq)\/s$/.test(unit)) return 'acquisitions/s'
  if (/^req(?:uests|\/acq)?$/.test(unit)) return 'requests'
  return unit
}

/** A number to one spelling: no thousands separator, no sign; the decimals kept as written. */
const numberOf = (raw: string): string => raw.replace(/[,+]/g, '')

const NUMBER = String.raw`(?<![\w.])\+?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\+?\d+(?:\.\d+)?`
const UNIT = String.raw`(?:ms|µs|s|MB|kB|KB|%|jobs\/s|acquisitions\/s|acq\/s|requests)(?![\w/])|×|x(?![\w])`
const FIGURE = new RegExp(String.raw`(${NUMBER})( ?(?:${UNIT}))`, 'g')

/** What a source states: each number with every unit it is stated in ('' for none). */
type Figures = Map<string, Set<string>>

function add(figures: Figures, number: string, unit: string): void {
  const units = figures.get(numberOf(number)) ?? new Set<string>()
  units.add(unitOf(unit))
  figures.set(numberOf(number), units)
}

/** The unit a table's column header or row label gives the bare numbers under or beside it. */
function unitOfLabel(label: string): string {
  if (/per second|\/s\b/.test(label)) return /jobs/.test(label) ? 'jobs/s' : 'acquisitions/s'
  if (/req\/acq|requests per|\brequests\b/.test(label)) return 'requests'
  if (/writes per/.test(label)) return 'writes'
  const unit = /(?:^|[\s(])(ms|µs|MB|KB|kB|s|%)\b(?!.*\b(?:ms|µs|MB|KB|kB)\b)/.exec(label)
  return unit?.[1] ?? ''
}

/** The figures of a source: prose and tables, a table's bare numbers in its columns' units. */
function figuresOf(markdown: string): Figures {
  const figures: Figures = new Map()
  let header: string[] = []
  for (const line of markdown.split('\n')) {
    if (line.startsWith('|')) {
      const cells = line.split('|').slice(1, -1)
      if (cells.every((c) => /^[\s:-]*$/.test(c))) continue
      if (header.length === 0) {
        header = cells
        continue
      }
      cells.forEach((cell, i) => {
        const labels = [header[i] ?? '', cells[0] ?? '']
        for (const m of cell.matchAll(new RegExp(NUMBER, 'g'))) {
          add(figures, m[0], '')
          for (const label of labels) add(figures, m[0], unitOfLabel(label))
        }
      })
    } else header = []
    for (const m of line.matchAll(new RegExp(NUMBER, 'g'))) add(figures, m[0], '')
    for (const m of line.matchAll(FIGURE)) add(figures, m[1] ?? '', m[2] ?? '')
  }
  return figures
}

interface Stated {
  readonly page: string
  readonly line: number
  readonly figure: string
  readonly number: string
  readonly unit: string
  /** The block it is in, for the message. */
  readonly block: string
  /** The text around the figure, which SETTINGS match. */
  readonly context: string
  /** Whether the block cites docs/reliability.md, whose figures it may then quote. */
  readonly citesReliability: boolean
}

/** Code spans and fenced blocks blanked out (same length, so line numbers hold). */
function withoutCode(markdown: string): string {
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ')
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, blank)
    .replace(/`[^`\n]*`/g, (s) => `\`${blank(s.slice(2))}\``)
}

/** Paragraphs, list items and table rows, with the line each starts on. */
function blocksOf(markdown: string): { start: number; text: string; section: string }[] {
  const blocks: { start: number; text: string; section: string }[] = []
  let section = ''
  let current: { start: number; lines: string[]; section: string } | undefined
  const flush = (): void => {
    if (current) blocks.push({ ...current, text: current.lines.join('\n') })
    current = undefined
  }
  markdown.split('\n').forEach((line, i) => {
    const heading = /^#{1,6} (.*)/.exec(line)
    if (heading) {
      flush()
      if (/^## /.test(line)) section = heading[1] ?? ''
      return
    }
    if (line.trim() === '' || /^\s*(?:[-*]|\d+\.) /.test(line) || line.startsWith('|')) flush()
    if (line.trim() === '') return
    current ??= { start: i + 1, lines: [], section }
    current.lines.push(line)
    if (line.startsWith('|')) flush()
  })
  flush()
  return blocks
}

const MEASURED =
  /npm run bench|results\.md|\bbench(?:mark)?\b|BENCH_|\bp50\b|\bp95\b|\bRSS\b|\d (?:ms|s) of CPU|\bCPU (?:per|\(user)|(?:the|its|process.s) CPU\b|per acquisition|jobs\/s|acquisitions\/s/i

/** The measured figures a page states, in the blocks that speak of measurements. */
const statedFigures = (page: string): Stated[] => statedFiguresOfText(page, read(page))

function statedFiguresOfText(page: string, markdown: string): Stated[] {
  const stated: Stated[] = []
  for (const block of blocksOf(withoutCode(markdown))) {
    const performance = page === 'README.md' && block.section === 'Performance'
    if (!performance && !MEASURED.test(block.text)) continue
    const text = block.text.replace(/\s+/g, ' ')
    const lineOf = (index: number): number =>
      block.start + (block.text.slice(0, index).match(/\n/g)?.length ?? 0)
    const flat = block.text.replace(/\s/g, ' ')
    const withUnit: { index: number; end: number; unit: string }[] = []
    const seen = new Set<number>()
    const push = (index: number, figure: string, number: string, unit: string): void => {
      if (seen.has(index)) return
      seen.add(index)
      stated.push({
        page,
        line: lineOf(index),
        figure,
        number: numberOf(number),
        unit: unitOf(unit),
        block: text,
        context: flat.slice(Math.max(0, index - 50), index + figure.length + 50),
        citesReliability: /reliability\.md|reliability tests?/.test(text),
      })
    }
    // The same text with single spaces, so that a figure broken over two lines is one.
    for (const m of flat.matchAll(FIGURE)) {
      push(m.index, m[0], m[1] ?? '', m[2] ?? '')
      withUnit.push({ index: m.index, end: m.index + m[0].length, unit: unitOf(m[2] ?? '') })
    }
    // "188 and 434 ms", "1 s, 40 MB": a bare number listed before a figure takes its unit.
    const list = new RegExp(
      String.raw`(${NUMBER})(?![\d.,]*\d)(?= ?(?:,| and| or| to|–) (?:about )?(?:${NUMBER}) ?(?:${UNIT}))`,
      'g',
    )
    for (const m of flat.matchAll(list)) {
      const next = withUnit.find((w) => w.index > m.index)
      if (next && !withUnit.some((w) => w.index === m.index))
        push(m.index, m[0], m[1] ?? '', next.unit)
    }
    // "against about 67", "about 14 … (consul lock -n: 38 and 101)": a bare number compared with
    // a figure before it takes that figure's unit.
    const compared = new RegExp(
      String.raw`(?:\babout|\bagainst(?: [^\s,;.()]+){0,3}?(?: about)?|:(?= [\d.]+(?:(?: and|,) [\d.]+)?\))) (${NUMBER})(?![\d.,]*\d)(?! ?(?:${UNIT}))(?:(?: and| or|,) (${NUMBER})(?![\d.,]*\d)(?! ?(?:${UNIT})))?`,
      'g',
    )
    for (const m of flat.matchAll(compared)) {
      const before = withUnit.filter((w) => w.end <= m.index).at(-1)
      if (!before) continue
      for (const number of [m[1], m[2]]) {
        if (number) push(m.index + m[0].lastIndexOf(number), number, number, before.unit)
      }
    }
  }
  return stated
}

const results = figuresOf(read('bench/results.md'))
const reliability = figuresOf(withoutCode(read('docs/reliability.md')))

const has = (figures: Figures, s: Stated): boolean => figures.get(s.number)?.has(s.unit) ?? false

/** The measured figures of `pages` that no source has, as messages. */
function unsourced(pages: readonly string[]): string[] {
  return pages.flatMap((page) =>
    statedFigures(page)
      .filter((s) => !has(results, s) && !(s.citesReliability && has(reliability, s)))
      .filter((s) => !SETTINGS.some((x) => x.page === page && x.text.test(s.context)))
      .map(
        (s) =>
          `${s.page}:${s.line}: "${s.figure}" (${s.number} ${s.unit}) is not in bench/results.md` +
          `${s.citesReliability ? ' or docs/reliability.md' : ''}: quote it as results.md states it, or link to its row`,
      ),
  )
}

describe('measured figures in the docs', () => {
  it('finds measured figures in the pages (the check reads something)', () => {
    const readme = statedFigures('README.md')
    assert.ok(readme.length > 40, `only ${readme.length} figures found in the README`)
    assert.ok(statedFigures('docs/observability.md').length >= 3)
  })

  it('are each a figure of bench/results.md (or of docs/reliability.md, where cited)', () => {
    const wrong = unsourced(PAGES)
    assert.deepEqual(wrong, [], `${wrong.length} figures without a source:\n${wrong.join('\n')}`)
  })

  it('lists as settings only figures the pages still state', () => {
    const stale = SETTINGS.filter(
      (x) => !statedFigures(x.page).some((s) => x.text.test(s.context)),
    ).map((x) => `${x.page}: ${String(x.text)}`)
    assert.deepEqual(stale, [], `settings no page states any more:\n${stale.join('\n')}`)
  })

  it('are told apart from settings, so that the check can fail', () => {
    // Figures of old runs and rounded ones, in the forms the pages write them: each is found as a
    // figure (whether today's results.md happens to have it is the test above's business).
    const wrong = [
      'Measured with `npm run bench`: 10,000 jobs done in 9.3 s, with 0.66 ms of CPU per job; 1,000 jobs at 488 jobs/s.',
      'A replica sends 11.6 requests per acquisition at 12 replicas (`consul lock -n`: 30.3).',
      'The contention benchmark counts about 6 requests per acquisition in all, against about 67 for `consul lock -n`.',
      'Each replica costs about 14 requests per acquisition at 12 and at 40 (`consul lock -n`: 38 and 101).',
      'The bench puts the telemetry at 0.85 % of the CPU.',
      'Handover p50 15.6 ms and 52.8 ms, against 189 and 434 ms.',
    ]
    assert.deepEqual(
      wrong.map((text) => figuresIn(text).map((s) => `${s.number} ${s.unit}`)),
      [
        ['9.3 s', '0.66 ms', '488 jobs/s'],
        ['11.6 requests', '30.3 requests'],
        ['6 requests', '67 requests'],
        ['14 requests', '38 requests', '101 requests'],
        ['0.85 %'],
        ['15.6 ms', '52.8 ms', '434 ms', '189 ms'],
      ],
    )
    // And a figure is sourced only by the same number with the same unit.
    const sourced = figuresOf('| figure | p50 ms |\n|---|---|\n| handover | 15.6 |\n')
    const [p50, other] = figuresIn('Handover p50 15.6 ms, and 15.6 s.')
    assert.ok(p50 !== undefined && has(sourced, p50), 'the same figure with its unit is sourced')
    assert.ok(
      other !== undefined && !has(sourced, other),
      'the same number with another unit is not',
    )
    // A block that speaks of no measurement is not read: option defaults and limits.
    assert.deepEqual(
      figuresIn('The session TTL is 15 s by default; a transaction takes 64 operations.'),
      [],
    )
  })
})

/** The figures `statedFigures` finds in one block of text, as if a page held it. */
function figuresIn(text: string): Stated[] {
  return statedFiguresOfText('example.md', text)
}

describe("docs/design.md's picture", () => {
  it('names every command of src/cli/main.ts', () => {
    const main = read('src/cli/main.ts')
    const table = /const commands\b[^\n]*\{\n([^}]*)\}/.exec(main)?.[1] ?? ''
    const commands = [...table.matchAll(/^\s*'?([\w-]+)'?:/gm)].map((m) => m[1])
    assert.ok(commands.length >= 7, `only ${commands.length} commands read from main.ts`)
    const picture = /CLI: rxsem ([^\n]*?)\s+src\/cli\//.exec(read('docs/design.md'))?.[1] ?? ''
    assert.deepEqual(picture.split(' | ').sort(), [...commands].sort())
  })
})
