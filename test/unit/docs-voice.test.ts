// The shipped prose speaks to its reader about the library as it is: the README, the CHANGELOG,
// docs/*.md and the comments of src/ (their TSDoc becomes the package's .d.ts)
// state what the library does and why, and what was measured, never the story of how it got
// there. Each rule below is one way that story shows, narrow enough that ordinary prose passes.
// Test files and the test harness are named only in docs/testing.md, the contributors' page.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import ts from 'typescript'

const root = resolve(import.meta.dirname, '../..')

/** The one doc that may name tests, test files and the harness: the contributors' page. */
const CONTRIBUTOR_DOC = 'docs/testing.md'

interface Rule {
  readonly name: string
  readonly pattern: RegExp
  /** Whether the rule holds in `file` (a path relative to the root); default everywhere. */
  readonly appliesTo?: (file: string) => boolean
}

const notContributorDoc = (file: string): boolean => file !== CONTRIBUTOR_DOC

const RULES: readonly Rule[] = [
  { name: 'an issue number', pattern: /\bissues? #?\d+/i },
  { name: 'a figure or table number', pattern: /\b(?:figures?|fig\.|tables?|bench) \d+[a-z]?\b/i },
  {
    name: 'a test file',
    pattern: /[\w./-]*\.(?:test|spec)\.[cm]?ts\b/,
    appliesTo: notContributorDoc,
  },
  {
    name: 'a path of the tests or their harness',
    pattern: /\b(?:test\/(?:unit|integration|reliability|support|fixtures)|marbles)\//,
    appliesTo: notContributorDoc,
  },
  // "is used to", "be used to" and a capitalised "Used to ..." say what a thing is for.
  {
    name: 'what the library used to do',
    pattern: /(?<!\b(?:is|are|was|were|be|been|being|get|gets|got)\s+)\bused to\b/,
  },
  { name: 'a fix as an event', pattern: /\b(?:was|were|been|is now|got) fixed\b/i },
  {
    name: 'a time before or since a fix',
    pattern: /\b(?:before|since|with|without|until|after) (?:the|this|that) fix\b/i,
  },
  {
    name: 'what someone found',
    pattern: /\b(?:we|nemesis|tests?|suite|bench) (?:found|caught)\b/i,
  },
  { name: 'what was found by a run', pattern: /\bfound by the (?:nemesis|tests?|suite|bench)\b/i },
  { name: 'runs counted since a change', pattern: /\bruns? (?:[\w-]+ ){0,5}since[,.;]/i },
  { name: 'a former value in parentheses', pattern: /(?<!\bnow \S+ )\((?:was|were) [^)]*\)/ },
  {
    name: 'what happened before a change',
    pattern: /(?:[;(]\s*|\.\s+)before, (?:it|they|the|a|an|this|that|each|every)\b/i,
  },
  {
    name: 'an earlier version of the code',
    pattern: /\b(?:the (?:code|version|build) before|the old code|for this (?:work|change))\b/i,
  },
]

/** Paths below `dir` (relative to the root) whose name ends with one of `suffixes`. */
function filesUnder(dir: string, suffixes: readonly string[]): string[] {
  return readdirSync(join(root, dir))
    .flatMap((name) => {
      const path = join(dir, name)
      if (statSync(join(root, path)).isDirectory()) return filesUnder(path, suffixes)
      return suffixes.some((suffix) => name.endsWith(suffix)) ? [path] : []
    })
    .sort()
}

interface Passage {
  readonly file: string
  /** 1-based line of the passage's first character. */
  readonly line: number
  readonly text: string
}

/** A markdown file, line by line. */
function markdownPassages(file: string): Passage[] {
  return readFileSync(join(root, file), 'utf8')
    .split('\n')
    .map((text, i) => ({ file, line: i + 1, text }))
}

/** The comments of a TypeScript source, each line of each comment apart. */
function commentPassages(file: string): Passage[] {
  const source = readFileSync(join(root, file), 'utf8')
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true)
  // Every comment is trivia before or after some token: visit every token of the tree.
  const comments = new Map<number, ts.CommentRange>()
  const visit = (node: ts.Node): void => {
    const children = node.getChildren(tree)
    if (children.length > 0) return children.forEach(visit)
    for (const range of [
      ...(ts.getLeadingCommentRanges(source, node.pos) ?? []),
      ...(ts.getTrailingCommentRanges(source, node.end) ?? []),
    ]) {
      comments.set(range.pos, range)
    }
  }
  visit(tree)
  return [...comments.values()].flatMap((range) => {
    const firstLine = tree.getLineAndCharacterOfPosition(range.pos).line + 1
    return source
      .slice(range.pos, range.end)
      .split('\n')
      .map((text, i) => ({ file, line: firstLine + i, text }))
  })
}

