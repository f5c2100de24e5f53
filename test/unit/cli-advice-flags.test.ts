// Every `rxsem <command> ... --flag` that the docs or the sources (doctor's findings, the error
// messages, the help texts) tell a user to type names a flag that command's own parser knows:
// advice that a command then refuses ("unknown flag --lock-delay") cannot ship.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { commandFlags } from '../../src/cli/args/command-flags.js'

const root = resolve(import.meta.dirname, '../..')

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return filesUnder(path, suffix)
    return name.endsWith(suffix) ? [path] : []
  })
}

interface Mention {
  readonly where: string
  readonly command: string
  readonly flag: string
  readonly text: string
}

/**
 * Each `rxsem <command>` in `text` with the flags that follow it in the same clause: up to the end
 * of the line, a closing backtick, quote or bracket, a semicolon, or the ` -- ` after which a
 * `run`'s flags belong to its child command.
 */
export function mentions(text: string, where: string): Mention[] {
  const found: Mention[] = []
  const commands = Object.keys(commandFlags()).join('|')
  const start = new RegExp(`\\brxsem (${commands})\\b`, 'g')
  for (const match of text.matchAll(start)) {
    const command = match[1] as string
    const rest = text.slice((match.index ?? 0) + match[0].length)
    const clause = rest.split(/\n|`|"|'|\)|;| -- |\s--$|\s--\s/)[0] ?? ''
    for (const flag of clause.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)) {
      found.push({ where, command, flag: flag[1] as string, text: `rxsem ${command}${clause}` })
    }
  }
  return found
}

const sources = [
  join(root, 'README.md'),
  ...filesUnder(join(root, 'docs'), '.md'),
  ...filesUnder(join(root, 'src'), '.ts'),
]

describe('the flags the docs and the messages recommend', () => {
  const all = sources.flatMap((file) => mentions(readFileSync(file, 'utf8'), relative(root, file)))

  it('finds the advice it checks (doctor on the lock-delay, the docs on evict and run)', () => {
    const seen = (where: string, command: string, flag: string): boolean =>
      all.some((m) => m.where === where && m.command === command && m.flag === flag)
    assert.ok(seen('src/operator/doctor/session-findings.ts', 'run', 'lock-delay'))
    assert.ok(seen('src/operator/doctor/session-findings.ts', 'run', 'node-check'))
    assert.ok(seen('docs/cli.md', 'evict', 'session'))
    assert.ok(seen('README.md', 'run', 'prefix'))
    assert.ok(all.length > 100, `${all.length} mentions`)
  })

  it('each is a flag of the command named', () => {
    const flags = commandFlags()
    const unknown = all.filter((m) => !Object.hasOwn(flags[m.command] ?? {}, m.flag))
    assert.deepEqual(
      unknown.map((m) => `${m.where}: --${m.flag} in "${m.text.trim()}"`),
      [],
      'flags that the command named does not take',
    )
  })

  it('stops at the child command of rxsem run, whose flags are its own', () => {
    const found = mentions('rxsem run --prefix p --limit 2 -- ./migrate.sh --batch 100', 'x')
    assert.deepEqual(
      found.map((m) => m.flag),
      ['prefix', 'limit'],
    )
  })

  it('would catch a flag a command does not take', () => {
    const flags = commandFlags()
    const [wrong] = mentions('run `rxsem run --lock-dlay 0` to shorten it', 'x')
    assert.ok(wrong !== undefined)
    assert.equal(Object.hasOwn(flags['run'] ?? {}, wrong.flag), false)
  })
})
