// The transport's HTTP/1.1 connections (src/consul/http-wire.ts) against a raw TCP server on
// loopback that records the bytes of each request and writes back the bytes each test gives it:
// what goes on the wire, which connection a request takes, when one is kept, dropped or closed
// for idleness, how a request is stopped, what it rejects with, and what the diagnostics
// channels publish. The request's stop is a stand-in of the connection gate's `onStop`.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { EventEmitter, once } from 'node:events'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { HttpParseError } from '../../src/consul/http-response-parser.js'
import {
  createWire,
  headerLines,
  type OnStop,
  type Received,
  type Wire,
  type WireRequest,
} from '../../src/consul/http-wire.js'

/** One request as the server read it, and the connection it came on. */
interface RawRequest {
  /** The request line and the headers, with the blank line that ends them. */
  readonly head: string
  readonly body: Buffer
  readonly socket: Socket
}

/** A server that answers each request with `answer` (bytes as they go on the wire), if any. */
interface RawServer {
  readonly port: number
  readonly requests: readonly RawRequest[]
  /** The connections it accepted, open or closed. */
  readonly sockets: readonly Socket[]
  /** Written back to each request as it comes; undefined: the test answers. */
  answer: string | undefined
  /** The `n`th request (from 1), once it has come. */
  request(n: number): Promise<RawRequest>
  close(): Promise<void>
}

