/**
 * One request on undici's connection pool and its answer, read whole but never past the client's
 * `maxResponseBytes`. The answer arrives through undici's dispatch API, each chunk of its body
 * handed to this module as it is parsed: no stream per answer (a Readable, its state, its
 * events), which every answer of a busy client would make and drop. A body is always read (an
 * unread one keeps its connection busy); past the cap the request is aborted, which makes undici
 * drop the connection rather than read the rest into nowhere.
 */
import { StringDecoder } from 'node:string_decoder'
import type { IncomingHttpHeaders } from 'node:http'
import type { Dispatcher } from 'undici'

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

/** The reason a request is aborted with once its answer passed the cap (never seen outside). */
class PastTheCap extends Error {}

/** The reason a request is aborted with once its admission stopped it. */
class Stopped extends Error {
  override readonly name = 'Stopped'
  constructor() {
    super('the request was stopped (its timeout, its caller or the client closing)')
  }
}

/** How the caller stops a request: it calls the listener once the request must stop. */
export type OnStop = (listener: () => void) => void

/**
 * Sends `options` on `pool` and reads the answer, up to `limit` bytes of body: declared larger in
 * its `Content-Length`, or found so while reading, it is `too-large` and the request is aborted.
 * `onStop` stops the request (before it has a connection: as soon as it gets one; stopped at once,
 * it is not sent); the promise then rejects, as it rejects with undici's error for a failed
 * request.
 *
 * @example
 * const received = await readAnswer(pool, { origin, method: 'GET', path: '/v1/status/leader' },
 *   admission.onStop, 32 * 2 ** 20)
 */
export function readAnswer(
  pool: Pick<Dispatcher, 'dispatch'>,
  options: Dispatcher.DispatchOptions,
  onStop: OnStop,
  limit: number,
): Promise<Received> {
  return new Promise((resolve, reject) => {
    let stopped = false
    let controller: Dispatcher.DispatchController | undefined
    onStop(() => {
      stopped = true
      controller?.abort(new Stopped())
    })
    if (stopped) {
      reject(new Stopped())
      return
    }
    let statusCode = 0
    let headers: IncomingHttpHeaders = {}
    let receivedAt = 0
    const chunks: Buffer[] = []
    let size = 0
    let pastTheCap = false
    const stop = (at: Dispatcher.DispatchController): void => {
      pastTheCap = true
      at.abort(new PastTheCap())
    }
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (at) => {
        controller = at
        if (stopped) at.abort(new Stopped())
      },
      onResponseStart: (at, status, answerHeaders) => {
        // An informational answer (1xx) comes before the answer itself.
        if (status < 200) return
        statusCode = status
        headers = answerHeaders
        receivedAt = Date.now()
        if (Number(answerHeaders['content-length'] ?? Number.NaN) > limit) stop(at)
      },
      onResponseData: (at, chunk) => {
        size += chunk.length
        if (size > limit) stop(at)
        else chunks.push(chunk)
      },
      onResponseEnd: () => resolve({ type: 'answer', statusCode, headers, chunks, receivedAt }),
      onResponseError: (_at, error) => {
        if (pastTheCap) resolve({ type: 'too-large', statusCode })
        else reject(error)
      },
    }
    pool.dispatch(options, handler)
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
