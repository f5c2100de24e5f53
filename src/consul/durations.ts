/**
 * Go duration strings, the unit Consul speaks for TTL, LockDelay and `wait`. Consul rejects a bare
 * number (other than 0) as a duration, so the client always sends a unit.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

/** Milliseconds of a Go duration string such as `15s`, `1m30s`, `1500ms`, `0`; else undefined. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0
  // µ (U+00B5) and μ (U+03BC) as escapes: esbuild copies a regular expression as it is, and one
  // character above U+00FF in the bundled bin makes Node read all of it as a two-byte string.
  const whole = /^(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h)/
  let rest = text
  let total = 0
  if (rest === '') return undefined
  while (rest !== '') {
    const match = whole.exec(rest)
    if (!match) return undefined
    const [, number = '', unit = ''] = /^([\d.]+)(.+)$/.exec(match[0]) ?? []
    const factor = UNIT_MS[unit]
    if (factor === undefined) return undefined
    total += Number(number) * factor
    rest = rest.slice(match[0].length)
  }
  return total
}

/** A duration given as a Go string or as milliseconds, in milliseconds; undefined if invalid. */
export function durationMs(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  return parseGoDuration(value)
}

/** Milliseconds as a Go duration string: whole seconds as `15s`, anything else as `1500ms`. */
export function formatGoDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}
