// The import graph of src/, read with the TypeScript compiler's parser (test/support/import-graph.ts:
// `import type`, re-exports, `import('...')` types and dynamic imports count as edges), against
// the table of floors in floors.json that eslint.config.js guards too: no circle between files, no
// import from a floor to a floor above it, and nothing at the src root but the entries.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import {
  circles,
  importEdges,
  sourceFiles,
  specifiersOf,
  type ImportEdge,
} from '../support/import-graph.js'

const root = resolve(import.meta.dirname, '../..')

interface Floors {
  readonly entries: readonly string[]
  readonly floors: readonly { readonly folder: string }[]
}

const FLOORS = JSON.parse(readFileSync(join(root, 'floors.json'), 'utf8')) as Floors

/** The place of `file`'s floor, lowest 0; the entries are above every floor; undefined: none. */
function floorOf(file: string): number | undefined {
  if (FLOORS.entries.includes(file)) return FLOORS.floors.length
  const index = FLOORS.floors.findIndex(({ folder }) => file.startsWith(`${folder}/`))
  return index === -1 ? undefined : index
}

const nameOf = (index: number): string => FLOORS.floors[index]?.folder ?? 'the entries'

/** Each import that runs from a floor up to a higher one, as a line for people. */
function upwardImports(edges: readonly ImportEdge[]): string[] {
  return edges.flatMap(({ from, to, specifier }) => {
    const own = floorOf(from)
    const target = floorOf(to)
    if (own === undefined || target === undefined || target <= own) return []
    return [`${from} (${nameOf(own)}) imports '${specifier}' of ${nameOf(target)}, a floor above.`]
  })
}

/** The circles, as lines for people. */
const circleLines = (edges: readonly ImportEdge[]): string[] =>
  circles(edges).map((files) => `a circle of ${files.length} file(s): ${files.join(', ')}`)

describe('the import graph of src', () => {
  const edges = importEdges(root, 'src')

  it('has every file of src in a floor of floors.json, or among its entries', () => {
    const homeless = sourceFiles(root, 'src').filter((file) => floorOf(file) === undefined)
    assert.deepEqual(
      homeless,
      [],
      `These files are in no floor of floors.json: move each into the folder of its floor, or add ` +
        `an entry to floors.json if the package's exports, bin or build name it.`,
    )
  })

  it('has no circle between files', () => {
    const found = circleLines(edges)
    assert.deepEqual(
      found,
      [],
      `src has import circles (type imports count):\n${found.join('\n')}\n` +
        `Break each: move what both sides need into a file that imports neither.`,
    )
  })

  it('has no import from a floor up to a higher one', () => {
    const found = upwardImports(edges)
    assert.deepEqual(
      found,
      [],
      `src has imports up a floor (floors.json lists the floors, lowest first):\n` +
        `${found.join('\n')}\nMove what the lower floor needs down to it, or the importer up.`,
    )
  })

  it("is the table of docs/design.md's Floors, floor by floor in the same order", () => {
    const design = readFileSync(join(root, 'docs/design.md'), 'utf8')
    const rows = [...design.matchAll(/^\| [^|]+ \| `(src\/[a-z]+)\/` +\|/gm)].map((row) => row[1])
    assert.deepEqual(
      rows,
      FLOORS.floors.map(({ folder }) => folder),
      'The floors table of docs/design.md and floors.json list other floors or another order.',
    )
  })

  it('lists floors that are folders of src, and entries that exist', () => {
    const files = sourceFiles(root, 'src')
    for (const { folder } of FLOORS.floors) {
      assert.ok(
        files.some((file) => file.startsWith(`${folder}/`)),
        `floors.json names ${folder}, which holds no source file.`,
      )
    }
    for (const entry of FLOORS.entries) {
      assert.ok(files.includes(entry), `floors.json names the entry ${entry}, which is not a file.`)
    }
  })
})

describe('the import graph check itself', () => {
  it('reads every kind of import, type-only and dynamic ones too', () => {
    const code = [
      "import a from './a.js'",
      "import type { B } from './b.js'",
      "export { c } from './c.js'",
      "export type { D } from './d.js'",
      "export * from './e.js'",
      "import f = require('./f.cjs')",
      "type G = import('./g.js').G",
      "const h = await import('./h.js')",
      "const i = require('./i.js')",
      "import 'rxjs'",
    ].join('\n')
    assert.deepEqual(specifiersOf('x.ts', code), [
      './a.js',
      './b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.cjs',
      './g.js',
      './h.js',
      './i.js',
      'rxjs',
    ])
  })

  const edge = (from: string, to: string): ImportEdge => ({ from, to, specifier: to })

  it('finds a circle, a file that imports itself, and nothing in a chain', () => {
    assert.deepEqual(
      circles([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd'), edge('e', 'e')]),
      [['a', 'b', 'c'], ['e']],
    )
    assert.deepEqual(circles([edge('a', 'b'), edge('b', 'c'), edge('a', 'c')]), [])
  })

  it('names an import from the core up to the effects, and none down from them', () => {
    assert.deepEqual(
      upwardImports([
        edge('src/core/x.ts', 'src/effects/y.ts'),
        edge('src/effects/y.ts', 'src/core/x.ts'),
        edge('src/index.ts', 'src/effects/y.ts'),
      ]),
      [`src/core/x.ts (src/core) imports 'src/effects/y.ts' of src/effects, a floor above.`],
    )
    assert.match(
      upwardImports([edge('src/recipes/x.ts', 'src/index.ts')]).join(''),
      /of the entries, a floor above/,
    )
  })
})
