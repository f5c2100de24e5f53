/**
 * The reading of one HTTP/1.1 answer from the bytes of a connection, with no socket in sight: the
 * status line and the headers, then the body framed as RFC 9112 says (a length, chunks, or the
 * rest of the connection), handed on piece by piece as it arrives. The transport's connections
 * (`http-wire.ts`) feed it what they read.
 *
 * ```
 * feed(bytes) ─► head ──1xx──► head again
 *                 │ final
 *                 ▼
 *                body: Content-Length n │ chunked │ until the connection closes ─► end
 * ```
 *
 * Strict where laxness would let a broken or hostile peer confuse the framing: lines end in CRLF,
 * no folded header lines, one Content-Length, `chunked` only last, a head of at most
 * `maxHeadBytes`. Each refusal is an HttpParseError with a code named as Node's own parser names
 * it (`HPE_…`), so that a failure reads the same whichever parser met it.
 */
import type { IncomingHttpHeaders } from 'node:http'

/** Bytes the server sent that are no HTTP/1.1 answer: `code` says which rule they broke. */
export class HttpParseError extends Error {
  override readonly name = 'HttpParseError'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** The status and the headers of the final answer (names in lower case). */
export interface ResponseHead {
  readonly statusCode: number
  readonly headers: IncomingHttpHeaders
  /** Whether the connection can carry another request once the body has ended. */
  readonly keepAlive: boolean
  /** The body's length as the head frames it: 0 for none; undefined when chunked or until close. */
  readonly length: number | undefined
}

/** Where the parser hands what it read. */
export interface ResponseSink {
  head(head: ResponseHead): void
  /** A piece of the body: a view of the fed bytes, valid as long as they are. */
  body(piece: Buffer): void
  end(): void
}

/** Node's own limit of an answer's head (its `--max-http-header-size`). */
export const MAX_HEAD_BYTES = 16 * 1024

/** A chunk's size line is a few hex digits and maybe an extension; longer is no chunked body. */
const MAX_CHUNK_LINE_BYTES = 1024

const CRLF = Buffer.from('\r\n', 'latin1')
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?$/
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** Control characters but the tab: never in a header's value. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/ // eslint-disable-line no-control-regex
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,15})[ \t]*(?:;[^\r\n]*)?$/
const DIGITS = /^\d{1,15}$/

type LineKind = 'head' | 'chunk-size' | 'chunk-end' | 'trailers'

type State =
  | { readonly at: 'head' }
  | { readonly at: 'length'; left: number }
  | { readonly at: 'chunk-size' }
  | { readonly at: 'chunk-data'; left: number }
  | { readonly at: 'chunk-end' }
  | { readonly at: 'trailers' }
  | { readonly at: 'until-close' }
  | { readonly at: 'done' }

/**
 * Reads one answer to a request of `method`. Feed it every byte read from the connection, then
 * `close()` when the connection ends; what it read goes to `sink`. A violation throws
 * HttpParseError, after which the parser is spent (the connection must be dropped).
 *
 * @example
 * const parser = new ResponseParser('GET', { head: (h) => …, body: (b) => …, end: () => … })
 * socket.on('data', (bytes) => parser.feed(bytes))
 */
export class ResponseParser {
  private state: State = { at: 'head' }
  /** Bytes of a line or a head not complete yet. */
  private pending: Buffer | undefined = undefined
  private keepAlive = false
  private failed = false
  /** Bytes received past the answer's end: a peer that sends them cannot keep the connection. */
  extra = false

  constructor(
    private readonly method: string,
    private readonly sink: ResponseSink,
    private readonly maxHeadBytes: number = MAX_HEAD_BYTES,
  ) {}

  /** Whether the whole answer has been read. */
  get done(): boolean {
    return this.state.at === 'done'
  }

  /** Reads `bytes`, the next ones of the connection. */
  feed(bytes: Buffer): void {
    try {
      this.read(bytes)
    } catch (error) {
      throw this.fail(error as Error)
    }
  }

  private read(bytes: Buffer): void {
    let at = 0
    while (at < bytes.length) {
      const state = this.state
      switch (state.at) {
        case 'head':
        case 'chunk-size':
        case 'chunk-end':
        case 'trailers':
          at = this.line(bytes, at, state.at)
          break
        case 'length': {
          const take = Math.min(state.left, bytes.length - at)
          this.sink.body(bytes.subarray(at, at + take))
          at += take
          state.left -= take
          if (state.left === 0) this.finish()
          break
        }
        case 'chunk-data': {
          const take = Math.min(state.left, bytes.length - at)
          this.sink.body(bytes.subarray(at, at + take))
          at += take
          state.left -= take
          if (state.left === 0) this.state = { at: 'chunk-end' }
          break
        }
        case 'until-close':
          this.sink.body(at === 0 ? bytes : bytes.subarray(at))
          at = bytes.length
          break
        case 'done':
          this.extra = true
          return
      }
    }
  }

