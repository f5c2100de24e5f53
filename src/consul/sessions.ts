/**
 * Session calls: create, renew, destroy, info (consul-http-semantics §3). Durations are sent as
 * Go strings with a unit; a TTL outside Consul's 10 s..24 h is refused before sending, so the
 * caller gets a clear message instead of Consul's 500 with a TTL in nanoseconds.
 */
import * as E from 'fp-ts/lib/Either.js'
import { pipe } from 'fp-ts/lib/function.js'
import type {
  CallOptions,
  ConsulClient,
  ReadOptions,
  SessionCreateOptions,
  SessionInfo,
} from './client-api.js'
import {
  decodeError,
  decodeJson,
  SessionCreatedJson,
  SessionsJson,
  type SessionJson,
} from './codecs.js'
import { durationMs, formatGoDuration, parseGoDuration } from './durations.js'
import { rejectedBeforeSending, type ConsulError } from '../base/consul-error.js'
import { statusError, unsent, type HttpAnswer, type Transport } from './http.js'
import { booleanAnswer } from './kv.js'

/** Consul's bounds for a session TTL (`session_ttl_min` default and `SessionTTLMax`). */
export const SESSION_TTL_MIN_MS = 10_000
export const SESSION_TTL_MAX_MS = 86_400_000

function toSessionInfo(json: SessionJson, answer: HttpAnswer): E.Either<ConsulError, SessionInfo> {
  const ttlMs = json.TTL === '' ? undefined : parseGoDuration(json.TTL)
  if (json.TTL !== '' && ttlMs === undefined) {
    return E.left(
      decodeError(answer.label, [`[0].TTL: expected Go duration, got ${JSON.stringify(json.TTL)}`]),
    )
  }
  return E.right({
    id: json.ID,
    name: json.Name,
    node: json.Node,
    behavior: json.Behavior,
    ttl: json.TTL,
    ttlMs: ttlMs === 0 ? undefined : ttlMs,
    lockDelayMs: json.LockDelay / 1e6,
    createIndex: json.CreateIndex,
  })
}

/** The first session of an info/renew answer, or null for `[]`. */
function firstSession(answer: HttpAnswer): E.Either<ConsulError, SessionInfo | null> {
  return pipe(
    decodeJson(SessionsJson, answer.body, answer.label),
    E.flatMap((sessions) =>
      sessions[0] === undefined ? E.right(null) : toSessionInfo(sessions[0], answer),
    ),
  )
}

/** The create body, or why the options cannot be sent. */
function createBody(options: SessionCreateOptions): E.Either<string, string> {
  const body: Record<string, unknown> = {}
  if (options.name !== undefined) body['Name'] = options.name
  if (options.node !== undefined) body['Node'] = options.node
  if (options.behavior !== undefined) {
    if (options.behavior !== 'release' && options.behavior !== 'delete') {
      return E.left(
        `behavior must be "release" or "delete", got ${JSON.stringify(options.behavior)}`,
      )
    }
    body['Behavior'] = options.behavior
  }
  if (options.ttl !== undefined) {
    const ms = durationMs(options.ttl)
    if (ms === undefined)
      return E.left(
        `ttl ${JSON.stringify(options.ttl)} is not a duration; use e.g. "15s" or 15000 (ms)`,
      )
    if (ms !== 0 && (ms < SESSION_TTL_MIN_MS || ms > SESSION_TTL_MAX_MS)) {
      return E.left(
        `ttl ${JSON.stringify(options.ttl)} is outside Consul's range 10s..24h (86400s)`,
      )
    }
    if (ms !== 0) body['TTL'] = formatGoDuration(ms)
  }
  if (options.lockDelay !== undefined) {
    const ms = durationMs(options.lockDelay)
    if (ms === undefined)
      return E.left(
        `lockDelay ${JSON.stringify(options.lockDelay)} is not a duration; use e.g. "15s" or 0`,
      )
    // A string with a unit: Consul reads a bare number as nanoseconds (and < 1000 as seconds).
    body['LockDelay'] = formatGoDuration(ms)
  }
  if (options.nodeChecks !== undefined) body['NodeChecks'] = [...options.nodeChecks]
  if (options.serviceChecks !== undefined) {
    body['ServiceChecks'] = options.serviceChecks.map((c) =>
      c.namespace === undefined ? { ID: c.id } : { ID: c.id, Namespace: c.namespace },
    )
  }
  return E.right(JSON.stringify(body))
}

function sessionPath(
  method: 'GET' | 'PUT',
  action: string,
  id: string,
): E.Either<ConsulError, string> {
  return id === ''
    ? E.left(rejectedBeforeSending(`${method} /v1/session/${action}/`, 'the session id is empty'))
    : E.right(`/v1/session/${action}/${encodeURIComponent(id)}`)
}

/** The session part of a ConsulClient. */
export function createSessions(transport: Transport): ConsulClient['session'] {
  return {
    create: (options = {}) =>
      pipe(
        createBody(options),
        E.mapLeft((why) => rejectedBeforeSending('PUT /v1/session/create', why)),
        E.match(unsent, (body) =>
          transport.call(
            {
              method: 'PUT',
              path: '/v1/session/create',
              body,
              contentType: 'application/json',
              signal: options.signal,
            },
            (answer) =>
              answer.status !== 200
                ? E.left(statusError(answer))
                : pipe(
                    decodeJson(SessionCreatedJson, answer.body, answer.label),
                    E.map((created) => created.ID),
                  ),
          ),
        ),
      ),
    renew: (id: string, options: CallOptions = {}) =>
      pipe(
        sessionPath('PUT', 'renew', id),
        E.match(unsent, (path) =>
          transport.call({ method: 'PUT', path, signal: options.signal, urgent: true }, (answer) =>
            // 404: the session is gone (expired or destroyed): data for the caller, not a failure.
            answer.status === 404
              ? E.right(null)
              : answer.status !== 200
                ? E.left(statusError(answer))
                : firstSession(answer),
          ),
        ),
      ),
    destroy: (id: string, options: CallOptions = {}) =>
      pipe(
        sessionPath('PUT', 'destroy', id),
        E.match(unsent, (path) =>
          transport.call({ method: 'PUT', path, signal: options.signal }, booleanAnswer),
        ),
      ),
    info: (id: string, options: ReadOptions = {}) =>
      pipe(
        sessionPath('GET', 'info', id),
        E.match(unsent, (path) =>
          transport.call(
            {
              method: 'GET',
              path,
              signal: options.signal,
              consistency: options.consistency ?? transport.config.consistency,
            },
            (answer) =>
              answer.status !== 200 ? E.left(statusError(answer)) : firstSession(answer),
          ),
        ),
      ),
  }
}
