/**
 * `doctor`'s findings about the session a contender would make: made with the contenders'
 * options, read back and destroyed (always, once made); the checks it depends on; its
 * lock-delay against its TTL.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { SessionInfo } from '../../consul/client-api.js'
import { durationMs, formatGoDuration } from '../../consul/durations.js'
import type { Transport } from '../../consul/http.js'
import { createSessions } from '../../consul/sessions.js'
import { nodeChecks, rawGet, type AgentSelf } from './agent-answers.js'
import { POLICY_HINT, type Add, type Answered } from './finding.js'

/** Consul's lock-delay when a session is made without one. */
const CONSUL_LOCK_DELAY_MS = 15_000

/** The session options a contender would make its session with. */
export interface ContenderSession {
  readonly ttlMs: number
  readonly ttl: string
  /** Go duration ('500ms'), or undefined for Consul's default. */
  readonly lockDelay: string | undefined
  readonly checks: readonly string[] | undefined
  readonly serviceChecks: readonly { readonly id: string; readonly namespace?: string }[]
}

/**
 * The name of the session `doctor` makes (and destroys before it returns): `rxsem doctor`, and
 * the prefix when one is given, so that an operator who sees it in Consul's UI knows what it is.
 */
export function doctorSessionName(prefix: string | undefined): string {
  return prefix === undefined ? 'rxsem doctor' : `rxsem doctor ${prefix}`
}

/**
 * Makes the session a contender would make, reads it back and destroys it, and reports on it, on
 * its checks and on its lock-delay.
 */
