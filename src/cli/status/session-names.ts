/**
 * Session names for `rxsem status` and `rxsem watch`: one `session.info` per session, best effort
 * (a name is a courtesy to the reader; a token that may not read sessions still gets the status).
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../../consul/client-api.js'
import type { PrefixStatus } from './prefix-status.js'

/** Looks up names of sessions not in `known`, and adds them to it (null: gone). */
export async function learnSessionNames(
  client: Pick<ConsulClient, 'session'>,
  sessions: Iterable<string>,
  known: Map<string, string | null>,
): Promise<void> {
  const missing = [...new Set(sessions)].filter((session) => !known.has(session))
  await Promise.all(
    missing.map(async (session) => {
      const info = await client.session.info(session)()
      // A failed lookup is tried again next time; a session Consul does not know stays nameless.
      if (E.isRight(info)) known.set(session, info.right === null ? null : info.right.name)
    }),
  )
}

/** The status with the names from `known` filled in. */
export function withNames(
  status: PrefixStatus,
  known: ReadonlyMap<string, string | null>,
): PrefixStatus {
  const name = (session: string): string | null => known.get(session) ?? null
  return {
    ...status,
    holders: status.holders.map((h) => ({ ...h, name: name(h.session) })),
    waiting: status.waiting?.map((w) => ({ ...w, name: name(w.session) })) ?? null,
  }
}

/** Every session the status mentions. */
export function sessionsOf(status: PrefixStatus): string[] {
  return [...status.holders.map((h) => h.session), ...(status.waiting ?? []).map((w) => w.session)]
}
