// The reading of one HTTP/1.1 answer from a connection's bytes, with no socket
// (src/consul/http-response-parser.ts): the head, the body framed by a length, by chunks or by the
// connection's end, whether the connection can carry another request, and each refusal with the
// code Node's own parser gives it. An answer reads the same however its bytes are split up.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  HttpParseError,
  MAX_HEAD_BYTES,
  ResponseParser,
  type ResponseHead,
} from '../../src/consul/http-response-parser.js'

/** What a parser handed its sink so far. */
interface Read {
  readonly heads: ResponseHead[]
  /** The body's pieces, copied as they came (latin1). */
  readonly pieces: string[]
  ends: number
}

/** A parser for an answer to `method`, and what it read. */
function reader(
  method = 'GET',
  maxHeadBytes?: number,
): { readonly parser: ResponseParser; readonly read: Read } {
  const read: Read = { heads: [], pieces: [], ends: 0 }
  const parser = new ResponseParser(
    method,
    {
      head: (head) => read.heads.push(head),
      body: (piece) => read.pieces.push(piece.toString('latin1')),
      end: () => read.ends++,
    },
    maxHeadBytes,
  )
  return { parser, read }
}

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1')

/** Everything a parse came to, comparable between two ways of feeding the same bytes. */
interface Outcome {
  readonly heads: { statusCode: number; headers: Record<string, unknown>; keepAlive: boolean }[]
  readonly body: string
  readonly ends: number
  readonly done: boolean
  readonly reusable: boolean
  readonly extra: boolean
}

function outcome(parser: ResponseParser, read: Read): Outcome {
  return {
    heads: read.heads.map((head) => ({ ...head, headers: { ...head.headers } })),
    body: read.pieces.join(''),
    ends: read.ends,
    done: parser.done,
    reusable: parser.reusable,
    extra: parser.extra,
  }
}

/** Feeds `answer` to a new parser in the pieces `splits` cut it into (offsets, ascending). */
function parse(answer: string, options: { method?: string; splits?: number[] } = {}): Outcome {
  const { parser, read } = reader(options.method)
  let from = 0
  for (const to of [...(options.splits ?? []), answer.length]) {
    parser.feed(bytes(answer.slice(from, to)))
    from = to
  }
  return outcome(parser, read)
}

/** Feeds `answer` one byte at a time. */
function parseByteByByte(answer: string, method?: string): Outcome {
  const { parser, read } = reader(method)
  for (let at = 0; at < answer.length; at++) parser.feed(bytes(answer.slice(at, at + 1)))
  return outcome(parser, read)
}

/** The error `feed(answer)` throws, with the parser that threw it. */
function refusal(
  answer: string,
  options: { method?: string; maxHeadBytes?: number } = {},
): { readonly error: unknown; readonly parser: ResponseParser; readonly read: Read } {
  const { parser, read } = reader(options.method, options.maxHeadBytes)
  try {
    parser.feed(bytes(answer))
  } catch (error) {
    return { error, parser, read }
  }
  assert.fail(`no refusal of ${JSON.stringify(answer)}`)
}

/** Asserts that feeding `answer` whole throws an HttpParseError with `code`. */
function assertRefused(answer: string, code: string, options?: { maxHeadBytes?: number }): void {
  const { error } = refusal(answer, options)
  assert.ok(error instanceof HttpParseError, `${JSON.stringify(answer)}: ${String(error)}`)
  assert.equal(error.name, 'HttpParseError')
  assert.equal(error.code, code, JSON.stringify(answer))
}

const LENGTH_ANSWER =
  'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Consul-Index: 42\r\n' +
  'Content-Length: 11\r\n\r\n{"a":[1,2]}'
const CHUNKED_ANSWER =
  'HTTP/1.1 100 Continue\r\n\r\n' +
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Consul-Index: 7\r\n\r\n' +
  '3;name=value\r\n[1,\r\nA\r\n2,3,4,5,6]\r\n0\r\nX-Trailer: t\r\n\r\n'
const EMPTY_TRAILERS_ANSWER =
  'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n' +
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n'

