// Every integration and reliability test registers the clean-up of what it takes, so that a
// failed assertion cleans up too (test/support/tracked.ts). Read from the sources, two rules:
//
// - no `uniquePrefix(` call: a test takes its prefix from `testPrefix(t, url, name)`, which
//   registers the prefix's clean-up (its keys deleted, the sessions holding them destroyed);
// - no `.subscribe(` whose Subscription is thrown away: a call that is a statement of its own
//   (or `void`), or the whole body of a `new Promise` executor arrow. Keep it (`keep(t, ...)`,
//   `tracked(t, ...)`), or name it and unsubscribe it in a `finally` or an `after` hook.
//
// A line that really needs neither says so with `// cleanup-exempt: <why>` on itself or on the
// line above; the reason is required.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import ts from 'typescript'
import { keep, onEnd, type Scope } from '../support/tracked.js'

const root = resolve(import.meta.dirname, '../..')
const SCANNED = ['test/integration', 'test/reliability']
const EXEMPT = /\/\/\s*cleanup-exempt:\s*\S/

/** `*.test.ts` files under `dir`, at any depth. */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return testFiles(path)
    return entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/** Where a `.subscribe(...)` call's result goes nowhere: the Subscription is lost. */
function discarded(call: ts.CallExpression): boolean {
  let node: ts.Node = call
  while (ts.isParenthesizedExpression(node.parent)) node = node.parent
  const parent = node.parent
  if (ts.isExpressionStatement(parent) || ts.isVoidExpression(parent)) return true
  // `new Promise((resolve) => x.subscribe({ error: resolve }))`: the executor's value is dropped.
  return (
    ts.isArrowFunction(parent) &&
    parent.body === node &&
    ts.isNewExpression(parent.parent) &&
    ts.isIdentifier(parent.parent.expression) &&
    parent.parent.expression.text === 'Promise'
  )
}

/** Each break of the two rules in `source`, as `file:line: what`. */
export function cleanupFindings(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const lines = source.split('\n')
  const exempt = (line: number): boolean =>
    EXEMPT.test(lines[line] ?? '') || EXEMPT.test(lines[line - 1] ?? '')
  const findings: string[] = []
  const report = (node: ts.Node, what: string): void => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line
    if (!exempt(line)) findings.push(`${file}:${line + 1}: ${what}`)
  }
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression
      if (ts.isIdentifier(callee) && callee.text === 'uniquePrefix')
        report(
          node,
          'a bare uniquePrefix(...) call, whose keys a failed test leaves behind. Take the prefix from testPrefix(t, url, name) (test/support/tracked.ts), which clears it however the test ends.',
        )
      if (
        ts.isPropertyAccessExpression(callee) &&
        callee.name.text === 'subscribe' &&
        discarded(node)
      )
        report(
          callee.name,
          'a Subscription thrown away, which nothing unsubscribes when the test fails. Keep it with keep(t, ...) (test/support/tracked.ts), or name it and unsubscribe it in a finally block or an after hook.',
        )
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return findings
}

describe('the clean-up stack of test/support/tracked.ts', () => {
  /** A scope whose `after` hook the test runs itself. */
  const scope = (): Scope & { end: () => Promise<unknown> } => {
    let hook: (() => unknown) | undefined
    return {
      after: (fn) => {
        assert.equal(hook, undefined, 'one after hook per scope')
        hook = fn
      },
      end: () => Promise.resolve(hook?.()),
    }
  }

  it('runs the clean-ups last registered first, in one after hook', async () => {
    const s = scope()
    const ran: string[] = []
    onEnd(s, () => ran.push('prefix'))
    onEnd(s, async () => {
      await Promise.resolve()
      ran.push('contender')
    })
    keep(s, { unsubscribe: () => void ran.push('subscription') })
    await s.end()
    assert.deepEqual(ran, ['subscription', 'contender', 'prefix'])
  })

  it('runs every clean-up when some throw, then throws their errors', async () => {
    const s = scope()
    const ran: string[] = []
    onEnd(s, () => ran.push('first'))
    onEnd(s, () => {
      throw new Error('second failed')
    })
    onEnd(s, () => Promise.reject(new Error('third failed')))
    await assert.rejects(s.end(), (error: unknown) => {
      assert.ok(error instanceof AggregateError)
      assert.deepEqual(
        error.errors.map((e: Error) => e.message),
        ['third failed', 'second failed'],
      )
      return true
    })
    assert.deepEqual(ran, ['first'])
  })
})

describe('integration tests register their clean-up', () => {
  it('finds a bare uniquePrefix, a subscribe statement and a subscribing Promise executor', () => {
    const source = [
      "const prefix = uniquePrefix('x')",
      'sem.holding$.subscribe()',
      'sem.state$.pipe(take(1)).subscribe((s) => seen.push(s))',
      'await new Promise((resolve) => sem.state$.subscribe({ error: resolve }))',
      'void sem.holding$.subscribe()',
    ].join('\n')
    assert.deepEqual(
      cleanupFindings('x.test.ts', source).map((f) => f.split(': ')[0]),
      ['x.test.ts:1', 'x.test.ts:2', 'x.test.ts:3', 'x.test.ts:4', 'x.test.ts:5'],
    )
  })

  it('lets a kept, a named or an exempted Subscription and a testPrefix through', () => {
    const source = [
      "const prefix = testPrefix(t, agent.url, 'x')",
      'keep(t, sem.holding$.subscribe())',
      'const sub = sem.holding$.subscribe()',
      'subs.push(sem.holding$.subscribe())',
      '// cleanup-exempt: the process exits with the test',
      'sem.holding$.subscribe()',
      "const text = 'x.subscribe() and uniquePrefix(x) in a string'",
    ].join('\n')
    assert.deepEqual(cleanupFindings('x.test.ts', source), [])
  })

  it('wants a reason after cleanup-exempt', () => {
    const source = ['// cleanup-exempt:', 'sem.holding$.subscribe()'].join('\n')
    assert.equal(cleanupFindings('x.test.ts', source).length, 1)
  })

  it(`finds neither in ${SCANNED.join(' or ')}`, () => {
    const files = SCANNED.flatMap((dir) => testFiles(join(root, dir)))
    assert.ok(files.length > 50, `expected the integration test files, found ${files.length}`)
    const findings = files.flatMap((path) =>
      cleanupFindings(relative(root, path), readFileSync(path, 'utf8')),
    )
    assert.deepEqual(findings, [], `clean-up not registered:\n${findings.join('\n')}`)
  })
})
