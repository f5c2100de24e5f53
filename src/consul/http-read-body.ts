/**
 * Reading an answer's body, never past the client's `maxResponseBytes`: a body is always read
 * (an unread one keeps its connection busy), but reading stops at the cap and the body is
 * destroyed, which makes undici drop the connection rather than read the rest into nowhere.
 */
import { finished } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { Dispatcher } from 'undici'

/**
 * The body of `response` as the chunks it arrived in, or undefined when it is larger than `limit`
 * bytes: declared so in its `Content-Length` (then nothing is read), or found so while reading.
 * Either way the body is destroyed.
 */
export async function readBody(
  response: Dispatcher.ResponseData,
  limit: number,
): Promise<readonly Buffer[] | undefined> {
  const declared = Number(response.headers['content-length'] ?? Number.NaN)
  const body = declared > limit ? undefined : await readCapped(response.body, limit)
  if (body === undefined && !response.body.destroyed) response.body.destroy()
  return body
}

/**
 * The chunks of the body, or undefined once it passed `limit` bytes (then it is destroyed unread).
 * Read by its `data` events rather than as an async iterator, which makes promises per chunk: every
 * answer of a busy client passes here.
 */
function readCapped(
  body: Dispatcher.ResponseData['body'],
  limit: number,
): Promise<readonly Buffer[] | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    const take = (chunk: Buffer): void => {
      size += chunk.length
      if (size <= limit) {
        chunks.push(chunk)
        return
      }
      over = true
      body.off('data', take)
      body.destroy()
    }
    body.on('data', take)
    finished(body, (error) => {
      body.off('data', take)
      if (over) resolve(undefined)
      else if (error !== undefined && error !== null) reject(error)
      else resolve(chunks)
    })
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
