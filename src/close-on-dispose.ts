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
): H & { [Symbol.asyncDispose](): Promise<void> } {
  const asyncDispose = symbols.asyncDispose
  if (asyncDispose !== undefined) {
    // Not enumerable, as a class method would be: spreading the handle does not copy it.
    Object.defineProperty(handle, asyncDispose, {
      value: () => handle.close(),
      writable: true,
      configurable: true,
    })
  }
  return handle as H & { [Symbol.asyncDispose](): Promise<void> }
}
