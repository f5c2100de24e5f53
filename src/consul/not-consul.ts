/**
 * Telling a Consul agent from another HTTP server at the configured address. A newcomer's
 * CONSUL_HTTP_ADDR may name a web server, a dashboard or a proxy that does not pass `/v1/`
 * through; what it answers must then say "not a Consul agent" at once, instead of a decode error
 * or a failure retried for ever.
 */
import type { HttpAnswer } from './http-request.js'
import type { NotConsul } from '../base/consul-error.js'

/** Statuses Consul never answers to the paths and methods this client sends (see NotConsul). */
const FOREIGN_STATUSES = new Set([404, 501])

/** Whether `status` (on a path where Consul does not answer 404 as data) rules Consul out. */
export function isForeignStatus(status: number): boolean {
  return FOREIGN_STATUSES.has(status)
}

/** Whether the answer is an HTML page: Consul's `/v1/` API answers JSON or plain text. */
export function isHtmlPage(answer: HttpAnswer): boolean {
  const type = answer.headers['content-type']
  return typeof type === 'string' && /^\s*text\/html/i.test(type)
}

/**
 * The NotConsul error for `answer`, `why` naming the sign that gave it away.
 *
 * @example
 * notConsul(answer, 'it answered 404 to PUT /v1/session/create')
 */
export function notConsul(answer: HttpAnswer, why: string): NotConsul {
  const request = answer.label.replace(/\?.*$/, '')
  return {
    _tag: 'NotConsul',
    status: answer.status,
    body: answer.body.trim().slice(0, 200),
    request,
    message:
      `${request}: ${answer.origin} is not a Consul agent (${why}); set CONSUL_HTTP_ADDR ` +
      '(or the address option) to the HTTP address of a Consul agent, by default http://127.0.0.1:8500',
  }
}
