/**
 * The version a Consul agent reports, read from its description (`GET /v1/agent/self`) and parsed
 * into numbers: what `doctor` checks against the releases it knows of, and what the client reads
 * to learn how many operations one transaction may hold. Pure.
 */

/** A release as major, minor, patch; suffixes (`+ent`, `-rc1`) are dropped. */
export type Release = readonly [major: number, minor: number, patch: number]

/**
 * `1.8.7`, `v1.14.3+ent` or `1.21.0-rc1` as a Release; undefined for anything else.
 *
 * @example
 * parseRelease('1.14.3+ent') // [1, 14, 3]
 */
export function parseRelease(version: string): Release | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim())
  if (match === null) return undefined
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)]
}

/**
 * Orders two releases: negative when `a` is older, 0 when they are the same, positive when newer.
 *
 * @example
 * compareReleases([1, 13, 9], [1, 14, 0]) < 0 // true
 */
export function compareReleases(a: Release, b: Release): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]
}

/**
 * The agent's version from its description (the JSON of a 200 to `GET /v1/agent/self`, at
 * `Config.Version`), or undefined when the answer has none (no Consul agent answers so).
 *
 * @example
 * agentVersion({ Config: { Version: '1.8.7' } }) // '1.8.7'
 */
export function agentVersion(self: unknown): string | undefined {
  const config = field(self, 'Config')
  const version = field(config, 'Version')
  return typeof version === 'string' && version !== '' ? version : undefined
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined
