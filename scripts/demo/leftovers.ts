// What the contenders left in Consul after they all closed, read with plain HTTP (not the
// library): every session should be destroyed, every contender key deleted, and `.lock` should list
// no holder. `.lock` itself stays, as `consul lock` leaves it.

export interface Leftovers {
  readonly sessions: number
  readonly contenderKeys: number
  readonly lockHolders: number
  readonly clean: boolean
}

export async function consulLeftovers(url: string, prefix: string): Promise<Leftovers> {
  const sessions = ((await getJson(`${url}/v1/session/list`)) as { Name: string }[]).filter((s) =>
    s.Name.startsWith('rxsem-demo '),
  ).length
  const entries = ((await getJson(`${url}/v1/kv/${prefix}?recurse`)) ?? []) as {
    Key: string
    Value: string | null
  }[]
  const contenderKeys = entries.filter((e) => e.Key !== `${prefix}/.lock`).length
  const lock = entries.find((e) => e.Key === `${prefix}/.lock`)
  const body = lock?.Value
    ? (JSON.parse(Buffer.from(lock.Value, 'base64').toString()) as unknown)
    : {}
  const holders = (body as { Holders?: Record<string, unknown> }).Holders ?? {}
  const lockHolders = Object.keys(holders).length
  return {
    sessions,
    contenderKeys,
    lockHolders,
    clean: sessions === 0 && contenderKeys === 0 && lockHolders === 0,
  }
}

export function describeLeftovers(l: Leftovers): string {
  return (
    `${l.sessions} demo sessions, ${l.contenderKeys} contender keys, ` +
    `${l.lockHolders} holders in .lock${l.clean ? ' (clean)' : ''}`
  )
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url)
  const text = await res.text()
  if (res.status === 404) return undefined
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${text}`)
  return JSON.parse(text) as unknown
}
