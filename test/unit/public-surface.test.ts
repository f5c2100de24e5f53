// The root entry's names, pinned: every name `rx-consul-semaphore` exports is a promise under
// semver, so adding or removing one must be a visible change to this list (and a line in
// CHANGELOG.md), never a side effect of an edit elsewhere. The low-level Consul client's names
// (`rx-consul-semaphore/consul`, src/consul/index.ts) are pinned too, so that a name moving between
// the two entries shows here; the pure core's pieces live in `rx-consul-semaphore/experimental`
// (src/experimental.ts), which is not pinned.
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { before, describe, it } from 'node:test'
import ts from 'typescript'
import * as rootEntry from '../../src/index.js'
import * as consulEntry from '../../src/consul/index.js'
import * as experimentalEntry from '../../src/experimental.js'

const root = resolve(import.meta.dirname, '../..')

/** The values of the root entry: what `import { … } from 'rx-consul-semaphore'` finds at run time. */
const VALUES = [
  'CONTENDER_FLAGS',
  'ConsulConfigError',
  'DRAIN_VALUE',
  'MAX_SEMAPHORES',
  'HOLDER_FLAGS',
  'RENEWING_FLAGS',
  'LOCK_FLAGS',
  'SEMAPHORE_FLAGS',
  'SemaphoreError',
  'allSlots',
  'contenderKey',
  'createConsulClient',
  'destroyIdleSessions',
  'drain',
  'evict',
  'doctor',
  'exclusive',
  'leaderElection',
  'liftDrain',
  'lockKey',
  'readWriteLock',
  'semaphore',
  'setLimit',
  'tryAcquire',
  'tryLead',
  'withReadLock',
  'withSlot',
  'withSlots',
  'withWriteLock',
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
  'Leader',
  'RankedContender',
  'Semaphore',
  'SemaphoreErrorKind',
  'SemaphoreOptions',
  'SemaphoreState',
  'ServiceCheck',
  'TransitionReason',
  // Changing a prefix's limit live.
  'LimitChange',
  'SetLimitOptions',
  // Evicting a holder, draining a prefix.
  'Drain',
  'DrainLift',
  'DrainOptions',
  'EvictOptions',
  'Eviction',
  'LiftDrainOptions',
  'RevokeRequest',
  // Checking an agent, a token and a prefix.
  'DoctorCheck',
  'DoctorFinding',
  'DoctorOptions',
  'DoctorReport',
  'DoctorSeverity',
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
  // All or nothing across semaphores.
  'AllSlots',
  'AllSlotsEntry',
  'AllSlotsState',
  // The read-write lock.
  'ReadWriteLock',
  'ReadWriteLockOptions',
  'WithReadWriteLockOptions',
  // The operations and the answer of a guard's fencedTxn.
  'KVEntry',
  'TxnOp',
  'TxnResult',
  // The Consul client to pass as `consul`, and its configuration.
  'Consistency',
  'ConsulClient',
  'ConsulClientConfig',
  'ConsulTlsOptions',
]

/** The values of `rx-consul-semaphore/consul`, the low-level Consul client. */
const CONSUL_VALUES = ['isTransient', 'watchPrefix']

/** The names of `rx-consul-semaphore/consul` that are types only. */
const CONSUL_TYPES = [
  // The client createConsulClient returns, and the configuration it resolved.
  'ConsulHttpClient',
  'ResolvedConfig',
  // The options and answers of the client's raw calls.
  'CallOptions',
  'DeleteOptions',
  'KVSnapshot',
  'ListOptions',
  'NetworkHealth',
  'PutOptions',
  'ReadOptions',
  'SessionCreateOptions',
  'SessionInfo',
  'WatchEvent',
  'WatchOptions',
  // Its typed failures.
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
 * The client's own surface: a root signature may name these (a contender's `consul` option, what
 * createConsulClient returns) while the types of their members (raw calls, their options, answers
 * and failures) are the low-level entry's to name.
 */
const CLIENT_SURFACE = ['ConsulClient', 'ConsulHttpClient']

/**
 * Types the public signatures use without an entry naming them, on purpose: the fields every
 * ConsulError member shares (each member is exported and shows them).
 */
const UNNAMED_ON_PURPOSE = ['ErrorBase']

const sorted = (names: Iterable<string>): string[] => [...names].sort()

/** Where the list and the entry differ, worded for the one who changed either. */
function difference(
  pinned: readonly string[],
  actual: readonly string[],
  entry = 'the root entry',
): string {
  const added = actual.filter((n) => !pinned.includes(n))
  const removed = pinned.filter((n) => !actual.includes(n))
  return (
    `${entry} now ${added.length > 0 ? `also exports ${added.join(', ')}` : ''}` +
    `${added.length > 0 && removed.length > 0 ? ' and ' : ''}` +
    `${removed.length > 0 ? `no longer exports ${removed.join(', ')}` : ''}: if that is meant, ` +
    'change the list in test/unit/public-surface.test.ts and say so in CHANGELOG.md'
  )
}