describe('ResponseParser: framing', () => {
  it('reads an answer framed by Content-Length, fed whole', () => {
    const { parser, read } = reader()
    parser.feed(bytes(LENGTH_ANSWER))
    assert.equal(read.heads.length, 1)
    const head = read.heads[0] as ResponseHead
    assert.equal(head.statusCode, 200)
    assert.equal(head.keepAlive, true)
    assert.deepEqual(
      { ...head.headers },
      { 'content-type': 'application/json', 'x-consul-index': '42', 'content-length': '11' },
    )
    assert.equal(read.pieces.join(''), '{"a":[1,2]}')
    assert.equal(read.ends, 1)
    assert.equal(parser.done, true)
    assert.equal(parser.reusable, true)
    assert.equal(parser.extra, false)
  })

  it('reads the same answer at every split point and one byte at a time', () => {
    for (const answer of [LENGTH_ANSWER, CHUNKED_ANSWER, EMPTY_TRAILERS_ANSWER]) {
      const whole = parse(answer)
      assert.equal(whole.ends, 1, answer)
      assert.equal(whole.done, true, answer)
      for (let at = 1; at < answer.length; at++) {
        assert.deepEqual(
          parse(answer, { splits: [at] }),
          whole,
          `${JSON.stringify(answer)} at ${at}`,
        )
      }
      assert.deepEqual(parseByteByByte(answer), whole, JSON.stringify(answer))
    }
  })

  it('reads a chunked answer: its chunks in order, their extensions and trailers dropped', () => {
    const read = parse(CHUNKED_ANSWER)
    assert.equal(read.heads.length, 1)
    assert.equal(read.heads[0]?.statusCode, 200)
    assert.equal(read.heads[0]?.keepAlive, true)
    assert.equal(read.heads[0]?.headers['x-trailer'], undefined)
    assert.equal(read.body, '[1,2,3,4,5,6]')
    assert.equal(read.ends, 1)
    assert.equal(read.reusable, true)
  })

  it('ends a chunked body at an empty trailer section', () => {
    const read = parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n')
    assert.equal(read.body, 'ok')
    assert.equal(read.ends, 1)
    assert.equal(read.reusable, true)
    assert.equal(read.extra, false)
  })

  it('ends a chunked body after its trailers, however many', () => {
    const read = parse(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nA: 1\r\nB: 2\r\n\r\n',
    )
    assert.equal(read.body, 'ok')
    assert.equal(read.ends, 1)
    assert.equal(read.reusable, true)
  })

  it('ends an answer with Content-Length: 0 at its head', () => {
    const read = parse('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')
    assert.equal(read.heads.length, 1)
    assert.equal(read.body, '')
    assert.equal(read.ends, 1)
    assert.equal(read.reusable, true)
  })

  it('skips interim answers (100, 103) before the final one', () => {
    const read = parse(
      'HTTP/1.1 100 Continue\r\n\r\n' +
        'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n' +
        'HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok',
    )
    assert.equal(read.heads.length, 1)
    assert.equal(read.heads[0]?.statusCode, 201)
    assert.equal(read.heads[0]?.headers['link'], undefined)
    assert.equal(read.body, 'ok')
    assert.equal(read.ends, 1)
  })

  it('refuses 101 Switching Protocols', () => {
    assertRefused(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n',
      'HPE_UNEXPECTED_UPGRADE',
    )
  })

  it('reads no body after 204, 304 or an answer to HEAD, whatever their Content-Length', () => {
    for (const [method, answer] of [
      ['GET', 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n'],
      ['GET', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n'],
      ['HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n'],
      ['HEAD', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ] as const) {
      const read = parse(answer, { method })
      assert.equal(read.heads.length, 1, answer)
      assert.equal(read.body, '', answer)
      assert.equal(read.ends, 1, answer)
      assert.equal(read.done, true, answer)
      assert.equal(read.reusable, true, answer)
    }
    // What follows is no body of theirs: bytes past the answer.
    const read = parse('HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello')
    assert.equal(read.body, '')
    assert.equal(read.extra, true)
    assert.equal(read.reusable, false)
  })

  it('refuses a Transfer-Encoding whose last coding is not chunked but has it', () => {
    assertRefused(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n',
      'HPE_INVALID_TRANSFER_ENCODING',
    )
    assertRefused(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n',
      'HPE_INVALID_TRANSFER_ENCODING',
    )
  })

  it('reads a chunked body despite a Content-Length, and does not reuse the connection', () => {
    const read = parse(
      'HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n' +
        '3\r\nabc\r\n0\r\n\r\n',
    )
    assert.equal(read.heads[0]?.keepAlive, false)
    assert.equal(read.body, 'abc')
    assert.equal(read.ends, 1)
    assert.equal(read.done, true)
    assert.equal(read.reusable, false)
  })

  it('reads a body with no length and no chunked coding until the connection closes', () => {
    for (const head of [
      'HTTP/1.1 200 OK\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n',
    ]) {
      const { parser, read } = reader()
      parser.feed(bytes(`${head}part one,`))
      parser.feed(bytes(' part two'))
      assert.equal(read.heads[0]?.keepAlive, false, head)
      assert.equal(read.ends, 0, head)
      assert.equal(parser.done, false, head)
      parser.close()
      assert.equal(read.pieces.join(''), 'part one, part two', head)
      assert.equal(read.ends, 1, head)
      assert.equal(parser.done, true, head)
      assert.equal(parser.reusable, false, head)
    }
  })

  it('keeps an HTTP/1.0 connection only when the answer says Connection: keep-alive', () => {
    const plain = parse('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok')
    assert.equal(plain.heads[0]?.keepAlive, false)
    assert.equal(plain.body, 'ok')
    assert.equal(plain.reusable, false)
    const kept = parse('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok')
    assert.equal(kept.heads[0]?.keepAlive, true)
    assert.equal(kept.reusable, true)
  })

  it('does not keep an HTTP/1.1 connection whose answer says Connection: close', () => {
    for (const connection of ['close', 'Close', 'te, close']) {
      const read = parse(
        `HTTP/1.1 200 OK\r\nConnection: ${connection}\r\nContent-Length: 2\r\n\r\nok`,
      )
      assert.equal(read.heads[0]?.keepAlive, false, connection)
      assert.equal(read.body, 'ok', connection)
      assert.equal(read.ends, 1, connection)
      assert.equal(read.reusable, false, connection)
    }
  })

  it('marks bytes past the answer as extra, which makes the connection not reusable', () => {
    const same = parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n')
    assert.equal(same.body, 'ok')
    assert.equal(same.ends, 1)
    assert.equal(same.heads.length, 1)
    assert.equal(same.extra, true)
    assert.equal(same.reusable, false)

    const { parser, read } = reader()
    parser.feed(bytes('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'))
    assert.equal(parser.reusable, true)
    parser.feed(bytes('x'))
    assert.equal(parser.extra, true)
    assert.equal(parser.reusable, false)
    assert.equal(read.ends, 1)
  })

  it('keeps a copy of an incomplete line, not a view of the bytes fed', () => {
    const { parser, read } = reader()
    const first = bytes('HTTP/1.1 200 OK\r\nContent-Le')
    parser.feed(first)
    first.fill(0x21)
    const second = bytes('ngth: 5\r\n\r\n1')
    parser.feed(second)
    second.fill(0x21)
    parser.feed(bytes('2345'))
    assert.equal(read.heads[0]?.statusCode, 200)
    assert.equal(read.heads[0]?.headers['content-length'], '5')
    assert.deepEqual(read.pieces, ['1', '2345'])
    assert.equal(read.ends, 1)
  })
})

describe('ResponseParser: headers', () => {
  it('lower-cases the names, trims the values and joins repeated headers with ", "', () => {
    const read = parse(
      'HTTP/1.1 200 OK\r\nX-Consul-Index:7\r\nVary: Accept\r\nvary:  Origin \r\n' +
        'SET-COOKIE: a=1\r\nContent-Length: 0\r\n\r\n',
    )
    assert.deepEqual(read.heads[0]?.headers, {
      'x-consul-index': '7',
      vary: 'Accept, Origin',
      'set-cookie': 'a=1',
      'content-length': '0',
    })
  })

  it('stores a header named __proto__ as a plain header', () => {
    const { parser, read } = reader()
    parser.feed(
      bytes('HTTP/1.1 200 OK\r\n__proto__: x\r\nConstructor: y\r\nContent-Length: 0\r\n\r\n'),
    )
    const headers = read.heads[0]?.headers as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(headers), null)
    assert.ok(Object.hasOwn(headers, '__proto__'))
    assert.equal(headers['__proto__'], 'x')
    assert.equal(headers['constructor'], 'y')
    assert.equal(({} as Record<string, unknown>)['x'], undefined)
  })

  it('reads a status line with no reason phrase', () => {
    const read = parse('HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n')
    assert.equal(read.heads[0]?.statusCode, 200)
  })
})

describe('ResponseParser: refusals', () => {
  it('refuses an invalid status line (HPE_INVALID_CONSTANT)', () => {
    for (const line of [
      'SSH-2.0-OpenSSH_9.6',
      'HTTP/2 200 OK',
      'HTTP/1.2 200 OK',
      'HTTP/1.1 20 OK',
      'HTTP/1.1 099 Low',
      'HTTP/1.1 200OK',
      'http/1.1 200 OK',
      ' HTTP/1.1 200 OK',
    ]) {
      assertRefused(`${line}\r\nContent-Length: 0\r\n\r\n`, 'HPE_INVALID_CONSTANT')
    }
    // A line ended by a bare LF runs into the next one.
    assertRefused('HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n', 'HPE_INVALID_CONSTANT')
  })

  it('refuses an invalid header line (HPE_INVALID_HEADER_TOKEN)', () => {
    for (const line of [
      'X-No-Colon',
      'X-Space : before the colon',
      ' folded: continuation',
      '\tfolded: continuation',
      ': no name',
      'X(y): bad name',
    ]) {
      assertRefused(
        `HTTP/1.1 200 OK\r\n${line}\r\nContent-Length: 0\r\n\r\n`,
        'HPE_INVALID_HEADER_TOKEN',
      )
    }
    // A folded line after a header is refused as well, not joined to it.
    assertRefused(
      'HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n',
      'HPE_INVALID_HEADER_TOKEN',
    )
  })

  it('refuses a control character in a header value, but a tab', () => {
    for (const value of ['a\x01b', 'a\x00b', 'a\nb', 'a\rb', 'a\x7fb', 'a\x1bb']) {
      assertRefused(
        `HTTP/1.1 200 OK\r\nX-Value: ${value}\r\nContent-Length: 0\r\n\r\n`,
        'HPE_INVALID_HEADER_TOKEN',
      )
    }
    const read = parse('HTTP/1.1 200 OK\r\nX-Value: a\tb\r\nContent-Length: 0\r\n\r\n')
    assert.equal(read.heads[0]?.headers['x-value'], 'a\tb')
  })

  it('checks the headers of interim answers and trailers as it checks the final ones', () => {
    assertRefused('HTTP/1.1 100 Continue\r\nX Y: z\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN')
    assertRefused(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer: x\r\n\r\n',
      'HPE_INVALID_HEADER_TOKEN',
    )
  })

  it('refuses a Content-Length not a number, or two differing (HPE_INVALID_CONTENT_LENGTH)', () => {
    for (const length of ['abc', '-1', '+1', '1.5', '0x10', '', '1 2', '5,', '1234567890123456']) {
      assertRefused(
        `HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\n\r\n`,
        'HPE_INVALID_CONTENT_LENGTH',
      )
    }
    assertRefused('HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n', 'HPE_INVALID_CONTENT_LENGTH')
    assertRefused(
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n',
      'HPE_INVALID_CONTENT_LENGTH',
    )
  })

  it('accepts the same Content-Length twice', () => {
    for (const head of [
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n',
    ]) {
      const read = parse(`${head}ok`)
      assert.equal(read.body, 'ok', head)
      assert.equal(read.ends, 1, head)
      assert.equal(read.reusable, true, head)
    }
  })

  it('refuses a chunk size that is no hex number (HPE_INVALID_CHUNK_SIZE)', () => {
    for (const line of ['zz', '', '-1', '0x3', ' 3', '3 x', '1234567890abcdef']) {
      assertRefused(
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${line}\r\nabc\r\n0\r\n\r\n`,
        'HPE_INVALID_CHUNK_SIZE',
      )
    }
    assertRefused(
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;${'e'.repeat(2000)}`,
      'HPE_INVALID_CHUNK_SIZE',
    )
  })

  it('refuses chunk data not followed by CRLF (HPE_STRICT)', () => {
    assertRefused(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n',
      'HPE_STRICT',
    )
    assertRefused(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n',
      'HPE_STRICT',
    )
  })

  it('refuses a head larger than maxHeadBytes (HPE_HEADER_OVERFLOW), complete or not', () => {
    const big = `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(100)}\r\nContent-Length: 0\r\n\r\n`
    assertRefused(big, 'HPE_HEADER_OVERFLOW', { maxHeadBytes: 64 })
    // Without its end yet: refused as soon as it passes the limit.
    assertRefused(big.slice(0, 80), 'HPE_HEADER_OVERFLOW', { maxHeadBytes: 64 })
    assert.equal(parse(big).heads.length, 1)
    // Trailers are held to the same limit.
    assertRefused(
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ${'t'.repeat(100)}\r\n\r\n`,
      'HPE_HEADER_OVERFLOW',
      { maxHeadBytes: 64 },
    )
  })

  it("holds a head to Node's limit of 16 KiB by default", () => {
    assert.equal(MAX_HEAD_BYTES, 16 * 1024)
    const head = `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`
    assertRefused(head, 'HPE_HEADER_OVERFLOW')
  })

  it('decides a head at the limit the same way whole or fed one byte at a time', () => {
    const limit = 64
    for (let size = limit - 6; size <= limit + 6; size++) {
      const prefix = 'HTTP/1.1 200 OK\r\nX: '
      const text = prefix + 'v'.repeat(size - prefix.length)
      const answer = `${text}\r\n\r\n`
      const verdict = (pieces: string[]): string => {
        const { parser } = reader('GET', limit)
        try {
          for (const piece of pieces) parser.feed(bytes(piece))
          return 'read'
        } catch (error) {
          return (error as HttpParseError).code
        }
      }
      assert.equal(
        verdict([...answer]),
        verdict([answer]),
        `a head of ${answer.length} bytes (${size} before its CRLFCRLF), limit ${limit}`,
      )
    }
  })

  it('decides a chunk size line at its limit the same way whole or fed one byte at a time', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
    for (let size = 1020; size <= 1028; size++) {
      const line = `1;${'e'.repeat(size - 2)}`
      const answer = `${head}${line}\r\nx\r\n0\r\n\r\n`
      const verdict = (pieces: string[]): string => {
        const { parser } = reader()
        try {
          for (const piece of pieces) parser.feed(bytes(piece))
          return 'read'
        } catch (error) {
          return (error as HttpParseError).code
        }
      }
      assert.equal(
        verdict([head, ...line, '\r', '\nx\r\n0\r\n\r\n']),
        verdict([answer]),
        `a chunk size line of ${size} bytes`,
      )
    }
  })
})

describe('ResponseParser: the end of the connection', () => {
  it('throws the hang-up when the connection closes mid-head or mid-body', () => {
    for (const sent of [
      '',
      'HTTP/1.1 200 OK\r\nContent-Le',
      'HTTP/1.1 100 Continue\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n',
    ]) {
      const { parser, read } = reader()
      parser.feed(bytes(sent))
      assert.throws(
        () => parser.close(),
        (error: Error & { code?: string }) =>
          error.message === 'socket hang up' && error.code === 'ECONNRESET',
        JSON.stringify(sent),
      )
      assert.equal(read.ends, 0, JSON.stringify(sent))
      assert.equal(parser.done, true, JSON.stringify(sent))
    }
  })

  it('does nothing when the connection closes after the answer, or closes twice', () => {
    const { parser, read } = reader()
    parser.feed(bytes('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'))
    parser.close()
    parser.close()
    assert.equal(read.ends, 1)
    assert.equal(parser.done, true)
  })

  it('is spent once it threw: done, and reads nothing more', () => {
    for (const answer of [
      'HTTP/9 200 OK\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 101 Switching Protocols\r\n\r\n',
      'HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n',
    ]) {
      const { error, parser, read } = refusal(answer)
      assert.ok(error instanceof HttpParseError, answer)
      assert.equal(parser.done, true, JSON.stringify(answer))
      parser.feed(bytes('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'))
      assert.equal(read.ends, 0, JSON.stringify(answer))
      assert.doesNotThrow(() => parser.close(), JSON.stringify(answer))
    }
  })

  it('says a connection whose answer failed is not reusable', () => {
    const chunked = refusal('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n').parser
    assert.equal(chunked.done, true)
    assert.equal(chunked.reusable, false, 'after a bad chunk size')

    const { parser } = reader()
    parser.feed(bytes('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab'))
    assert.throws(() => parser.close(), { code: 'ECONNRESET' })
    assert.equal(parser.done, true)
    assert.equal(parser.reusable, false, 'after a hang-up mid-body')
  })

  it('refuses bytes that cannot start a status line without waiting for the end of a head', () => {
    // A server of another protocol (SSH) sends a banner line and waits: no CRLFCRLF ever comes.
    const { parser } = reader()
    assert.throws(() => parser.feed(bytes('SSH-2.0-OpenSSH_9.6\r\n')), {
      name: 'HttpParseError',
      code: 'HPE_INVALID_CONSTANT',
    })
  })
})
