/**
 * One request on the transport's keep-alive agent (Node's own HTTP client) and its answer, read
 * whole but never past the client's `maxResponseBytes`. A body is always read (an unread one keeps
 * its connection busy); past the cap the request is destroyed, which drops the connection rather
 * than read the rest into nowhere.
 */
import { StringDecoder } from 'node:string_decoder'
import type {
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  RequestOptions,
} from 'node:http'

/** What a request got back: its answer, or only the status of one larger than the cap. */
export type Received =
  | {
      readonly type: 'answer'
      readonly statusCode: number
      readonly headers: IncomingHttpHeaders
      /** The body as the chunks it arrived in. */
      readonly chunks: readonly Buffer[]
      /** Wall-clock ms the headers arrived. */
      readonly receivedAt: number
    }
  | { readonly type: 'too-large'; readonly statusCode: number }

/** The reason a request is destroyed with once its admission stopped it. */
class Stopped extends Error {
  override readonly name = 'Stopped'
  constructor() {
    super('the request was stopped (its timeout, its caller or the client closing)')
  }
}

/** How the caller stops a request: it calls the listener once the request must stop. */
export type OnStop = (listener: () => void) => void

/** What sends a request: `http.request` or `https.request`, as Node has them. */
export type SendRequest = (
  options: RequestOptions,
  onResponse: (response: IncomingMessage) => void,
) => ClientRequest

/** One request, but its body: where it goes (its agent among them) and what it says. */
export interface AnswerRequest extends RequestOptions {
  readonly method: string
  readonly path: string
  readonly headers: OutgoingHttpHeaders
}

/**
 * Sends `request` with `body` (null: none) by `send` and reads the answer, up to `limit` bytes
 * of body: declared larger in its `Content-Length`, or found so while reading, it is `too-large`
 * and the request is destroyed. `onStop` stops the request (stopped at once, it is not sent); the
 * promise then rejects, as it rejects with Node's error for a failed request. An informational
 * answer (1xx) is not the answer: Node's client hands only the final one.
 *
 * @example
 * const received = await readAnswer(http.request, { agent, host, port, method: 'GET',
 *   path: '/v1/status/leader', headers: {} }, null, admission.onStop, 32 * 2 ** 20)
 */
export function readAnswer(
  send: SendRequest,
  request: AnswerRequest,
  body: string | Uint8Array | null,
  onStop: OnStop,
  limit: number,
): Promise<Received> {
  return new Promise((resolve, reject) => {
    let stopped = false
    let whenStopped = (): void => {
      stopped = true
    }
    onStop(() => whenStopped())
    if (stopped) {
      reject(new Stopped())
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    const onResponse = (response: IncomingMessage): void => {
      const statusCode = response.statusCode ?? 0
      const receivedAt = Date.now()
      const tooLarge = (): void => {
        resolve({ type: 'too-large', statusCode })
        sent.destroy()
      }
      if (Number(response.headers['content-length'] ?? Number.NaN) > limit) {
        tooLarge()
        return
      }
      response.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) tooLarge()
        else chunks.push(chunk)
      })
      response.on('end', () =>
        resolve({ type: 'answer', statusCode, headers: response.headers, chunks, receivedAt }),
      )
      // The connection closed before the body's end: the request's own error says how.
      response.on('error', reject)
    }
    const sent = send(request, onResponse)
    whenStopped = () => {
      const stop = new Stopped()
      sent.destroy(stop)
      reject(stop)
    }
    sent.on('error', reject)
    if (body === null) sent.end()
    else sent.end(body)
  })
}

/**
 * A body's chunks as UTF-8 text. Chunk by chunk, never one buffer of the whole: a listing of a
 * large prefix is hundreds of KB, and a buffer that size is mapped afresh and faulted in page by
 * page each time (a character cut between two chunks is put together again).
 */
export function bodyText(chunks: readonly Uint8Array[]): string {
  if (chunks.length === 0) return ''
  if (chunks.length === 1) {
    const only = chunks[0] as Uint8Array
    return Buffer.from(only.buffer, only.byteOffset, only.length).toString('utf8')
  }
  const decoder = new StringDecoder('utf8')
  let text = ''
  for (const chunk of chunks) text += decoder.write(chunk)
  return text + decoder.end()
}