  /**
   * The connection ended cleanly (not by an error: then the answer is cut wherever it was): the
   * end of a body read until then, else a truncated answer.
   */
  close(): void {
    if (this.state.at === 'done') return
    if (this.state.at === 'until-close') {
      this.finish()
      return
    }
    throw this.fail(hangUp())
  }

  /**
   * Reads the part that ends at a delimiter (a head at CRLFCRLF, a line at CRLF) from `at`,
   * keeping what is not complete for the next bytes. Returns where it stopped in `bytes`.
   */
  private line(bytes: Buffer, at: number, kind: LineKind): number {
    const headLike = kind === 'head' || kind === 'trailers'
    const delimiter = headLike ? HEAD_END : CRLF
    const limit = headLike ? this.maxHeadBytes : MAX_CHUNK_LINE_BYTES
    const kept = this.pending?.length ?? 0
    const joined =
      kept === 0 ? bytes.subarray(at) : Buffer.concat([this.pending!, bytes.subarray(at)])
    // A trailer section may be empty: its end is then the CRLF right at its start.
    const found =
      kind === 'trailers' && joined.length >= 2 && joined[0] === 13 && joined[1] === 10
        ? 0
        : joined.indexOf(delimiter, Math.max(0, kept - delimiter.length + 1))
    if (found < 0) {
      if (kind === 'head') startsAsStatusLine(joined)
      if (kind === 'chunk-end') endsAChunk(joined)
      // All but the delimiter's first bytes, which may be at the end, count against the limit.
      if (joined.length - (delimiter.length - 1) > limit) throw overflow(kind, limit)
      // Copied: the fed bytes may be reused by their owner once feed returns.
      this.pending = Buffer.from(joined)
      return bytes.length
    }
    if (found > limit) throw overflow(kind, limit)
    this.pending = undefined
    const text = joined.toString('latin1', 0, found)
    const used = (kind === 'trailers' && found === 0 ? 2 : found + delimiter.length) - kept
    switch (kind) {
      case 'head':
        this.readHead(text)
        break
      case 'chunk-size':
        this.readChunkSize(text)
        break
      case 'chunk-end':
        endsAChunk(joined)
        this.state = { at: 'chunk-size' }
        break
      case 'trailers':
        // Trailers carry nothing the client uses; they are checked as headers are, and dropped.
        if (text !== '') headersOf(text.split('\r\n'))
        this.finish()
        break
    }
    return at + used
  }

  private readHead(text: string): void {
    const lines = text.split('\r\n')
    const status = STATUS_LINE.exec(lines[0] ?? '')
    if (status === null) {
      throw new HttpParseError(
        'HPE_INVALID_CONSTANT',
        `the answer does not start with an HTTP/1.x status line: ${JSON.stringify((lines[0] ?? '').slice(0, 60))}`,
      )
    }
    const minor = Number(status[1])
    const statusCode = Number(status[2])
    const headers = headersOf(lines.slice(1))
    if (statusCode < 200) {
      // An interim answer (100 Continue, 103 Early Hints): the final one follows.
      if (statusCode === 101) {
        throw new HttpParseError('HPE_UNEXPECTED_UPGRADE', 'the server switched protocols')
      }
      return
    }
    const connection = tokensOf(headers['connection'])
    const persistent =
      minor === 1 ? !connection.includes('close') : connection.includes('keep-alive')
    const noBody = this.method === 'HEAD' || statusCode === 204 || statusCode === 304
    const encodings = tokensOf(headers['transfer-encoding'])
    const length = headers['content-length']
    if (noBody) {
      this.keepAlive = persistent
      this.sink.head({ statusCode, headers, keepAlive: persistent, length: 0 })
      this.finish()
      return
    }
    if (encodings.length > 0) {
      const chunkedAt = encodings.indexOf('chunked')
      if (chunkedAt >= 0 && chunkedAt !== encodings.length - 1) {
        throw new HttpParseError(
          'HPE_INVALID_TRANSFER_ENCODING',
          '`chunked` is not the last transfer coding',
        )
      }
      const chunked = chunkedAt >= 0
      // With both, the length is ignored, and the connection not trusted with another answer.
      this.keepAlive = persistent && chunked && length === undefined
      this.sink.head({ statusCode, headers, keepAlive: this.keepAlive, length: undefined })
      this.state = chunked ? { at: 'chunk-size' } : { at: 'until-close' }
      return
    }
    if (length !== undefined) {
      const values = length.split(',').map((value) => value.trim())
      const first = values[0] ?? ''
      if (!DIGITS.test(first) || values.some((value) => value !== first)) {
        throw new HttpParseError(
          'HPE_INVALID_CONTENT_LENGTH',
          `invalid Content-Length: ${JSON.stringify(length.slice(0, 60))}`,
        )
      }
      this.keepAlive = persistent
      const left = Number(first)
      this.sink.head({ statusCode, headers, keepAlive: persistent, length: left })
      if (left === 0) this.finish()
      else this.state = { at: 'length', left }
      return
    }
    this.keepAlive = false
    this.sink.head({ statusCode, headers, keepAlive: false, length: undefined })
    this.state = { at: 'until-close' }
  }

