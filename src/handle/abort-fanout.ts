/**
 * One `abort` listener per signal, however many waits share it: a shutdown signal, or one
 * `AbortSignal.timeout` for a batch of ten thousand jobs, gets a single listener from the library
 * (so Node never warns about too many listeners), which calls each registered callback once.
 */
interface Fanout {
  readonly callbacks: Set<() => void>
  readonly listener: () => void
}

const fanouts = new WeakMap<AbortSignal, Fanout>()

/**
 * Calls `callback` once when `signal` aborts, unless the returned function was called first.
 *
 * @example
 * ```ts
 * const stop = onAbort(signal, () => reject(abortedError(signal, 'waiting for a slot')))
 * // ... the wait ended another way
 * stop()
 * ```
 * @param signal - The caller's signal (not aborted yet).
 * @param callback - What to do on abort.
 * @returns Unregisters the callback; the signal's one listener goes with the last callback.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let fanout = fanouts.get(signal)
  if (fanout === undefined) {
    const callbacks = new Set<() => void>()
    const listener = (): void => {
      fanouts.delete(signal)
      for (const each of [...callbacks]) each()
      callbacks.clear()
    }
    fanout = { callbacks, listener }
    fanouts.set(signal, fanout)
    signal.addEventListener('abort', listener, { once: true })
  }
  const mine = fanout
  // A wrapper of its own: the same callback registered twice is called twice.
  const entry = (): void => callback()
  mine.callbacks.add(entry)
  return () => {
    if (!mine.callbacks.delete(entry) || mine.callbacks.size > 0) return
    if (fanouts.get(signal) === mine) fanouts.delete(signal)
    signal.removeEventListener('abort', mine.listener)
  }
}
