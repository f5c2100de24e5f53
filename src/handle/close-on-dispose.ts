/**
 * Gives a handle with `close()` the `Symbol.asyncDispose` method that calls it, so that
 * `await using sem = semaphore(...)` closes the contender when the scope ends, by a throw too.
 *
 * The symbol is looked up, never created: Node 20.0 to 20.3 do not have it, and a library should
 * not define a global symbol that the runtime (or a later polyfill) defines differently. Without it
 * the handle simply has no such method; `close()` works the same.
 *
 * @example
 * ```ts
 * return closeOnDispose({ state$, holding$, close })
 * ```
 * @param handle - Anything with a `close(): Promise<void>`; the method is added to this object.
 * @param symbols - Where to look the symbol up: the runtime's `Symbol`; a parameter only so that
 *   tests can play a runtime without it.
 * @returns The same object.
 */
export function closeOnDispose<H extends { close(): Promise<void> }>(
  handle: H,
  symbols: { readonly asyncDispose?: symbol } = Symbol,
): H & { [asyncDispose](): Promise<void> } {
  const key = symbols.asyncDispose
  if (key !== undefined) {
    // Not enumerable, as a class method would be: spreading the handle does not copy it.
    Object.defineProperty(handle, key, {
      value: () => handle.close(),
      writable: true,
      configurable: true,
    })
  }
  return handle as H & { [asyncDispose](): Promise<void> }
}

/** A key no value has: the dispose method's, where the compiler does not know the symbol. */
declare const _noAsyncDispose: unique symbol
type AsyncDisposeName = Extract<'asyncDispose', keyof SymbolConstructor>

/**
 * `Symbol.asyncDispose` for the declarations only (at run time it is no value: use `Symbol`'s):
 * the key of the handles' `[asyncDispose](): Promise<void>` method, which `await using` calls.
 * Where the compiler's lib does not know `Symbol.asyncDispose` (neither `esnext` nor
 * `esnext.disposable`, nor `@types/node`), the method gets a key of its own that nobody can name,
 * so that the declarations still compile there.
 *
 * @example
 * ```ts
 * import { type asyncDispose } from './close-on-dispose.js'
 * interface Handle {
 *   close(): Promise<void>
 *   [asyncDispose](): Promise<void>
 * }
 * ```
 */
export declare const asyncDispose: [AsyncDisposeName] extends [never]
  ? typeof _noAsyncDispose
  : SymbolConstructor[AsyncDisposeName]
