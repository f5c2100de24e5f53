/**
 * The `rxsem` bin's code cache: V8's compiled code of the CLI's bundle, kept on disk between
 * runs, so that a short-lived `rxsem run` neither compiles the bundle at start nor the functions
 * of its acquire and release paths when it first calls them (docs/cli.md, "Start-up").
 *
 * ```
 * bin.ts ─► runBundle ─► cache file trusted and present? ─yes─► compile with it ─► run the bundle
 *                                   │ no                                               │
 *                                   └─► compile from source ─► run ─► exit 0 ─► save the cache
 * ```
 *
 * Node's own compile cache (`module.enableCompileCache()`) saves a file's code as compiled at
 * load, before any function of it ran: for a bundle, whose functions V8 compiles when first
 * called, that is the top level only. This cache is made when the process exits, from everything
 * the run compiled. Nothing about it may fail the command: whatever goes wrong, the bundle is
 * loaded as a plain `require` would, or its cache is not saved.
 */
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
  type Stats,
} from 'node:fs'
import { Module, createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Script } from 'node:vm'

/** What decides where the cache is and whether there is one: the environment, the arguments. */
export interface CacheContext {
  readonly env: NodeJS.ProcessEnv
  /** process.argv: the command is its third. */
  readonly argv: readonly string[]
  /** The V8 flags of the process: process.execArgv. */
  readonly execArgv: readonly string[]
  /** The user's id (process.getuid()), or undefined where there is none. */
  readonly uid: number | undefined
}

const processContext = (): CacheContext => ({
  env: process.env,
  argv: process.argv,
  execArgv: process.execArgv,
  uid: process.getuid?.(),
})

/**
 * The folder of the bin's caches: `rxsem-<uid>` in Node's compile cache folder, the one
 * `module.enableCompileCache()` uses (`NODE_COMPILE_CACHE`, else `node-compile-cache` in the
 * temporary folder); undefined when the cache is turned off (`NODE_DISABLE_COMPILE_CACHE`, Node's
 * own switch) or there is no user id to keep it apart from other users'.
 */
export function cacheDir(context: Pick<CacheContext, 'env' | 'uid'>): string | undefined {
  const { env, uid } = context
  if ((env['NODE_DISABLE_COMPILE_CACHE'] ?? '') !== '' || uid === undefined) return undefined
  const nodeDir = env['NODE_COMPILE_CACHE'] ?? ''
  return join(nodeDir !== '' ? nodeDir : join(tmpdir(), 'node-compile-cache'), `rxsem-${uid}`)
}

/**
 * The cache file of `bundleId` (the build's hash of the bundle) for this run, or undefined when
 * this run keeps none. One file per build, bundle file (size and time: an edited bundle), Node
 * version, command (with `--leader` or not, `--help` or not) and V8 flags: V8 refuses a cache made
 * under other flags, and a run of `watch` compiles other functions than one of `run`, a run for
 * `--help` far fewer. A cache holds what the run that made it compiled, and is kept while V8
 * takes it; an argument that cannot be a command (a flag, a path) has none.
 */
export function cacheFile(
  context: CacheContext,
  bundleId: string,
  bundle: Pick<Stats, 'size' | 'mtimeMs'>,
): string | undefined {
  const dir = cacheDir(context)
  const [command = '', ...rest] = context.argv.slice(2)
  // The flags of rxsem, not those of the command `rxsem run` runs (after `--`).
  const end = rest.indexOf('--')
  const args = end < 0 ? rest : rest.slice(0, end)
  if (dir === undefined || !/^[a-z][a-z-]{0,15}$/.test(command)) return undefined
  const help = args.some((arg) => arg === '--help' || arg === '-h') ? '+help' : ''
  const leader = args.some((arg) => /^--leader(=|$)/.test(arg)) ? '+leader' : ''
  const flags = fnv1a([...context.execArgv, context.env['NODE_OPTIONS'] ?? ''].join('\n'))
  const kind = command + leader + help
  const file = [bundleId, bundle.size, Math.trunc(bundle.mtimeMs), kind, flags].join('-')
  return join(dir, `${file}-${process.version}-${process.arch}.v8cache`)
}

/** A 32-bit FNV-1a hash of `text`'s UTF-16 code units, in hex: a short name for the flags. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0
  }
  return hash.toString(16).padStart(8, '0')
}

/**
 * Whether the cache may trust what is at `stats`: the user's own, of the kind expected (no
 * symbolic link), and writable by no one else, so that no other user can have put code there.
 */
export function trusted(stats: Stats, uid: number, kind: 'dir' | 'file'): boolean {
  const isKind = kind === 'dir' ? stats.isDirectory() : stats.isFile()
  return isKind && !stats.isSymbolicLink() && stats.uid === uid && (stats.mode & 0o022) === 0
}

