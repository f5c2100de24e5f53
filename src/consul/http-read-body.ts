/**
 * Reading an answer's body, never past the client's `maxResponseBytes`: a body is always read
 * (an unread one keeps its connection busy), but reading stops at the cap and the body is
 * destroyed, which makes undici drop the connection rather than read the rest into nowhere.
 */
import type { Dispatcher } from 'undici'

/**
 * The body of `response` as UTF-8, or undefined when it is larger than `limit` bytes: declared
 * so in its `Content-Length` (then nothing is read), or found so while reading. Either way the
 * body is destroyed.
 */
export async function readBody(
  response: Dispatcher.ResponseData,
  limit: number,
): Promise<string | undefined> {
  const declared = Number(response.headers['content-length'] ?? Number.NaN)
  const body = declared > limit ? undefined : await readCapped(response.body, limit)
  if (body === undefined && !response.body.destroyed) response.body.destroy()
  return body
}

/** The body as UTF-8, or undefined once it passed `limit` bytes (then it is destroyed unread). */
async function readCapped(
  body: Dispatcher.ResponseData['body'],
  limit: number,
): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) {
      body.destroy()
      return undefined
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}
