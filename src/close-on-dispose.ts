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
): H & AsyncDisposeWhereTyped {
  const asyncDispose = symbols.asyncDispose
  if (asyncDispose !== undefined) {
    // Not enumerable, as a class method would be: spreading the handle does not copy it.
    Object.defineProperty(handle, asyncDispose, {
      value: () => handle.close(),
      writable: true,
      configurable: true,
    })
  }
  return handle as H & AsyncDisposeWhereTyped
}

/**
 * The `[Symbol.asyncDispose](): Promise<void>` method of a handle, which calls its `close()` so
 * that `await using` closes it when the scope ends (Node 20.4 and later define the symbol).
 *
 * The method is declared only where the compiler knows `Symbol.asyncDispose` (lib `esnext` or
 * `esnext.disposable`, or `@types/node`); elsewhere this type is empty, so that the declarations
 * still compile for a program whose lib has no such symbol.
 *
 * @example
 * ```ts
 * await using sem = semaphore({ prefix: 'service/db/lock', limit: 3 })
 * ```
 */
export type AsyncDisposeWhereTyped = SymbolConstructor extends {
  readonly asyncDispose: infer K extends symbol
}
  ? { readonly [P in K]: () => Promise<void> }
  : Record<never, never>