  private readChunkSize(text: string): void {
    const size = CHUNK_SIZE.exec(text)
    if (size === null) {
      throw new HttpParseError(
        'HPE_INVALID_CHUNK_SIZE',
        `invalid chunk size line: ${JSON.stringify(text.slice(0, 60))}`,
      )
    }
    const left = parseInt(size[1] as string, 16)
    this.state = left === 0 ? { at: 'trailers' } : { at: 'chunk-data', left }
  }

  private finish(): void {
    this.state = { at: 'done' }
    this.sink.end()
  }

  /** Spends the parser on `error`, and returns it to throw. */
  private fail(error: Error): Error {
    this.state = { at: 'done' }
    this.pending = undefined
    this.failed = true
    return error
  }

  /** Whether the connection may carry the next request: the answer read whole, and no more. */
  get reusable(): boolean {
    return this.keepAlive && !this.extra && !this.failed && this.state.at === 'done'
  }
}

const HTTP_SLASH = Buffer.from('HTTP/', 'latin1')

/** Throws at once on bytes that cannot begin a status line (another protocol's banner). */
function startsAsStatusLine(head: Buffer): void {
  const length = Math.min(head.length, HTTP_SLASH.length)
  if (head.compare(HTTP_SLASH, 0, length, 0, length) !== 0) {
    throw new HttpParseError(
      'HPE_INVALID_CONSTANT',
      `the answer does not start with an HTTP/1.x status line: ${JSON.stringify(head.toString('latin1', 0, 60))}`,
    )
  }
}

/** Throws unless `bytes` are CRLF or its beginning: what must follow a chunk's data. */
function endsAChunk(bytes: Buffer): void {
  if ((bytes.length > 0 && bytes[0] !== 13) || (bytes.length > 1 && bytes[1] !== 10)) {
    throw new HttpParseError('HPE_STRICT', 'a chunk does not end in CRLF')
  }
}

/** The connection closed before the answer's end: Node's client calls it so. */
export function hangUp(): Error & { readonly code: string } {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
}

function overflow(kind: LineKind, limit: number): HttpParseError {
  return kind === 'head' || kind === 'trailers'
    ? new HttpParseError(
        'HPE_HEADER_OVERFLOW',
        `the answer's headers are larger than ${limit} bytes`,
      )
    : new HttpParseError(
        'HPE_INVALID_CHUNK_SIZE',
        `a chunk size line is longer than ${limit} bytes`,
      )
}

/** The header lines as Node's client gives them: names in lower case, repeats joined by `, `. */
function headersOf(lines: readonly string[]): IncomingHttpHeaders {
  // No prototype: a header named __proto__ is a header like any other.
  const headers = Object.create(null) as Record<string, string>
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const colon = line.indexOf(':')
    const name = colon > 0 ? line.slice(0, colon) : ''
    // A line that starts with a space or a tab would fold into the previous one (obsolete).
    if (!TOKEN.test(name)) {
      throw new HttpParseError(
        'HPE_INVALID_HEADER_TOKEN',
        `invalid header line: ${JSON.stringify(line.slice(0, 60))}`,
      )
    }
    // Spaces and tabs around the value are no part of it; any other control character is refused.
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')
    if (CONTROL.test(value)) {
      throw new HttpParseError(
        'HPE_INVALID_HEADER_TOKEN',
        `invalid character in the value of header ${name}`,
      )
    }
    const key = name.toLowerCase()
    const known = headers[key]
    headers[key] = known === undefined ? value : `${known}, ${value}`
  }
  return headers
}

/** A comma-separated header's tokens, lower case. */
function tokensOf(value: string | string[] | undefined): string[] {
  if (typeof value !== 'string' || value === '') return []
  return value
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '')
}
