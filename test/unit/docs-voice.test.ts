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
import { UsageError } from '../../src/cli/args/parse-flags.js'
import { describeError } from '../../src/cli/report.js'
import { planRun } from '../../src/cli/run/plan.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { requestError, statusError } from '../../src/consul/http-errors.js'
import type { HttpAnswer } from '../../src/consul/http-request.js'
import {
  abortedError,
  fromConsulError,
  permissionHint,
  problemError,
  toSemaphoreError,
} from '../../src/base/semaphore-error.js'
import { semaphore, type SemaphoreOptions } from '../../src/index.js'
import { churnError } from '../../src/operator/operator-call.js'
import { endSentence, sentences } from '../../src/base/sentences.js'

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

// The messages a user reads, as a set: what the error constructors and the CLI make from their
// parts, each checked for the punctuation that joining parts by hand gets wrong (a doubled stop
// before a colon, a sentence run into the next, a placeholder never filled in).
describe('the messages, as a set', () => {
  const prefix = 'jobs/encode'
  const answer = (status: number, body: string): HttpAnswer => ({
    status,
    body,
    headers: {},
    label: `GET /v1/kv/${prefix}/.lock`,
    origin: 'http://127.0.0.1:8500',
  })
  const refused = new Error('connect ECONNREFUSED 127.0.0.1:8500') as Error & { code: string }
  refused.code = 'ECONNREFUSED'
  const unreachable = requestError(refused, undefined, {
    label: 'PUT /v1/session/destroy/4ca8e74b',
    bare: 'PUT /v1/session/destroy/4ca8e74b',
    where: 'http://127.0.0.1:8500',
    timeoutMs: 5000,
    origin: 'http://127.0.0.1:8500',
  })
  const consulErrors: readonly ConsulError[] = [
    statusError(answer(403, 'Permission denied')),
    statusError(answer(403, 'ACL not found')),
    statusError(answer(500, 'rpc error: No cluster leader')),
    statusError(answer(429, '')),
    statusError(
      answer(400, 'Invalid query parameter: "ns" - Namespaces are a Consul Enterprise feature'),
    ),
    statusError(answer(400, 'bad')),
    unreachable,
  ]
  const usage = (run: () => unknown): UsageError => {
    try {
      run()
    } catch (error) {
      if (error instanceof UsageError) return error
      throw error
    }
    throw new Error('no UsageError')
  }
  const invalid = (run: () => unknown): unknown => {
    try {
      run()
    } catch (error) {
      return error
    }
    throw new Error('no error')
  }
  const run = (...argv: string[]): UsageError =>
    usage(() => planRun([...argv, '--prefix', prefix, '--', 'true']))
  const signal = AbortSignal.abort(new Error('stop'))

  const messages: readonly (readonly [string, string])[] = [
    ...consulErrors.flatMap((error): [string, string][] => [
      [`fromConsulError ${error._tag}`, fromConsulError(error, 'acquiring', prefix).message],
      [`rxsem ${error._tag}`, describeError(error, prefix)],
      [`rxsem ${error._tag} wrapped`, describeError(toSemaphoreError(error, prefix), prefix)],
    ]),
    // A release that fails: the Consul error's clause, then the hint of what happens next.
    [
      'release failed',
      sentences(
        `releasing failed: ${unreachable.message}`,
        'The session expires by its TTL and other contenders then prune it.',
      ),
    ],
    ...(['Conflict', 'LimitConflict', 'CorruptLock'] as const).map((type): [string, string] => [
      `problem ${type}`,
      describeError(
        problemError({
          type,
          key: `${prefix}/.lock`,
          flags: 3304740253564472344n,
          lockLimit: 2,
          localLimit: 3,
          reason: 'not JSON',
        }),
      ),
    ]),
    ['aborted', abortedError(signal, 'waiting for a slot').message],
    ['aborted with a hint', abortedError(signal, 'waiting for a slot', 'Use waitTimeout').message],
    ['churn', churnError(`${prefix}/.lock`, 'evict a holder').message],
    ['permission hint', permissionHint(prefix)],
    ['permission hint, no prefix', permissionHint(undefined)],
    ...[
      ['--health-addr', '8080'],
      ['--ttl', '-5s'],
      ['--lock-delay', 'soon'],
      ['--timeout', 'x'],
      ['--grace', 'x'],
      ['--limit', '0'],
    ].map(([flag, value]): [string, string] => [
      `rxsem run ${flag}`,
      describeError(run(`${flag}=${value}`)),
    ]),
    ['unknown flag', describeError(run('--limt', '2'))],
    ['unknown flag, none near', describeError(run('--xyzzy'))],
    ['missing value', describeError(usage(() => planRun(['--prefix'])))],
    ['go flag', describeError(run('-prefix', 'x'))],
    [
      'several options',
      describeError(invalid(() => semaphore({ prefix: '/x', limit: 0, ttl: -1 }))),
    ],
    [
      'unknown option',
      describeError(invalid(() => semaphore({ prefix, limit: 1, limt: 2 } as SemaphoreOptions))),
    ],
    ['missing limit', describeError(invalid(() => semaphore({ prefix } as SemaphoreOptions)))],
  ]

  const rules: readonly (readonly [string, RegExp])[] = [
    ['a stop before a colon, semicolon or comma', /\.[:;,]/],
    ['a colon, semicolon or comma before a stop', /[:;,]\./],
    ['two stops', /(?<!\.)\.\s*\.(?!\.)/],
    [
      'a sentence run into the next, without a stop',
      /[a-z0-9)\]`"'] (?:The|Give|See|Run|Use|Check|Start|Set|Nothing|Did|Correct|Choose|Try)\b/,
    ],
    ['a placeholder never filled in', /<prefix>/],
    ['no stop at the end', /[^.?!]$/],
  ]

  for (const [name, message] of messages) {
    it(`${name}: ${message.slice(0, 60)}...`, () => {
      for (const [rule, pattern] of rules) {
        assert.doesNotMatch(message, pattern, `${rule}: ${message}`)
      }
    })
  }

  it('names the prefix in the policy a refused token needs, in the library and in rxsem', () => {
    const denied = statusError(answer(403, 'Permission denied'))
    assert.match(describeError(denied, prefix), /key_prefix "jobs\/encode\/"/)
    assert.match(
      fromConsulError(denied, 'acquiring', prefix).message,
      /key_prefix "jobs\/encode\/"/,
    )
  })

  it('the joiner ends each part with one stop, whatever the part ends with', () => {
    assert.equal(sentences('got 8080.:', 'See x.'), 'got 8080. See x.')
    assert.equal(
      sentences('the agent runs', 'The session expires'),
      'the agent runs. The session expires.',
    )
    assert.equal(sentences('Did you mean --limit?', undefined, ''), 'Did you mean --limit?')
    assert.equal(sentences('(see the docs.)'), '(see the docs.)')
    assert.equal(endSentence('a list; '), 'a list.')
  })
})
