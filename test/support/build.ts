// The tests that run the build (dist/, which `npm run build` writes and `npm test` builds first)
// check that it is there and newer than every file in src/, so that they never test old code.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

const repoRoot = resolve(import.meta.dirname, '../..')
const checked = new Set<string>()

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : [join(dir, e.name)],
  )
}

/**
 * The absolute path of `file` (a path of the build, e.g. dist/rxsem.cjs), once it is known to
 * exist and to be newer than every file in src/; else throws, saying to run `npm run build`.
 */
export function builtFile(file: string): string {
  const path = resolve(repoRoot, file)
  if (checked.has(path)) return path
  const shown = relative(repoRoot, path)
  if (!existsSync(path)) {
    throw new Error(`${shown} is missing: run \`npm run build\` first (npm test builds first).`)
  }
  const built = statSync(path).mtimeMs
  const newer = sourceFiles(join(repoRoot, 'src')).find((f) => statSync(f).mtimeMs > built)
  if (newer !== undefined) {
    throw new Error(
      `${shown} is older than ${relative(repoRoot, newer)}: run \`npm run build\`, or these tests would run the old code.`,
    )
  }
  checked.add(path)
  return path
}
