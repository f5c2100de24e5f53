/**
 * An answer's body, as its bytes arrived (`http-wire.ts` keeps them as read), made into text only
 * when something reads it.
 */
import { StringDecoder } from 'node:string_decoder'

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
