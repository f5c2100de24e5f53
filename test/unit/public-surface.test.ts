// The root entry's names, pinned (issue 23): every name `rx-consul-semaphore` exports is a promise
// under semver, so adding or removing one must be a visible change to this list (and a line in
// CHANGELOG.md), never a side effect of an edit elsewhere. The pure core's pieces live in
// `rx-consul-semaphore/experimental` (src/experimental.ts), which is not pinned here.
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { before, describe, it } from 'node:test'
import ts from 'typescript'
import * as rootEntry from '../../src/index.js'
import * as experimentalEntry from '../../src/experimental.js'

const root = resolve(import.meta.dirname, '../..')

/** The values of the root entry: what `import { … } from 'rx-consul-semaphore'` finds at run time. */
const VALUES = [
  'CONTENDER_FLAGS',
  'ConsulConfigError',
  'HOLDER_FLAGS',
  'LOCK_FLAGS',
  'SEMAPHORE_FLAGS',
  'SemaphoreError',
  'contenderKey',
  'createConsulClient',
  'exclusive',
  'isTransient',
  'leaderElection',
  'lockKey',
  'semaphore',
  'setLimit',
  'tryAcquire',
  'tryLead',
  'watchPrefix',
  'withSlot',
]

/** The names of the root entry that are types only. */
const TYPES = [
  // The contenders, their options and states, and their errors.
  'ContenderFailure',
  'ContenderOptions',
  'Duration',
  'LeaderElection',
  'LeaderElectionOptions',
  'LeaderElectionState',
  'LockLeader',
  'RankedContender',
  'Semaphore',
  'SemaphoreErrorKind',
  'SemaphoreOptions',
  'SemaphoreState',
  'TransitionReason',
  // Changing a prefix's limit live.
  'LimitChange',
  'SetLimitOptions',
  // Where a contender's metrics and spans go (docs/observability.md).
  'MeterProviderLike',
  'TelemetryOptions',
  'TracerProviderLike',
  // withSlot and exclusive.
  'ExclusiveClosed',
  'ExclusiveOptions',
  'ExclusiveResult',
  'SlotGuard',
  'TaskKeyFinish',
  'TryOptions',
  'WithSlotOptions',
  'TaskLossReason',
  // The Consul client, its configuration and capability interface.
  'CallOptions',
  'Consistency',
  'ConsulClient',
  'ConsulClientConfig',
  'ConsulHttpClient',
  'ConsulTlsOptions',
  'DeleteOptions',
  'KVEntry',
  'KVSnapshot',
  'ListOptions',
  'NetworkHealth',
  'PutOptions',
  'ReadOptions',
  'ResolvedConfig',
  'SessionCreateOptions',
  'SessionInfo',
  'TxnOp',
  'TxnResult',
  'WatchEvent',
  'WatchOptions',
  // The Consul layer's typed failures.
  'Aborted',
  'BadRequest',
  'ConsulError',
  'DecodeError',
  'NotConsul',
  'PermissionDenied',
  'ServerError',
  'Timeout',
  'TlsRejected',
  'TooLarge',
  'Unreachable',
]

/**
 * Types the public signatures use without the root entry naming them, on purpose: the fields
 * every ConsulError member shares (each member is exported and shows them).
 */
const UNNAMED_ON_PURPOSE = ['ErrorBase']

const sorted = (names: Iterable<string>): string[] => [...names].sort()

/** Where the list and the entry differ, worded for the one who changed either. */
function difference(pinned: readonly string[], actual: readonly string[]): string {
  const added = actual.filter((n) => !pinned.includes(n))
  const removed = pinned.filter((n) => !actual.includes(n))
  return (
    `the root entry now ${added.length > 0 ? `also exports ${added.join(', ')}` : ''}` +
    `${added.length > 0 && removed.length > 0 ? ' and ' : ''}` +
    `${removed.length > 0 ? `no longer exports ${removed.join(', ')}` : ''}: if that is meant, ` +
    'change the list in test/unit/public-surface.test.ts and say so in CHANGELOG.md'
  )
}

