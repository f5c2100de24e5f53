// Independent eyes on Consul for integration tests: plain HTTP reads and writes, not the library's
// own client, so a test of the library does not trust the library to tell it what Consul holds.

import type { FaultProxy } from './fault-proxy.js'

/**
 * Consul's Go client flags as the exact decimal text a raw `?flags=` and the JSON carry, written
 * out here rather than taken from the library, so tests check the library against Consul's values.
 */
export const SEMAPHORE_FLAGS = '16210313421097356768'
export const LOCK_FLAGS = '3304740253564472344'

export interface RawEntry {
  readonly Key: string
  readonly Session?: string
  /** Exact decimal text of the uint64 flags. */
  readonly Flags: string
  readonly Value: string | null
  readonly ModifyIndex: number
  readonly CreateIndex: number
}

/** Entries under `prefix` (recursively), [] when none. Flags kept exact as text. */
export async function listPrefix(url: string, prefix: string): Promise<RawEntry[]> {
  const res = await fetch(`${url}/v1/kv/${prefix}?recurse`)
  if (res.status === 404) {
    await res.body?.cancel()
    return []
  }
  const text = await res.text()
  if (!res.ok) throw new Error(`list ${prefix}: ${res.status} ${text}`)
  return JSON.parse(text.replace(/"Flags":\s*(\d+)/g, '"Flags":"$1"')) as RawEntry[]
}

/** The decoded `.lock` body under `prefix`, or undefined when it does not exist. */
export async function readLock(
  url: string,
  prefix: string,
): Promise<{ entry: RawEntry; body: unknown } | undefined> {
  const entry = (await listPrefix(url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
  return entry && { entry, body: lockBody(entry) }
}

/** The decoded JSON body of a `.lock` entry, or undefined when its value is empty. */
export function lockBody(entry: Pick<RawEntry, 'Value'>): unknown {
  const text = entry.Value === null ? '' : Buffer.from(entry.Value, 'base64').toString('utf8')
  return text === '' ? undefined : (JSON.parse(text) as unknown)
}

/** Holders listed in a `.lock` body of any of the three shapes. */
export function holdersOf(body: unknown): string[] {
  const record = body as { Holders?: unknown; holders?: unknown } | undefined
  const holders = record?.Holders ?? record?.holders
  if (Array.isArray(holders)) return holders as string[]
  if (holders && typeof holders === 'object') return Object.keys(holders)
  return []
}

/** Writes a raw value with flags, as an operator or another client would. */
export async function putRaw(
  url: string,
  key: string,
  value: string,
  query = '',
): Promise<boolean> {
  const res = await fetch(`${url}/v1/kv/${key}${query ? `?${query}` : ''}`, {
    method: 'PUT',
    body: value,
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`put ${key}: ${res.status} ${text}`)
  return text.trim() === 'true'
}

export async function deleteTree(url: string, prefix: string): Promise<void> {
  const res = await fetch(`${url}/v1/kv/${prefix}?recurse`, { method: 'DELETE' })
  await res.text()
}

/**
 * Deletes every key whose name starts with `prefix` (Consul's `?recurse` matches the text, so a
 * sibling `${prefix}-data/...` goes too) and destroys the sessions that held any of them: what a
 * test leaves behind on a shared agent when it ends early. Throws when the agent refuses a call.
 */
export async function clearPrefix(url: string, prefix: string): Promise<void> {
  const call = async (method: string, path: string): Promise<string> => {
    const res = await fetch(`${url}${path}`, { method })
    const text = await res.text()
    if (!res.ok && res.status !== 404)
      throw new Error(
        `Cleaning up ${prefix} failed: ${method} ${path} answered ${res.status} ${text}. Check that the agent at ${url} still runs when the test's clean-up does.`,
      )
    return text
  }
  const listed = await call('GET', `/v1/kv/${prefix}?recurse`)
  const entries = listed === '' ? [] : (JSON.parse(listed) as { Session?: string }[])
  const sessions = new Set(entries.flatMap((e) => (e.Session === undefined ? [] : [e.Session])))
  await call('DELETE', `/v1/kv/${prefix}?recurse`)
  for (const id of sessions) await call('PUT', `/v1/session/destroy/${id}`)
}

export interface RawSession {
  readonly ID: string
  readonly Name: string
}

/** Sessions whose name starts with `namePrefix`. */
export async function sessionsNamed(url: string, namePrefix: string): Promise<RawSession[]> {
  const res = await fetch(`${url}/v1/session/list`)
  const all = (await res.json()) as RawSession[]
  return all.filter((s) => s.Name.startsWith(namePrefix))
}

/**
 * Waits until no session whose name starts with `namePrefix` is left (a released contender's
 * session may linger on the process's shelf for a moment before it is destroyed). On a timeout,
 * the error shows the sessions still there as Consul lists them (index of creation, TTL).
 */
export async function noSessionsNamed(
  url: string,
  namePrefix: string,
  timeoutMs?: number,
): Promise<true> {
  try {
    return await eventually(
      `no session named ${namePrefix}`,
      async () => ((await sessionsNamed(url, namePrefix)).length === 0 ? true : undefined),
      timeoutMs,
    )
  } catch (error) {
    const left = JSON.stringify(await sessionsNamed(url, namePrefix))
    throw new Error(`${(error as Error).message}; left: ${left}`, { cause: error })
  }
}

export async function createRawSession(url: string, body: object): Promise<string> {
  const res = await fetch(`${url}/v1/session/create`, { method: 'PUT', body: JSON.stringify(body) })
  const text = await res.text()
  if (!res.ok) throw new Error(`session create: ${res.status} ${text}`)
  return (JSON.parse(text) as { ID: string }).ID
}

export async function destroyRawSession(url: string, id: string): Promise<void> {
  const res = await fetch(`${url}/v1/session/destroy/${id}`, { method: 'PUT' })
  await res.text()
}

/**
 * Resolves after `ms` of wall-clock time. For a window in which something must not happen, a
 * pace or a hold time; a test waiting for a state uses `eventually` or the state's Observable.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms))
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

/** The index Consul answers a listing of `prefix` with now (`X-Consul-Index`). */
export async function prefixIndex(url: string, prefix: string): Promise<bigint> {
  const res = await fetch(`${url}/v1/kv/${prefix}?recurse`)
  await res.arrayBuffer()
  const index = res.headers.get('x-consul-index')
  if (index === null) throw new Error(`list ${prefix}: no X-Consul-Index (${res.status})`)
  return BigInt(index)
}

/**
 * Resolves once a client that reaches the agent through `proxy` is parked in a blocking read of
 * `prefix` at `index` or later: it has read the prefix as it stands at `index`, made its decision
 * and gone back to waiting. The state to reach before asserting that a waiter was not admitted.
 */
export function parkedAt(
  proxy: Pick<FaultProxy, 'inFlightRequests'>,
  prefix: string,
  index: bigint,
  timeoutMs = 10_000,
): Promise<true> {
  const paths = new Set([`/v1/kv/${prefix}`, `/v1/kv/${prefix}/`])
  return eventually(
    `a blocking read of ${prefix} at index ${index} or later`,
    () => {
      const parked = proxy.inFlightRequests().some((r) => {
        const at = /(?:^|&)index=(\d+)/.exec(r.query)?.[1]
        return r.method === 'GET' && paths.has(r.path) && at !== undefined && BigInt(at) >= index
      })
      return parked ? true : undefined
    },
    timeoutMs,
  )
}
