// How `rxsem` reads what a `consul lock` user types: `-n N` for the limit, a "did you mean" for a
// mistyped flag, and plain words for a negative or malformed value.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { UsageError } from '../../src/cli/args/parse-flags.js'
import { nearestName } from '../../src/base/nearest-name.js'
import { readPrefixCommand } from '../../src/cli/args/prefix-command.js'
import { planRun, runFlagSpec } from '../../src/cli/run/plan.js'

/** The message of the UsageError `run` throws, or a failure when it does not throw one. */
function usageError(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    assert.ok(error instanceof UsageError, `a UsageError, got ${String(error)}`)
    return error.message
  }
  assert.fail('expected a UsageError')
}

const limitOf = (argv: string[]): number => {
  const plan = planRun(argv)
  assert.ok(!plan.help)
  return plan.limit
}

describe('-n, the limit as consul lock users type it', () => {
  it('rxsem run takes -n 2, -n2 and -n=2 as --limit 2', () => {
    for (const n of [['-n', '2'], ['-n2'], ['-n=2'], ['--limit', '2'], ['--limit=2']]) {
      assert.equal(limitOf([...n, '--prefix', 'p', '--', 'true']), 2, n.join(' '))
    }
  })

  it('rxsem run -n 2 without -- still finds the command', () => {
    const plan = planRun(['-n', '2', '--prefix', 'p', 'sleep', '1'])
    assert.ok(!plan.help)
    assert.deepEqual([plan.limit, plan.command], [2, ['sleep', '1']])
  })

  it('status, watch and set-limit take -n too', () => {
    for (const command of ['status', 'watch', 'set-limit'] as const) {
      const args = readPrefixCommand(['--prefix', 'p', '-n', '3'], command)
      assert.ok(!args.help)
      assert.equal(args.limit, 3, command)
    }
  })
})

describe('an unknown flag', () => {
  it('is answered with the nearest known flag', () => {
    const run = (flag: string) => usageError(() => planRun([flag, '--prefix', 'p', '--', 'true']))
    assert.equal(run('--limt'), 'unknown flag --limt. Did you mean --limit?')
    assert.equal(run('--follow'), 'unknown flag --follow. Did you mean --follow-limit?')
    assert.equal(run('--ride-trough'), 'unknown flag --ride-trough. Did you mean --ride-through?')
    assert.equal(run('--lader'), 'unknown flag --lader. Did you mean --leader?')
    assert.equal(run('--xyzzy'), 'unknown flag --xyzzy.')
    assert.equal(
      usageError(() => readPrefixCommand(['--prefix', 'p', '--jsn'], 'status')),
      'unknown flag --jsn. Did you mean --json?',
    )
  })

  it('written with one dash, as Go flags are, is told to take two', () => {
    assert.equal(
      usageError(() => planRun(['-prefix', 'p', '-n', '1', '--', 'true'])),
      "unknown flag -prefix: rxsem's flags take two dashes, --prefix.",
    )
    assert.equal(
      usageError(() =>
        planRun(['--prefix', 'p', '-n', '1', '-http-addr=127.0.0.1:8500', '--', 'true']),
      ),
      "unknown flag -http-addr: rxsem's flags take two dashes, --http-addr.",
    )
  })

  it('is near enough to suggest only within a third of its length', () => {
    const known = Object.keys(runFlagSpec)
    assert.equal(nearestName('ttk', known), 'ttl')
    assert.equal(nearestName('graec', known), 'grace')
    assert.equal(nearestName('q', known), undefined)
    assert.equal(nearestName('something', known), undefined)
  })
})

describe('a negative or malformed value', () => {
  const run = (...flags: string[]) =>
    usageError(() => planRun(['--prefix', 'p', '-n', '1', ...flags, '--', 'true']))

  it('is said in plain words, given apart or after =', () => {
    const ttl = '--ttl must be a positive duration such as 15s or 1m (10s to 24h); got -5s.'
    assert.equal(run('--ttl', '-5s'), ttl)
    assert.equal(run('--ttl=-5s'), ttl)
    const timeout =
      '--timeout must be a positive duration such as 30s or 5m, or 0 to try once; got -1s.'
    assert.equal(run('--timeout', '-1s'), timeout)
    assert.equal(run('--timeout=-1s'), timeout)
    assert.equal(
      run('--grace', '5'),
      '--grace must be a positive duration such as 5s, or 0; got 5.',
    )
    assert.equal(
      run('--ttl', 'ten seconds'),
      '--ttl must be a positive duration such as 15s or 1m (10s to 24h); got "ten seconds".',
    )
    assert.equal(
      usageError(() => planRun(['--prefix', 'p', '--limit', '-3', '--', 'true'])),
      '--limit must be a whole number of at least 1, such as 3; got -3.',
    )
    for (const message of [run('--ttl', '-5s'), run('--timeout', '-1s')]) {
      assert.doesNotMatch(message, /ambiguous|XYZ|option argument/)
    }
  })

  it('that is another flag says the value is missing', () => {
    assert.equal(
      run('--ttl', '--shell'),
      '--ttl needs a value, but the next argument is the flag --shell.',
    )
    assert.equal(
      run('--ttl'),
      '--ttl needs a value: a positive duration such as 15s or 1m (10s to 24h).',
    )
  })

  it('of a free-text flag that starts with a dash is shown how to give it', () => {
    assert.equal(
      run('--value', '-x'),
      "--value needs a value; to give one that starts with '-', write --value=-x.",
    )
    const plan = planRun(['--prefix', 'p', '-n', '1', '--value=-x', '--', 'true'])
    assert.ok(!plan.help)
    assert.equal(plan.value, '-x')
  })
})

describe("the Consul connection flags, named like consul lock's", () => {
  it('--ca-path, --namespace and --partition reach the client configuration', () => {
    const plan = planRun([
      '--leader',
      '--prefix',
      'p',
      '--ca-path',
      '/etc/consul/ca.d',
      '--namespace',
      'team',
      '--partition',
      'blue',
      '--',
      'true',
    ])
    assert.ok(!plan.help)
    assert.equal(plan.consul.tls?.caPath, '/etc/consul/ca.d')
    assert.equal(plan.consul.namespace, 'team')
    assert.equal(plan.consul.partition, 'blue')
  })
})
