import { joinKey } from './join-key.js'

/**
 * Builds a test for "is this key a direct child of the prefix", returning the child's name.
 * The prefix is cleaned once, so each key costs O(length of the key).
 *
 * @example
 * const childOf = directChild('service/db/lock/')
 * childOf('service/db/lock/abc') // 'abc'
 * childOf('service/db/lock/a/b') // undefined
 * @param prefix - The semaphore prefix.
 * @returns A function from a key to its name under the prefix, or `undefined` when the key is not
 * a direct child (deeper, elsewhere, or a `.`/`..` name).
 */
export function directChild(prefix: string): (key: string) => string | undefined {
  const cleaned = joinKey(prefix)
  const parent = cleaned === '.' ? '' : cleaned
  return (key) => {
    const slash = key.lastIndexOf('/')
    const keyParent = slash < 0 ? '' : key.slice(0, slash)
    const name = key.slice(slash + 1)
    if (keyParent !== parent || name === '' || name === '.' || name === '..') return undefined
    return name
  }
}
