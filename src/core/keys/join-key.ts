/**
 * Joins KV path segments like Go's `path.Join`, so that keys built here match the keys Consul's Go
 * client builds (trap 11 in consul-http-semantics.md): empty segments are skipped, the result is
 * cleaned (`//` collapsed, `.` dropped, `..` resolved, trailing `/` stripped).
 *
 * @example
 * joinKey('service/db/lock/', '.lock') // 'service/db/lock/.lock'
 * joinKey('a//b', 'c') // 'a/b/c'
 * @param segments - The path segments, in order.
 * @returns The cleaned key, or `''` when every segment is empty.
 */
export function joinKey(...segments: readonly string[]): string {
  // Segments that are already clean (the prefixes and names the library joins on every write)
  // join as they are: the same result, without splitting and rejoining.
  let clean = ''
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as string
    if (segment === '') continue
    if (NEEDS_CLEANING.test(segment)) return cleanJoin(segments)
    clean = clean === '' ? segment : `${clean}/${segment}`
  }
  return clean
}

/** A segment that cleaning would change: a leading or trailing `/`, `//`, a `.` or `..` part. */
const NEEDS_CLEANING = /^\/|\/$|\/\/|(?:^|\/)\.\.?(?:\/|$)/

function cleanJoin(segments: readonly string[]): string {
  const joined = segments.filter((segment) => segment !== '').join('/')
  if (joined === '') return ''
  const rooted = joined.startsWith('/')
  const kept: string[] = []
  for (const part of joined.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      const last = kept[kept.length - 1]
      if (last !== undefined && last !== '..') kept.pop()
      else if (!rooted) kept.push('..')
      continue
    }
    kept.push(part)
  }
  const cleaned = (rooted ? '/' : '') + kept.join('/')
  return cleaned === '' ? '.' : cleaned
}
