/**
 * Gives a state object of the library a `toJSON`, so that `JSON.stringify(state)` works although
 * the state carries bigints (the fencing token, a waiter's CreateIndex), which JSON.stringify
 * refuses: each bigint is written as its decimal string, so that no digit of a uint64 is lost. The
 * method is not enumerable, so the state's keys, its spread and `deepStrictEqual` are unchanged,
 * and the TypeScript type keeps its bigints.
 *
 * @example
 * ```ts
 * const state = serializable({ holding: true, fencingToken: 42n })
 * JSON.stringify(state) // '{"holding":true,"fencingToken":"42"}'
 * ```
 * @param state - A state about to be emitted (changed in place).
 * @returns The same object.
 */
export function serializable<S extends object>(state: S): S {
  if (!Object.hasOwn(state, 'toJSON') && Object.isExtensible(state)) {
    Object.defineProperty(state, 'toJSON', { value: stateToJSON, configurable: true })
  }
  return state
}

function stateToJSON(this: object): unknown {
  return withoutBigints(this)
}

/** A copy of `value` for JSON: bigints as decimal strings, arrays and plain objects copied. */
function withoutBigints(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return value.map(withoutBigints)
  if (value === null || typeof value !== 'object') return value
  // Another toJSON (a Date's, a nested state's) says how that object is written.
  if ('toJSON' in value && typeof value.toJSON === 'function' && value.toJSON !== stateToJSON) {
    return value
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withoutBigints(item)]))
}
