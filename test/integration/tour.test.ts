// The README's quick start is examples/quickstart.mjs, its TypeScript quick start
// examples/quickstart.mts and its API tour examples/tour.mts, word for word, each with the command
// that runs it. They run from the packed package, in a project made by `npm init -y`, against the
// run's agent, in package.test.ts: there only, because they work on fixed prefixes (as a newcomer
// runs them), and two runs at once on the one agent would meet.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'

const root = resolve(import.meta.dirname, '../..')
const readme = readFileSync(resolve(root, 'README.md'), 'utf8')

/** The text of the first ```lang block after the README's link to `file`, and what lies between. */
function shownAfterLink(file: string, lang: string): { between: string; code: string } {
  const link = readme.indexOf(`](${file})`)
  assert.ok(link >= 0, `the README does not link ${file}`)
  const block = new RegExp(`\\n\`\`\`${lang}\\n([\\s\\S]*?)\`\`\`\\n`).exec(readme.slice(link))
  assert.ok(block?.[1], `the README has no \`\`\`${lang} block after its link to ${file}`)
  return { between: readme.slice(link, link + block.index), code: block[1] }
}

/** The lines of a README section: from its `## title` heading to the next. */
function section(title: string): string {
  const match = new RegExp(`^## ${title}\\n([\\s\\S]*?)(?=^## |(?![\\s\\S]))`, 'm').exec(readme)
  assert.ok(match?.[1], `the README has no "## ${title}" section`)
  return match[1]
}

describe('the README examples', () => {
  it('opens with what the library is, then the quick start, before any contributor command', () => {
    const headings = [...readme.matchAll(/^## (.*)$/gm)].map((m) => m[1])
    assert.equal(headings[0], 'Quick start')
    assert.match(readme.slice(0, readme.indexOf('\n## ')), /distributed semaphore/)
    const developing = headings.indexOf('Developing')
    assert.ok(developing > headings.indexOf('API tour'), 'Developing comes after the tour')
    const before = readme.slice(0, readme.indexOf('\n## Developing'))
    for (const command of ['npm test', 'npm run test:reliability', 'npm run demo']) {
      assert.ok(section('Developing').includes(`${command} `), `Developing lacks ${command}`)
    }
    for (const command of ['npm test', 'npm run test:reliability']) {
      assert.ok(!before.includes(command), `${command} comes before Developing`)
    }
  })

  it('shows examples/quickstart.mjs as the quick start, at most 15 lines, run with node', () => {
    const file = readFileSync(resolve(root, 'examples/quickstart.mjs'), 'utf8')
    const { code } = shownAfterLink('examples/quickstart.mjs', 'js')
    assert.equal(code, file)
    assert.ok(file.trimEnd().split('\n').length <= 15, 'the quick start is over 15 lines')
    for (const name of ['semaphore(', 'holding$', 'switchMap(', 'close()']) {
      assert.ok(file.includes(name), `the quick start does not use ${name}`)
    }
    assert.match(section('Quick start'), /^npm install rx-consul-semaphore rxjs\b/m)
    assert.match(section('Quick start'), /^node quickstart\.mjs$/m)
  })

  it('shows examples/quickstart.mts as the TypeScript quick start, with its setup, checked by tsc and run with npx tsx', () => {
    const file = readFileSync(resolve(root, 'examples/quickstart.mts'), 'utf8')
    const { between, code } = shownAfterLink('examples/quickstart.mts', 'ts')
    assert.equal(code, file)
    assert.ok(
      file.trimEnd().split('\n').length <= 15,
      'the TypeScript quick start is over 15 lines',
    )
    // The same program as the JavaScript one, once its type annotations are taken out.
    const js = readFileSync(resolve(root, 'examples/quickstart.mjs'), 'utf8')
    const untyped = file
      .replace(/, type \w+/g, '')
      .replace(/: (Semaphore|Observable<string>|boolean)(?=[ )])/g, '')
      .replace(/\(\n\s+(map\(.*\)),\n\)/, '($1)')
    assert.equal(untyped, js)
    assert.match(between, /^npm install --save-dev typescript @types\/node tsx$/m)
    // package.test.ts type-checks the program with this tsconfig, taken from the README.
    assert.match(between, /^```json\n\{\n {2}"compilerOptions": \{\n/m)
    const typescript = section('Quick start').slice(
      section('Quick start').indexOf('### In TypeScript'),
    )
    assert.match(typescript, /^npx tsc +# /m)
    assert.match(typescript, /^npx tsx quickstart\.mts +# /m)
  })

  it('shows examples/tour.mts as the API tour, run with npx tsx as a .mts file', () => {
    const file = readFileSync(resolve(root, 'examples/tour.mts'), 'utf8')
    const { between, code } = shownAfterLink('examples/tour.mts', 'ts')
    assert.equal(code, file)
    assert.match(between, /^npm install --save-dev tsx\b/m)
    assert.match(between, /^cp node_modules\/rx-consul-semaphore\/examples\/tour\.mts \.\s/m)
    assert.match(between, /^npx tsx tour\.mts$/m)
    // Only the package, rxjs and tsx are installed where it runs.
    const imported = [...file.matchAll(/^import [\s\S]*? from '([^']+)'$/gm)].map((m) => m[1])
    assert.deepEqual(imported.sort(), ['rx-consul-semaphore', 'rxjs'])
  })
})