describe('the public surface of rx-consul-semaphore', () => {
  let checker: ts.TypeChecker
  let rootExports: ts.Symbol[]
  const aliased = (s: ts.Symbol): ts.Symbol =>
    s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s

  before(() => {
    const config = ts.getParsedCommandLineOfConfigFile(
      resolve(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )
    assert.ok(config, 'tsconfig.json could not be read')
    const entry = resolve(root, 'src/index.ts')
    const program = ts.createProgram([entry], config.options)
    checker = program.getTypeChecker()
    const source = program.getSourceFile(entry)
    const module = source && checker.getSymbolAtLocation(source)
    assert.ok(module, 'src/index.ts is not a module')
    rootExports = checker.getExportsOfModule(module)
  })

  it('exports at run time exactly the pinned values', () => {
    const actual = sorted(Object.keys(rootEntry))
    assert.deepEqual(actual, sorted(VALUES), difference(sorted(VALUES), actual))
  })

  it('exports exactly the pinned names, values and types, as its declarations say', () => {
    const actual = sorted(rootExports.map((s) => s.name))
    const pinned = sorted([...VALUES, ...TYPES])
    assert.deepEqual(actual, pinned, difference(pinned, actual))
    const typeOnly = sorted(
      rootExports.filter((s) => (aliased(s).flags & ts.SymbolFlags.Value) === 0).map((s) => s.name),
    )
    assert.deepEqual(typeOnly, sorted(TYPES), 'a pinned type became a value or the other way')
  })

  it('names every type of its own that its public signatures use', () => {
    const exported = new Set(rootExports.map(aliased))
    const unnamed = new Set<string>()
    const seen = new Set<ts.Symbol>()
    const ours = (s: ts.Symbol): boolean =>
      (s.declarations ?? []).some(
        (d) =>
          d.getSourceFile().fileName.startsWith(resolve(root, 'src') + '/') &&
          !ts.isTypeParameterDeclaration(d),
      )
    const internal = (node: ts.Node): boolean =>
      ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal') ||
      (ts.canHaveModifiers(node) &&
        (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword))
    const visit = (symbol: ts.Symbol): void => {
      if (seen.has(symbol) || !ours(symbol)) return
      seen.add(symbol)
      if (!exported.has(symbol)) unnamed.add(symbol.name)
      const walk = (node: ts.Node): void => {
        // Bodies and initialisers are implementation; @internal and private members are not shown.
        if (ts.isBlock(node) || internal(node)) return
        if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
          const name = ts.isTypeReferenceNode(node) ? node.typeName : node.expression
          const referred = checker.getSymbolAtLocation(ts.isQualifiedName(name) ? name.left : name)
          if (referred) visit(aliased(referred))
        }
        if (ts.isFunctionDeclaration(node) && node.type === undefined) {
          const signature = checker.getSignatureFromDeclaration(node)
          const returned = signature && checker.getReturnTypeOfSignature(signature)
          const named = returned && (returned.aliasSymbol ?? returned.getSymbol())
          if (named) visit(named)
        }
        if (ts.isVariableDeclaration(node) && node.initializer !== undefined) {
          if (node.type !== undefined) walk(node.type)
          return
        }
        ts.forEachChild(node, walk)
      }
      for (const declaration of symbol.declarations ?? []) walk(declaration)
    }
    for (const symbol of exported) visit(symbol)
    assert.ok(seen.size >= exported.size, 'the walk visited the exports')
    assert.deepEqual(
      sorted(unnamed),
      sorted(UNNAMED_ON_PURPOSE),
      'a public signature uses a type that users cannot import from the root entry',
    )
  })

  it('shares no name with rx-consul-semaphore/experimental', () => {
    const experimental = Object.keys(experimentalEntry)
    assert.ok(experimental.includes('decide'), 'the experimental entry loads')
    assert.deepEqual(
      experimental.filter((name) => name in rootEntry),
      [],
    )
  })
})