describe('the public surface of rx-consul-semaphore', () => {
  let checker: ts.TypeChecker
  let rootExports: ts.Symbol[]
  let consulExports: ts.Symbol[]
  let experimentalExports: ts.Symbol[]
  const aliased = (s: ts.Symbol): ts.Symbol =>
    s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s

  before(() => {
    const config = ts.getParsedCommandLineOfConfigFile(
      resolve(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )
    assert.ok(config, 'tsconfig.json could not be read')
    const entries = ['src/index.ts', 'src/consul/index.ts', 'src/experimental.ts'].map((e) =>
      resolve(root, e),
    )
    const program = ts.createProgram(entries, config.options)
    checker = program.getTypeChecker()
    ;[rootExports, consulExports, experimentalExports] = entries.map((entry) => {
      const source = program.getSourceFile(entry)
      const module = source && checker.getSymbolAtLocation(source)
      assert.ok(module, `${entry} is not a module`)
      return checker.getExportsOfModule(module)
    }) as [ts.Symbol[], ts.Symbol[], ts.Symbol[]]
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

  it('has rx-consul-semaphore/consul export exactly its pinned names, values and types', () => {
    const entry = 'rx-consul-semaphore/consul'
    const values = sorted(Object.keys(consulEntry))
    assert.deepEqual(values, sorted(CONSUL_VALUES), difference(CONSUL_VALUES, values, entry))
    const actual = sorted(consulExports.map((s) => s.name))
    const pinned = sorted([...CONSUL_VALUES, ...CONSUL_TYPES])
    assert.deepEqual(actual, pinned, difference(pinned, actual, entry))
  })

  /**
   * The types of our own that the declarations of `from` use (bodies, initialisers, @internal and
   * private members left out) which no export in `named` is: a user could not write them down.
   * The walk does not go into the members of a symbol in `stopAt`.
   */
  function unnamedTypes(
    from: Iterable<ts.Symbol>,
    named: ReadonlySet<ts.Symbol>,
    stopAt: ReadonlySet<ts.Symbol> = new Set(),
  ): { unnamed: string[]; seen: number } {
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
      if (!named.has(symbol)) unnamed.add(symbol.name)
      if (stopAt.has(symbol)) return
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
    for (const symbol of from) visit(symbol)
    return { unnamed: sorted(unnamed), seen: seen.size }
  }

  it('names every type of its own that its public signatures use, but for the client’s own', () => {
    const exported = new Set(rootExports.map(aliased))
    const client = new Set(
      [...rootExports, ...consulExports]
        .filter((s) => CLIENT_SURFACE.includes(s.name))
        .map(aliased),
    )
    assert.equal(client.size, CLIENT_SURFACE.length, 'the client surface is exported')
    const { unnamed, seen } = unnamedTypes(exported, exported, client)
    assert.ok(seen >= exported.size, 'the walk visited the exports')
    // What createConsulClient returns is named by the low-level entry; nothing else is missing.
    assert.deepEqual(
      unnamed,
      ['ConsulHttpClient'],
      'a public signature uses a type that users cannot import from the root entry',
    )
  })

  it('has every type the client and rx-consul-semaphore/consul use named by either entry', () => {
    const named = new Set([...rootExports, ...consulExports].map(aliased))
    const from = new Set(
      [...rootExports.filter((s) => CLIENT_SURFACE.includes(s.name)), ...consulExports].map(
        aliased,
      ),
    )
    const { unnamed, seen } = unnamedTypes(from, named)
    assert.ok(seen >= from.size, 'the walk visited the exports')
    assert.deepEqual(
      unnamed,
      sorted(UNNAMED_ON_PURPOSE),
      'the Consul client uses a type that users can import from neither entry',
    )
  })

  it('shares no name between rx-consul-semaphore, /consul and /experimental', () => {
    const experimental = Object.keys(experimentalEntry)
    assert.ok(experimental.includes('decide'), 'the experimental entry loads')
    const entries = {
      'rx-consul-semaphore': rootExports,
      'rx-consul-semaphore/consul': consulExports,
      'rx-consul-semaphore/experimental': experimentalExports,
    }
    const shared = Object.entries(entries).flatMap(([entry, exports], i) =>
      Object.entries(entries)
        .slice(i + 1)
        .flatMap(([other, others]) =>
          exports
            .filter((s) => others.some((o) => o.name === s.name))
            .map((s) => `${s.name} (${entry} and ${other})`),
        ),
    )
    assert.deepEqual(shared, [])
  })
})
