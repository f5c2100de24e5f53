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
  const parent = directChildParent(prefix)
  const start = parent === '' ? 0 : parent.length + 1
  return (key) => {
    // The parent's part is compared in place: one string (the name) is made per direct child.
    if (start > 0 && !(key.startsWith(parent) && key.charCodeAt(parent.length) === SLASH)) {
      return undefined
    }
    if (key.indexOf('/', start) >= 0) return undefined
    const name = key.slice(start)
    if (name === '' || name === '.' || name === '..') return undefined
    return name
  }
}

const SLASH = 0x2f

/**
 * The parent of a prefix's direct children as it appears in their keys: the prefix cleaned
 * (`joinKey`), or '' for the root.
 *
 * @example
 * directChildParent('service/db/lock/') // 'service/db/lock'
 * @param prefix - The semaphore prefix.
 * @returns The parent part of a direct child's key, without the slash after it.
 */
export function directChildParent(prefix: string): string {
  const cleaned = joinKey(prefix)
  return cleaned === '.' ? '' : cleaned
}