async function rawServer(): Promise<RawServer> {
  const requests: RawRequest[] = []
  const sockets: Socket[] = []
  const events = new EventEmitter()
  const state = { answer: undefined as string | undefined }
  const server: Server = createServer((socket) => {
    sockets.push(socket)
    let pending = Buffer.alloc(0)
    socket.on('data', (bytes: Buffer) => {
      pending = Buffer.concat([pending, bytes])
      for (;;) {
        const end = pending.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = pending.toString('latin1', 0, end + 4)
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
        if (pending.length < end + 4 + length) return
        const body = Buffer.from(pending.subarray(end + 4, end + 4 + length))
        pending = pending.subarray(end + 4 + length)
        requests.push({ head, body, socket })
        events.emit('request')
        if (state.answer !== undefined) socket.write(state.answer, 'latin1')
      }
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    sockets,
    get answer() {
      return state.answer
    },
    set answer(value) {
      state.answer = value
    },
    request: async (n) => {
      while (requests.length < n) await once(events, 'request')
      return requests[n - 1] as RawRequest
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}

/** Resolves once `socket` is closed. */
const closed = (socket: Socket): Promise<void> =>
  socket.closed ? Promise.resolve() : once(socket, 'close').then(() => undefined)

/** A stop the test pulls (`stop()`), handed to send as the gate's `onStop`. */
function stopper(): { readonly onStop: OnStop; stop(): void } {
  let listener: (() => void) | undefined
  let stopped = false
  return {
    onStop: (l) => (stopped ? l() : (listener = l)),
    stop: () => {
      stopped = true
      listener?.()
    },
  }
}

/** Never stopped. */
const running: OnStop = () => {}

const GET: WireRequest = { method: 'GET', path: '/v1/kv/a', headerLines: '' }
const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'

/** The answer `received` is, with its body as text. */
function answerOf(received: Received): { statusCode: number; body: string } {
  assert.equal(received.type, 'answer')
  if (received.type !== 'answer') throw new Error('unreachable')
  return { statusCode: received.statusCode, body: Buffer.concat(received.chunks).toString() }
}

describe('createWire', () => {
  let server: RawServer
  let wires: Wire[]
  /** The client sockets the wires opened, in order. */
  let clients: Socket[]
  /** Bytes the client sockets received, and an event at each read. */
  let receivedBytes: number
  let clientEvents: EventEmitter

  const wireTo = (options: { idleMs?: number; port?: number; connections?: number } = {}): Wire => {
    const port = options.port ?? server.port
    const wire = createWire({
      connect: () => {
        const socket = connect(port, '127.0.0.1')
        clients.push(socket)
        // Added before the wire's own listener: it counts the bytes before the wire reads them.
        socket.on('data', (bytes: Buffer) => {
          receivedBytes += bytes.length
          clientEvents.emit('data')
        })
        return socket
      },
      host: `127.0.0.1:${port}`,
      idleMs: options.idleMs ?? 10_000,
      connections: options.connections ?? 16,
    })
    wires.push(wire)
    return wire
  }
  /** Resolves once the clients have received `n` bytes in all. */
  const clientsReceived = async (n: number): Promise<void> => {
    while (receivedBytes < n) await once(clientEvents, 'data')
  }

  beforeEach(async () => {
    server = await rawServer()
    wires = []
    clients = []
    receivedBytes = 0
    clientEvents = new EventEmitter()
  })
  afterEach(async () => {
    for (const wire of wires) wire.destroy()
    for (const socket of clients) socket.destroy()
    await server.close()
  })

  describe('what it sends', () => {
    it('writes the request line, Host and the header lines, and no length for a GET', async () => {
      server.answer = OK
      const wire = wireTo()
      await wire.send(
        {
          method: 'GET',
          path: '/v1/kv/a%2Fb?index=3&wait=5s',
          headerLines: 'X-Consul-Token: t\r\n',
        },
        null,
        running,
        1000,
      )
      const { head, body } = await server.request(1)
      assert.equal(
        head,
        `GET /v1/kv/a%2Fb?index=3&wait=5s HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
          'X-Consul-Token: t\r\n\r\n',
      )
      assert.equal(body.length, 0)
    })

    it('says the length of a body, text or bytes, and writes it after the head', async () => {
      server.answer = OK
      const wire = wireTo()
      const lines = headerLines({ 'Content-Type': 'application/json' })
      await wire.send(
        { method: 'PUT', path: '/v1/kv/a', headerLines: lines },
        '{"é":1}',
        running,
        1000,
      )
      await wire.send(
        { method: 'PUT', path: '/v1/txn', headerLines: '' },
        new Uint8Array([0, 1, 2, 255]),
        running,
        1000,
      )
      const text = await server.request(1)
      assert.equal(
        text.head,
        `PUT /v1/kv/a HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 8\r\n\r\n',
      )
      assert.equal(text.body.toString('utf8'), '{"é":1}')
      const bytes = await server.request(2)
      assert.match(bytes.head, /\r\nContent-Length: 4\r\n\r\n$/)
      assert.deepEqual([...bytes.body], [0, 1, 2, 255])
    })

    it('says Content-Length: 0 for a request without body but a GET', async () => {
      server.answer = OK
      const wire = wireTo()
      await wire.send(
        { method: 'PUT', path: '/v1/session/destroy/x', headerLines: '' },
        null,
        running,
        1000,
      )
      await wire.send({ method: 'DELETE', path: '/v1/kv/a', headerLines: '' }, '', running, 1000)
      await wire.send(GET, null, running, 1000)
      assert.equal(
        (await server.request(1)).head,
        `PUT /v1/session/destroy/x HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Length: 0\r\n\r\n`,
      )
      assert.match(
        (await server.request(2)).head,
        /^DELETE \/v1\/kv\/a HTTP\/1\.1\r\n.*\r\nContent-Length: 0\r\n\r\n$/s,
      )
      assert.doesNotMatch((await server.request(3)).head, /content-length/i)
    })

    it('refuses a path with a space or a line break (ERR_UNESCAPED_CHARACTERS), sending nothing', async () => {
      server.answer = OK
      const wire = wireTo()
      for (const path of ['/v1/kv/a b', '/v1/kv/a\r\nX-Injected: 1']) {
        await assert.rejects(
          wire.send({ method: 'GET', path, headerLines: '' }, null, running, 1000),
          { code: 'ERR_UNESCAPED_CHARACTERS' },
        )
      }
      assert.equal(clients.length, 0)
      await wire.send(GET, null, running, 1000)
      assert.equal((await server.request(1)).head.split('\r\n')[0], `GET ${GET.path} HTTP/1.1`)
    })
  })

  describe('what it reads', () => {
    it('resolves the status, the headers and the body chunks of an answer', async () => {
      server.answer =
        'HTTP/1.1 100 Continue\r\n\r\n' +
        'HTTP/1.1 200 OK\r\nX-Consul-Index: 7\r\nTransfer-Encoding: chunked\r\n\r\n' +
        '3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n'
      const before = Date.now()
      const received = await wireTo().send(GET, null, running, 100)
      assert.deepEqual(answerOf(received), { statusCode: 200, body: '[1,2]' })
      assert.ok(received.type === 'answer')
      assert.equal(received.headers['x-consul-index'], '7')
      assert.ok(received.receivedAt >= before && received.receivedAt <= Date.now())
    })

    it('resolves an answer of exactly the limit', async () => {
      server.answer = 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789'
      const received = await wireTo().send(GET, null, running, 10)
      assert.deepEqual(answerOf(received), { statusCode: 200, body: '0123456789' })
    })

    it('resolves too-large for a Content-Length past the limit, and drops its connection', async () => {
      server.answer = 'HTTP/1.1 503 Busy\r\nContent-Length: 11\r\n\r\n0123456789A'
      const wire = wireTo()
      assert.deepEqual(await wire.send(GET, null, running, 10), {
        type: 'too-large',
        statusCode: 503,
      })
      await closed(server.sockets[0] as Socket)
      server.answer = OK
      assert.deepEqual(answerOf(await wire.send(GET, null, running, 10)), {
        statusCode: 200,
        body: 'ok',
      })
      assert.equal(server.sockets.length, 2)
    })

    it('resolves too-large at the chunk that passes the limit, and drops the connection', async () => {
      server.answer =
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n'
      const wire = wireTo()
      assert.deepEqual(await wire.send(GET, null, running, 10), {
        type: 'too-large',
        statusCode: 200,
      })
      await closed(server.sockets[0] as Socket)
    })

    it('does not call a bodiless answer (to HEAD, 204, 304) too large for its length', async () => {
      const wire = wireTo()
      for (const [method, status] of [
        ['HEAD', '200 OK'],
        ['GET', '204 No Content'],
        ['GET', '304 Not Modified'],
      ] as const) {
        // The length is the one a GET would have had: no body follows.
        server.answer = `HTTP/1.1 ${status}\r\nContent-Length: 1000\r\n\r\n`
        const received = await wire.send({ ...GET, method }, null, running, 10)
        assert.equal(received.type, 'answer', `${method}, ${status}`)
        assert.deepEqual(answerOf(received), { statusCode: Number(status.slice(0, 3)), body: '' })
      }
      assert.equal(server.sockets.length, 1)
    })

    it('rejects with the hang-up when the server closes mid-body', async () => {
      server.answer = undefined
      const answer = wireTo().send(GET, null, running, 100)
      const { socket } = await server.request(1)
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab')
      await assert.rejects(answer, { code: 'ECONNRESET', message: 'socket hang up' })
    })

    it('reads a body without length until the server closes', async () => {
      server.answer = undefined
      const wire = wireTo()
      const answer = wire.send(GET, null, running, 100)
      const { socket } = await server.request(1)
      socket.end(
        'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n',
      )
      assert.deepEqual(answerOf(await answer), {
        statusCode: 400,
        body: 'Client sent an HTTP request to an HTTPS server.\n',
      })
    })

    it('rejects a body without length cut by a reset, not resolving what came of it', async () => {
      server.answer = undefined
      const answer = wireTo().send(GET, null, running, 100)
      const { socket } = await server.request(1)
      const sent = 'HTTP/1.1 200 OK\r\n\r\npart of a bo'
      socket.write(sent)
      await clientsReceived(sent.length)
      // A close ends such a body; a reset cuts it short, and the socket's error says so.
      socket.resetAndDestroy()
      await assert.rejects(answer, { code: 'ECONNRESET' })
    })

    it('rejects with the parser error for an answer not HTTP, and drops its connection', async () => {
      server.answer = 'SSH-2.0-OpenSSH_9.6\r\n\r\n'
      const wire = wireTo()
      await assert.rejects(wire.send(GET, null, running, 100), (error) => {
        assert.ok(error instanceof HttpParseError)
        assert.equal(error.code, 'HPE_INVALID_CONSTANT')
        return true
      })
      await closed(server.sockets[0] as Socket)
    })

    it("rejects with the parser error for another protocol's banner, then the close", async () => {
      // An SSH server sends its banner line, reads the request as a bad banner and hangs up.
      server.answer = undefined
      const answer = wireTo().send(GET, null, running, 100)
      const { socket } = await server.request(1)
      socket.end('SSH-2.0-OpenSSH_9.6\r\n')
      await assert.rejects(answer, { name: 'HttpParseError', code: 'HPE_INVALID_CONSTANT' })
    })

    it('rejects with ECONNREFUSED when no one listens', async () => {
      const gone = await rawServer()
      const port = gone.port
      await gone.close()
      await assert.rejects(wireTo({ port }).send(GET, null, running, 100), { code: 'ECONNREFUSED' })
    })
  })

  describe('its connections', () => {
    it('sends requests one after another on one connection', async () => {
      server.answer = OK
      const wire = wireTo()
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(answerOf(await wire.send(GET, null, running, 100)), {
          statusCode: 200,
          body: 'ok',
        })
      }
      assert.equal(server.sockets.length, 1)
      assert.equal(clients.length, 1)
      assert.equal(server.requests.length, 3)
    })

    it('opens a new connection for the request after a Connection: close answer', async () => {
      server.answer = 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'
      const wire = wireTo()
      assert.deepEqual(answerOf(await wire.send(GET, null, running, 100)), {
        statusCode: 200,
        body: 'ok',
      })
      // The client closes it: the server, which does not, sees it close.
      await closed(server.sockets[0] as Socket)
      server.answer = OK
      await wire.send(GET, null, running, 100)
      assert.equal(server.sockets.length, 2)
      assert.equal((await server.request(2)).socket, server.sockets[1])
    })

    it('closes a connection idle for idleMs, and opens another for the next request', async () => {
      server.answer = OK
      const wire = wireTo({ idleMs: 50 })
      await wire.send(GET, null, running, 100)
      await closed(server.sockets[0] as Socket)
      assert.equal(clients[0]?.destroyed, true)
      await wire.send(GET, null, running, 100)
      assert.equal(server.sockets.length, 2)
    })

    it('keeps no process alive with an idle connection', { timeout: 60_000 }, async () => {
      server.answer = OK
      const wire = new URL('../../src/consul/http-wire.ts', import.meta.url).href
      const program =
        `import { connect } from 'node:net'\n` +
        `import { createWire } from ${JSON.stringify(wire)}\n` +
        `const port = ${server.port}\n` +
        `const wire = createWire({\n` +
        `  connect: () => connect(port, '127.0.0.1'), host: 'x', idleMs: 600000, connections: 2,\n` +
        `})\n` +
        `const request = { method: 'GET', path: '/', headerLines: '' }\n` +
        `const received = await wire.send(request, null, () => {}, 100)\n` +
        `process.stdout.write(String(received.statusCode))\n`
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '--eval', program],
        {
          cwd: fileURLToPath(new URL('../..', import.meta.url)),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      try {
        let out = ''
        let err = ''
        child.stdout.on('data', (bytes: Buffer) => (out += bytes.toString()))
        child.stderr.on('data', (bytes: Buffer) => (err += bytes.toString()))
        const [code] = (await once(child, 'exit')) as [number | null]
        assert.equal(code, 0, err)
        assert.equal(out, '200')
        // Its connection was still open, idle, when it exited: the server did not close it.
        assert.equal(server.sockets.length, 1)
      } finally {
        if (child.exitCode === null) child.kill()
      }
    })

    it('opens a spare beside a long poll that takes the last idle connection, used next', async () => {
      server.answer = undefined
      const wire = wireTo()
      const poll = wire.send({ ...GET, path: '/poll', poll: true }, null, running, 100)
      assert.equal(clients.length, 2, 'the poll and its spare')
      const polled = await server.request(1)
      // The next request goes on the spare, at once: no connection is made for it.
      const write = wire.send({ method: 'PUT', path: '/write', headerLines: '' }, 'x', running, 100)
      assert.equal(clients.length, 2)
      const written = await server.request(2)
      assert.notEqual(written.socket, polled.socket)
      written.socket.write(OK)
      polled.socket.write(OK)
      await Promise.all([write, poll])
      assert.equal(server.sockets.length, 2)
    })

    it('opens no spare for a long poll that finds another idle, nor for other requests', async () => {
      server.answer = undefined
      const wire = wireTo()
      const first = wire.send({ ...GET, path: '/a' }, null, running, 100)
      const second = wire.send({ ...GET, path: '/b' }, null, running, 100)
      assert.equal(clients.length, 2, 'a request that is no long poll opens none')
      await server.request(2)
      for (const request of server.requests) request.socket.write(OK)
      await Promise.all([first, second])
      // Two idle now: the poll takes one and leaves the other.
      const poll = wire.send({ ...GET, path: '/poll', poll: true }, null, running, 100)
      assert.equal(clients.length, 2)
      ;(await server.request(3)).socket.write(OK)
      await poll
    })

    it('opens no spare past its connections', async () => {
      server.answer = undefined
      const wire = wireTo({ connections: 1 })
      const poll = wire.send({ ...GET, path: '/poll', poll: true }, null, running, 100)
      assert.equal(clients.length, 1)
      ;(await server.request(1)).socket.write(OK)
      await poll
    })

    it('closes an unused spare after idleMs like any idle connection', async () => {
      server.answer = undefined
      const wire = wireTo({ idleMs: 50 })
      const poll = wire.send({ ...GET, path: '/poll', poll: true }, null, running, 100)
      const spare = clients[1] as Socket
      await closed(spare)
      ;(await server.request(1)).socket.write(OK)
      await poll
      assert.equal(server.requests.length, 1)
    })

    it('drops an idle connection on which the server sends a byte, and opens another', async () => {
      server.answer = OK
      const wire = wireTo()
      await wire.send(GET, null, running, 100)
      const first = server.sockets[0] as Socket
      first.write('X')
      await closed(first)
      await wire.send(GET, null, running, 100)
      assert.equal(server.sockets.length, 2)
      assert.equal(clients.length, 2)
    })

    it('drops the connection of an answer followed by more bytes than it says', async () => {
      server.answer = `${OK}HTTP/1.1 200 OK\r\n`
      const wire = wireTo()
      assert.deepEqual(answerOf(await wire.send(GET, null, running, 100)), {
        statusCode: 200,
        body: 'ok',
      })
      await closed(server.sockets[0] as Socket)
      await wire.send(GET, null, running, 100)
      assert.equal(server.sockets.length, 2)
    })

    it('closes every connection on destroy, rejects the request in flight, sends no more', async () => {
      server.answer = undefined
      const wire = wireTo()
      const first = wire.send({ ...GET, path: '/first' }, null, running, 100)
      const second = wire.send({ ...GET, path: '/second' }, null, running, 100)
      // Two connections at once: either request may reach the server first.
      await server.request(2)
      const came = (path: string): RawRequest =>
        server.requests.find((request) => request.head.startsWith(`GET ${path} `)) as RawRequest
      const answered = came('/first')
      const waiting = came('/second')
      answered.socket.write(OK)
      await first
      wire.destroy()
      await assert.rejects(second, { code: 'ECONNRESET' })
      await Promise.all([closed(answered.socket), closed(waiting.socket)])
      await assert.rejects(wire.send(GET, null, running, 100), { name: 'Stopped' })
      assert.equal(clients.length, 2)
    })
  })

  describe('its stop', () => {
    it('rejects a request stopped already, and sends nothing', async () => {
      const stop = stopper()
      stop.stop()
      await assert.rejects(wireTo().send(GET, null, stop.onStop, 100), { name: 'Stopped' })
      assert.equal(clients.length, 0)
      assert.equal(server.sockets.length, 0)
    })

    it('rejects a request stopped mid-answer, closes its connection, opens another', async () => {
      server.answer = undefined
      const wire = wireTo()
      const stop = stopper()
      const answer = wire.send(GET, null, stop.onStop, 100)
      const { socket } = await server.request(1)
      const sent = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab'
      socket.write(sent)
      await clientsReceived(sent.length)
      stop.stop()
      await assert.rejects(answer, { name: 'Stopped' })
      await closed(socket)
      server.answer = OK
      assert.deepEqual(answerOf(await wire.send(GET, null, running, 100)), {
        statusCode: 200,
        body: 'ok',
      })
      assert.equal(server.sockets.length, 2)
    })

    it('leaves alone the connection of an answered request when stopped later', async () => {
      server.answer = undefined
      const wire = wireTo()
      const stop = stopper()
      const first = wire.send(GET, null, stop.onStop, 100)
      const asked = await server.request(1)
      asked.socket.write(OK)
      await first
      // The same connection now carries another request when the first one's stop comes.
      const second = wire.send({ ...GET, path: '/v1/kv/b' }, null, running, 100)
      const again = await server.request(2)
      assert.equal(again.socket, asked.socket)
      stop.stop()
      again.socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb')
      assert.deepEqual(answerOf(await second), { statusCode: 200, body: 'b' })
      assert.equal(server.sockets.length, 1)
      assert.equal(asked.socket.closed, false)
    })
  })

  describe('its diagnostics channels', () => {
    it('publishes one finish per answered request and one error per failed one, without headers', async () => {
      const finishes: unknown[] = []
      const errors: unknown[] = []
      const onFinish = (message: unknown): void => void finishes.push(message)
      const onError = (message: unknown): void => void errors.push(message)
      subscribe('rx-consul-semaphore:http.request.finish', onFinish)
      subscribe('rx-consul-semaphore:http.request.error', onError)
      try {
        server.answer = OK
        const wire = wireTo()
        const asked: WireRequest = {
          ...GET,
          path: '/v1/kv/ok',
          headerLines: 'X-Consul-Token: s\r\n',
        }
        const received = await wire.send(asked, null, running, 100)
        server.answer = 'nonsense\r\n\r\n'
        const failing: WireRequest = { ...GET, path: '/v1/kv/bad' }
        const error = await wire.send(failing, null, running, 100).then(
          () => assert.fail('answered'),
          (error: unknown) => error,
        )
        assert.equal(received.type, 'answer')
        // Method and path only: the header lines carry the ACL token.
        assert.deepEqual(finishes, [
          { request: { method: 'GET', path: '/v1/kv/ok' }, response: { statusCode: 200 } },
        ])
        assert.deepEqual(errors, [{ request: { method: 'GET', path: '/v1/kv/bad' }, error }])
        assert.equal((error as HttpParseError).code, 'HPE_INVALID_CONSTANT')
      } finally {
        unsubscribe('rx-consul-semaphore:http.request.finish', onFinish)
        unsubscribe('rx-consul-semaphore:http.request.error', onError)
      }
    })
  })
})

describe('headerLines', () => {
  it('makes a "Name: value" line ending in CRLF of each header, in order', () => {
    assert.equal(
      headerLines({
        'X-Consul-Token': 'secret',
        'Content-Type': 'application/json',
        'X-Tab': 'a\tb',
      }),
      'X-Consul-Token: secret\r\nContent-Type: application/json\r\nX-Tab: a\tb\r\n',
    )
    assert.equal(headerLines({}), '')
  })

  it('refuses a value with a line break or another control character (ERR_INVALID_CHAR)', () => {
    for (const value of ['a\nX-Injected: 1', 'a\r\nb', 'a\x00', 'a\x7f', 'ā']) {
      assert.throws(() => headerLines({ 'X-Value': value }), {
        name: 'TypeError',
        code: 'ERR_INVALID_CHAR',
      })
    }
  })

  it('refuses a name that is no token (ERR_INVALID_HTTP_TOKEN)', () => {
    for (const name of ['X Name', 'X-Name:', '', 'X\r\nY', 'é']) {
      assert.throws(() => headerLines({ [name]: 'v' }), {
        name: 'TypeError',
        code: 'ERR_INVALID_HTTP_TOKEN',
      })
    }
  })
})
