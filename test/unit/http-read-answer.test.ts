// Reading one answer with Node's HTTP client (src/consul/http-read-body.ts, readAnswer), from a
// server on loopback that writes the bytes each test gives it: an answer after a 1xx, a length
// past the cap, a chunked body that passes it, no answer at all. The request's stop is a stand-in
// of the connection gate's `onStop`.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { readAnswer, type AnswerRequest } from '../../src/consul/http-read-body.js'

/** A server that answers each request with `answer` (bytes as they go on the wire), if any. */
interface RawServer {
  readonly port: number
  /** The raw requests it read, each with the connection it came on. */
  readonly requests: { readonly text: string; readonly socket: Socket }[]
  /** The connections it accepted, open or closed. */
  readonly sockets: Socket[]
  answer: string | undefined
  close(): Promise<void>
}

async function rawServer(): Promise<RawServer> {
  const state = {
    requests: [] as { text: string; socket: Socket }[],
    sockets: [] as Socket[],
    answer: undefined as string | undefined,
  }
  const server: Server = createServer((socket) => {
    state.sockets.push(socket)
    let text = ''
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
      if (!text.includes('\r\n\r\n')) return
      state.requests.push({ text, socket })
      text = ''
      if (state.answer !== undefined) socket.write(state.answer)
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    port: (server.address() as AddressInfo).port,
    get requests() {
      return state.requests
    },
    get sockets() {
      return state.sockets
    },
    get answer() {
      return state.answer
    },
    set answer(value) {
      state.answer = value
    },
    close: async () => {
      for (const socket of state.sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}

/** A stop the test pulls (`stop()`), handed to readAnswer as the gate's `onStop`. */
function stopper(): { readonly onStop: (listener: () => void) => void; stop(): void } {
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
const running = (): void => {}

/** Resolves once `ok()` holds, checked on each turn of the event loop. */
async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((resolve) => setImmediate(resolve))
}

/** Resolves once `socket` is closed. */
const closed = (socket: Socket): Promise<void> =>
  socket.closed ? Promise.resolve() : once(socket, 'close').then(() => undefined)

describe('readAnswer', () => {
  let server: RawServer
  let agent: Agent
  const get = (): AnswerRequest => ({
    agent,
    host: '127.0.0.1',
    port: server.port,
    method: 'GET',
    path: '/v1/kv/x',
    headers: {},
  })

  before(async () => {
    server = await rawServer()
    agent = new Agent({ keepAlive: true, maxSockets: 4 })
  })
  after(async () => {
    agent.destroy()
    await server.close()
  })

  it('gives the status, headers and chunks of an answer, past a 1xx before it', async () => {
    // The 1xx's headers are not the answer's: a length past the cap there must not stop the read.
    server.answer =
      'HTTP/1.1 100 Continue\r\ncontent-length: 1000\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nX-Consul-Index: 7\r\ntransfer-encoding: chunked\r\n\r\n' +
      '3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n'
    const received = await readAnswer(request, get(), null, running, 100)
    assert.ok(received.type === 'answer')
    assert.equal(received.statusCode, 200)
    assert.equal(received.headers['x-consul-index'], '7')
    assert.equal(Buffer.concat(received.chunks).toString(), '[1,2]')
    assert.ok(received.receivedAt > 0)
  })

  it('drops an answer whose Content-Length is past the cap, and says it was too large', async () => {
    server.answer = 'HTTP/1.1 200 OK\r\ncontent-length: 101\r\n\r\n' + 'x'.repeat(10)
    assert.deepEqual(await readAnswer(request, get(), null, running, 100), {
      type: 'too-large',
      statusCode: 200,
    })
    // Its connection is closed, not kept with the rest of the body unread.
    await closed((server.requests.at(-1) as { socket: Socket }).socket)
  })

  it('drops the answer at the chunk that passes the cap', async () => {
    server.answer =
      'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n'
    assert.deepEqual(await readAnswer(request, get(), null, running, 4), {
      type: 'too-large',
      statusCode: 200,
    })
  })

  it("rejects with Node's error for a request that reached no one", async () => {
    const nobody = await rawServer()
    const port = nobody.port
    await nobody.close()
    await assert.rejects(readAnswer(request, { ...get(), port }, null, running, 100), {
      code: 'ECONNREFUSED',
    })
  })

  it('rejects when stopped while it waits for its answer, and closes its connection', async () => {
    server.answer = undefined
    const asked = server.requests.length
    const stop = stopper()
    const answer = readAnswer(request, get(), null, stop.onStop, 100)
    await until(() => server.requests.length > asked)
    const { socket } = server.requests.at(-1) as { socket: Socket }
    stop.stop()
    await assert.rejects(answer, { name: 'Stopped' })
    await closed(socket)
  })

  it('sends nothing for a request stopped already, and rejects', async () => {
    let sent = false
    const send: typeof request = ((...args: Parameters<typeof request>) => {
      sent = true
      return request(...args)
    }) as typeof request
    const stop = stopper()
    stop.stop()
    await assert.rejects(readAnswer(send, get(), null, stop.onStop, 100), { name: 'Stopped' })
    assert.equal(sent, false)
  })
})