/** Every rule broken in `passages`, as `file:line: "match" (rule)`. */
function breaches(passages: readonly Passage[]): string[] {
  return passages.flatMap((passage) =>
    RULES.filter((rule) => rule.appliesTo?.(passage.file) ?? true).flatMap((rule) => {
      const found = rule.pattern.exec(passage.text)
      return found ? [`${passage.file}:${passage.line}: "${found[0]}" (${rule.name})`] : []
    }),
  )
}

describe('the voice of the docs', () => {
  it('the README, the CHANGELOG and docs/*.md speak of the library as it is', () => {
    const files = ['README.md', 'CHANGELOG.md', ...filesUnder('docs', ['.md'])]
    assert.deepEqual(breaches(files.flatMap(markdownPassages)), [])
  })

  it('the comments of src/ speak of the library as it is', () => {
    const files = filesUnder('src', ['.ts', '.cts', '.mts'])
    assert.ok(files.length > 50, `only ${files.length} sources found under src/`)
    assert.deepEqual(breaches(files.flatMap(commentPassages)), [])
  })

  // The rules themselves: each catches the story it names, and lets ordinary prose through.
  it('catches history and lets ordinary prose through', () => {
    const caught = [
      'Bench figure 5e measures its CPU (issue 24).',
      'import +34.4 MB (table 3c)',
      'never all got their keys in (bench 5a)',
      'the coordinator test has the case (`coordinator.test.ts`)',
      'see test/integration/live-limit.test.ts',
      'every contender of every process used to wake up for it',
      'This test found a bug (fixed): ...',
      'What the nemesis found, and what was fixed:',
      'before that fix the tail of the start-up burst timed out',
      'Six runs of the 3-server file since, no long wait.',
      'a watch polls at most every 10 ms under churn (was 50 ms)',
      "as Go's holders do; before, it dropped its slot",
      'side by side with the code before on the same machine',
    ]
    for (const text of caught) {
      assert.notDeepEqual(breaches([{ file: 'docs/x.md', line: 1, text }]), [], text)
    }
    const passes = [
      'Used to keep `next` the same object while nothing new is asked.',
      'The token is used to authenticate every request.',
      'Measured on 2026-11-26: 1,000 contenders were all contending in 3.0 s.',
      'The holders found by the prune keep their slots; step 2 of the protocol decides.',
      'Any slot acquired after the change has a larger fencing token.',
      'The message says what to fix: the command whose `--help` explains the fix.',
      'A release leaves `.lock` whatever limit it states now; `rxsem status` prints limit now 3 (was 2).',
      'Consul 1.8 keys the tombstone without the slash (hashicorp/consul#524 is the design).',
      'The table below lists every policy; the figure shows the handover.',
      'A renewal answered 429 is tried again before the lease deadline.',
    ]
    for (const text of passes) {
      assert.deepEqual(breaches([{ file: 'docs/x.md', line: 1, text }]), [], text)
    }
    const inTestingDoc = 'test/unit/coordinator.test.ts counts one view per snapshot.'
    assert.deepEqual(breaches([{ file: CONTRIBUTOR_DOC, line: 1, text: inTestingDoc }]), [])
  })
})
