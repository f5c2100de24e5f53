/**
 * The V8 flags of the `rxsem` bin, set before the CLI's bundle is compiled (`bin.ts`), so that the
 * bundle's code cache, which V8 ties to the flags it was made under, fits every later run
 * (`code-cache.ts`); `main.ts` sets them too, for a run of the bundle without the bin's entry.
 */
import { setFlagsFromString } from 'node:v8'

/**
 * A CPU and memory saving for short-lived `rxsem` processes (one `rxsem run` per acquisition, from
 * cron on many hosts): undici parses HTTP with llhttp compiled to WebAssembly, and V8 (11.x, in
 * Node 20) moves its hot functions to the optimizing compiler after a small budget of executed
 * bytes, which a single request already spends. That background compile cost an `rxsem run`
 * about 40 ms of CPU and 35 MB of RSS here (150 ms and 93 MB in all, against 95 ms and 57 MB
 * without it), for a parser that reads a few hundred bytes per answer. A larger budget keeps the
 * baseline (Liftoff) code, which is correct and fast enough for that; a long `rxsem watch` still
 * tiers up once it has parsed enough.
 *
 * Only the bin does this (a library must not change its host's V8 flags), and only on the V8
 * versions known to have the flag: V8 prints an error line for a flag it does not know.
 */
const tieringBudget = 2_000_000_000

/**
 * The flag that raises V8's WebAssembly tier-up budget, on the V8 versions known to have it (11 to
 * 13); undefined elsewhere. The bench starts its control processes with it.
 *
 * @param v8Version - A V8 version (default: this process's).
 * @returns The flag, or undefined.
 */
export function wasmTieringBudgetFlag(v8Version: string = process.versions.v8): string | undefined {
  const v8Major = Number(v8Version.split('.')[0])
  return v8Major >= 11 && v8Major <= 13 ? `--wasm-tiering-budget=${tieringBudget}` : undefined
}

/** Raises V8's WebAssembly tier-up budget on V8 11 to 13; elsewhere it does nothing. */
export function raiseWasmTieringBudget(): void {
  const flag = wasmTieringBudgetFlag()
  if (flag !== undefined) setFlagsFromString(flag)
}
