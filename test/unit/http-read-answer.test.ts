// Reading one answer through undici's dispatch API (src/consul/http-read-body.ts, readAnswer), on
// a stand-in dispatcher that plays undici's part: it hands the handler a controller, then the
// answer's start, its chunks and its end, or an error, as the test says.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Dispatcher } from 'undici'
import { readAnswer } from '../../src/consul/http-read-body.js'

/** A controller that records the reason it was aborted with. */
function controller(): Dispatcher.DispatchController & { readonly abortedWith: Error[] } {
  const abortedWith: Error[] = []
  return {
    abortedWith,
    get aborted() {
      return abortedWith.length > 0
    },
    paused: false,
    reason: null,
    abort: (reason: Error) => void abortedWith.push(reason),
    pause: () => {},
    resume: () => {},
  }
}

/** A dispatcher that keeps the handler it is given, for the test to drive. */
function standIn(): Pick<Dispatcher, 'dispatch'> & { handler: Dispatcher.DispatchHandler } {
  const pool = {
    handler: {} as Dispatcher.DispatchHandler,
    dispatch: (_options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => {
      pool.handler = handler
      return true
    },
  }
  return pool
}

const options: Dispatcher.DispatchOptions = {
  origin: 'http://127.0.0.1:8500',
  method: 'GET',
  path: '/',
}

describe('readAnswer', () => {
  it('gives the status, headers and chunks of an answer, past a 1xx before it', async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, new AbortController().signal, 100)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    // Its headers are not the answer's: a length past the cap there must not stop the read.
    pool.handler.onResponseStart?.(c, 100, { 'content-length': '1000' }, 'Continue')
    pool.handler.onResponseStart?.(c, 200, { 'x-consul-index': '7' }, 'OK')
    pool.handler.onResponseData?.(c, Buffer.from('[1,'))
    pool.handler.onResponseData?.(c, Buffer.from('2]'))
    pool.handler.onResponseEnd?.(c, {})
    const received = await answer
    assert.equal(received.type, 'answer')
    assert.ok(received.type === 'answer')
    assert.equal(received.statusCode, 200)
    assert.equal(received.headers['x-consul-index'], '7')
    assert.equal(Buffer.concat(received.chunks).toString(), '[1,2]')
    assert.ok(received.receivedAt > 0)
    assert.deepEqual(c.abortedWith, [])
  })

  it('aborts an answer whose Content-Length is past the cap, and says it was too large', async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, new AbortController().signal, 100)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    pool.handler.onResponseStart?.(c, 200, { 'content-length': '101' }, 'OK')
    assert.equal(c.abortedWith.length, 1)
    pool.handler.onResponseError?.(c, c.abortedWith[0] as Error)
    assert.deepEqual(await answer, { type: 'too-large', statusCode: 200 })
  })

  it('aborts at the chunk that passes the cap, keeping none past it', async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, new AbortController().signal, 4)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    pool.handler.onResponseStart?.(c, 200, {}, 'OK')
    pool.handler.onResponseData?.(c, Buffer.from('abc'))
    assert.equal(c.abortedWith.length, 0)
    pool.handler.onResponseData?.(c, Buffer.from('de'))
    assert.equal(c.abortedWith.length, 1)
    pool.handler.onResponseError?.(c, c.abortedWith[0] as Error)
    assert.deepEqual(await answer, { type: 'too-large', statusCode: 200 })
  })

  it("rejects with undici's error for a failed request", async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, new AbortController().signal, 100)
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    // undici reports a connection it could not make before the request has a controller.
    pool.handler.onResponseError?.(undefined as unknown as Dispatcher.DispatchController, refused)
    await assert.rejects(answer, refused)
  })

  it('aborts with the signal: at once once started, at the start when aborted before it', async () => {
    const pool = standIn()
    const stop = new AbortController()
    const answer = readAnswer(pool, options, stop.signal, 100)
    const reason = new Error('timed out')
    stop.abort(reason)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    assert.deepEqual(c.abortedWith, [reason])
    pool.handler.onResponseError?.(c, reason)
    await assert.rejects(answer, reason)

    const later = standIn()
    const stopLater = new AbortController()
    const second = readAnswer(later, options, stopLater.signal, 100)
    const d = controller()
    later.handler.onRequestStart?.(d, {})
    stopLater.abort(reason)
    assert.deepEqual(d.abortedWith, [reason])
    later.handler.onResponseError?.(d, reason)
    await assert.rejects(second, reason)
  })

  it('sends nothing for a signal aborted already, and rejects with its reason', async () => {
    let sent = false
    const pool = { dispatch: () => (sent = true) }
    await assert.rejects(readAnswer(pool, options, AbortSignal.abort(new Error('closed')), 100), {
      message: 'closed',
    })
    assert.equal(sent, false)
  })
})