/** The cache in `file`, when it is there and trusted; else undefined. Never throws. */
function readCache(file: string, uid: number): Buffer | undefined {
  try {
    if (!trusted(lstatSync(dirname(file)), uid, 'dir')) return undefined
    const fd = openSync(file, 'r')
    try {
      return trusted(fstatSync(fd), uid, 'file') ? readFileSync(fd) : undefined
    } finally {
      closeSync(fd)
    }
  } catch {
    return undefined
  }
}

/**
 * How old a file of the cache folder may be when a run saves a cache: older ones (the caches of
 * builds and Node versions no longer run, a temporary file a killed run left) are removed then. A
 * cache still in use is made again by its next run.
 */
export const CACHE_MAX_AGE_MS = 30 * 24 * 3600_000

/**
 * Writes `data` to `file` whole or not at all (a temporary file renamed over it: a run that reads
 * meanwhile sees the old file or the new one), in a folder only the user can write, and removes
 * the folder's files older than CACHE_MAX_AGE_MS. Never throws.
 */
function writeCache(file: string, uid: number, data: () => Buffer): void {
  const dir = dirname(file)
  const temporary = `${file}.${process.pid}.tmp`
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    if (!trusted(lstatSync(dir), uid, 'dir')) return
    writeFileSync(temporary, data(), { mode: 0o600, flag: 'wx' })
    renameSync(temporary, file)
  } catch {
    rmSync(temporary, { force: true })
    return
  }
  const oldest = Date.now() - CACHE_MAX_AGE_MS
  for (const name of readdirSafe(dir)) {
    try {
      const path = join(dir, name)
      if (lstatSync(path).mtimeMs < oldest) rmSync(path, { force: true })
    } catch {
      // Gone already, or not ours to remove: left as it is.
    }
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => /\.(v8cache|tmp)$/.test(name))
  } catch {
    return []
  }
}

/**
 * How `runBundle` ran the bundle: compiled with its cache, compiled without one (it saves one at
 * exit where it may), or required (no cache for this run).
 */
export type BundleRun = 'cached' | 'compiled' | 'required'

/**
 * Runs the CommonJS bundle `bundle` as `require(bundle)` would, with the code cache of this run
 * when there is one, and saves one when there was none (or V8 refused it) and the process exits
 * with status 0. `bundleId` is the build's hash of the bundle (undefined: no cache).
 *
 * @example
 * runBundle(join(__dirname, 'rxsem-cli.cjs'), RXSEM_BUNDLE_ID)
 */
export function runBundle(
  bundle: string,
  bundleId: string | undefined,
  context: CacheContext = processContext(),
): BundleRun {
  const require = createRequire(bundle)
  const compiled = bundleId === undefined ? undefined : compile(bundle, bundleId, context)
  if (compiled === undefined) {
    require(bundle)
    return 'required'
  }
  const { script, file, uid, cached } = compiled
  const usable = cached !== undefined && !script.cachedDataRejected
  if (!usable) {
    process.once('exit', (code) => {
      if (code === 0) writeCache(file, uid, () => script.createCachedData())
    })
  }
  const module = new Module(bundle)
  module.filename = bundle
  const run = script.runInThisContext() as (...args: unknown[]) => void
  run.call(module.exports, module.exports, require, module, bundle, dirname(bundle))
  module.loaded = true
  return usable ? 'cached' : 'compiled'
}

/** The bundle compiled, with its cache when it has one; undefined when anything failed. */
function compile(
  bundle: string,
  bundleId: string,
  context: CacheContext,
):
  | { readonly script: Script; readonly file: string; readonly uid: number; cached?: Buffer }
  | undefined {
  try {
    // The file's size and time name its cache: a run that keeps none (`--help`) reads no more.
    const fd = openSync(bundle, 'r')
    let source: string
    let file: string | undefined
    try {
      file = cacheFile(context, bundleId, fstatSync(fd))
      if (file === undefined) return undefined
      source = readFileSync(fd, 'utf8')
    } finally {
      closeSync(fd)
    }
    const uid = context.uid
    if (uid === undefined) return undefined
    const cached = readCache(file, uid)
    // Module.wrap: the function a CommonJS module's code runs in, on the code's first line, so
    // that line numbers in stack traces are the file's.
    const script = new Script(Module.wrap(source), {
      filename: bundle,
      ...(cached === undefined ? {} : { cachedData: cached }),
    })
    return cached === undefined ? { script, file, uid } : { script, file, uid, cached }
  } catch {
    return undefined
  }
}