export async function sessionFindings(
  transport: Transport,
  prefix: string | undefined,
  agent: AgentSelf | undefined,
  session: ContenderSession,
  answered: Answered,
  add: Add,
): Promise<void> {
  const sessions = createSessions(transport)
  const checkIds = session.checks ?? ['serfHealth']
  const described =
    `TTL ${session.ttl}, lock-delay ${session.lockDelay === undefined ? `${formatGoDuration(CONSUL_LOCK_DELAY_MS)} (Consul's default)` : formatGoDuration(durationMs(session.lockDelay) ?? 0)}, ` +
    `node checks ${checkIds.length === 0 ? 'none' : checkIds.join(', ')}` +
    (session.serviceChecks.length === 0
      ? ''
      : `, service checks ${session.serviceChecks.map((c) => c.id).join(', ')}`)
  const created = await sessions.create({
    name: doctorSessionName(prefix),
    ttl: session.ttl,
    behavior: 'delete',
    ...(session.lockDelay === undefined ? {} : { lockDelay: session.lockDelay }),
    ...(session.checks === undefined ? {} : { nodeChecks: session.checks }),
    ...(session.serviceChecks.length === 0 ? {} : { serviceChecks: session.serviceChecks }),
  })()
  let info: SessionInfo | null | undefined
  if (E.isLeft(created)) {
    const error = created.left
    if (error._tag === 'PermissionDenied') {
      add(
        'session',
        'problem',
        `the token may not create sessions (${described}): ${error.body || 'Permission denied'}; contenders fail at once with PermissionDenied`,
        `give the token \`session_prefix "" { policy = "write" }\` (or one naming this agent's node); ${POLICY_HINT}`,
      )
    } else if (error._tag === 'ServerError' && /check|critical/i.test(error.body)) {
      add(
        'checks',
        'problem',
        `Consul refused a session with the contenders' checks (${described}): ${error.body}; every contender would be refused the same way`,
        "register the check on this agent and make it pass, or leave it out of the contenders' checks (the checks and serviceChecks options, or rxsem run --node-check, --no-node-checks and --service-check)",
      )
    } else {
      answered(created)
    }
  } else {
    try {
      const read = await sessions.info(created.right)()
      info = E.isRight(read) ? read.right : undefined
      if (E.isLeft(read) && read.left._tag !== 'PermissionDenied') answered(read)
      add(
        'session',
        info === undefined ? 'warning' : 'ok',
        info === undefined
          ? `the token may create a session as a contender would (${described}) but not read it back: \`rxsem status\` cannot name holders`
          : `the token may create, read and destroy a session as a contender would (${described}), on node ${info?.node ?? '?'}`,
        info === undefined ? `give the token session read rights; ${POLICY_HINT}` : '',
      )
    } finally {
      const destroyed = await sessions.destroy(created.right)()
      if (E.isLeft(destroyed)) {
        add(
          'session',
          'warning',
          `the session doctor made (${created.right}) could not be destroyed: ${destroyed.left.message}; it ends by its TTL`,
          `destroy it with PUT /v1/session/destroy/${created.right}, or let its TTL end it`,
        )
      }
    }
    await checkFindings(
      transport,
      info?.node ?? agent?.node,
      checkIds,
      session.serviceChecks.map((c) => c.id),
      add,
    )
  }

  // The lock-delay Consul gave the session, else the one asked for, else Consul's default.
  const lockDelayMs =
    info?.lockDelayMs ??
    (session.lockDelay === undefined ? undefined : durationMs(session.lockDelay)) ??
    CONSUL_LOCK_DELAY_MS
  lockDelayFinding(lockDelayMs, session.ttlMs, add)
}

/**
 * The checks the session depends on: none (only the TTL ends it), or each with its status when
 * the token may read the node's health; Consul accepted them all when it made the session.
 */
async function checkFindings(
  transport: Transport,
  node: string | undefined,
  nodeCheckIds: readonly string[],
  serviceCheckIds: readonly string[],
  add: Add,
): Promise<void> {
  const ids = [...nodeCheckIds, ...serviceCheckIds]
  if (ids.length === 0) {
    add(
      'checks',
      'ok',
      'no node checks: only the TTL ends a session, whatever happens to its host (see "Riding through a rolling upgrade" in docs/operations.md)',
    )
    return
  }
  const accepted = `Consul accepted a session on ${ids.join(', ')}, so ${ids.length === 1 ? 'it is' : 'they are'} registered and not critical`
  if (node === undefined) {
    add('checks', 'ok', accepted)
    return
  }
  const health = await rawGet(transport, `/v1/health/node/${encodeURIComponent(node)}`)
  const checks =
    E.isRight(health) && health.right.status === 200 ? nodeChecks(health.right.json) : undefined
  const seen = ids.map((id) => checks?.find((c) => c.id === id))
  if (checks === undefined || seen.some((c) => c === undefined)) {
    add(
      'checks',
      'ok',
      `${accepted} (the token may not read node ${node}'s checks to show their status)`,
    )
    return
  }
  const states = seen.map((c) => `${c?.id} ${c?.status}`).join(', ')
  const warned = seen.filter((c) => c?.status !== 'passing')
  add(
    'checks',
    warned.length === 0 ? 'ok' : 'warning',
    `checks on ${node}: ${states}`,
    warned.length === 0
      ? ''
      : 'a check that goes critical invalidates every session on it, and its holders lose their slots: find out why it is not passing',
  )
}

function lockDelayFinding(lockDelayMs: number, ttlMs: number, add: Add): void {
  const delay = formatGoDuration(lockDelayMs)
  const ttl = formatGoDuration(ttlMs)
  if (lockDelayMs > ttlMs) {
    add(
      'lock-delay',
      'problem',
      `lock-delay ${delay} is longer than the TTL ${ttl}: when a holder's session ends without a ` +
        'release (its process died, its TTL ran out, a check failed), Consul refuses its lock to ' +
        'everyone for the lock-delay, so a slot freed that way stays unusable for longer than a ' +
        'whole lease, the time the TTL was chosen to bound',
      `give the contenders a lock-delay of at most the TTL (${ttl} or less, 0 turns it off: the lockDelay option, or rxsem run --lock-delay), or a longer TTL`,
    )
    return
  }
  add('lock-delay', 'ok', `lock-delay ${delay}, no longer than the TTL ${ttl}`)
}
