// Reading one answer through undici's dispatch API (src/consul/http-read-body.ts, readAnswer), on
// a stand-in dispatcher that plays undici's part: it hands the handler a controller, then the
// answer's start, its chunks and its end, or an error, as the test says. The request's stop is a
// stand-in of the connection gate's `onStop`.
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
function standIn(): Pick<Dispatcher, 'dispatch'> & {
  handler: Dispatcher.DispatchHandler
  /** What undici does after an abort: the handler's error, with the reason aborted with. */
  endAborted(c: ReturnType<typeof controller>): void
} {
  const pool = {
    handler: {} as Dispatcher.DispatchHandler,
    dispatch: (_options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => {
      pool.handler = handler
      return true
    },
    endAborted: (c: ReturnType<typeof controller>) => {
      assert.equal(c.abortedWith.length, 1, 'aborted once')
      pool.handler.onResponseError?.(c, c.abortedWith[0] as Error)
    },
  }
  return pool
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

const options: Dispatcher.DispatchOptions = {
  origin: 'http://127.0.0.1:8500',
  method: 'GET',
  path: '/',
}

describe('readAnswer', () => {
  it('gives the status, headers and chunks of an answer, past a 1xx before it', async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, running, 100)
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
    const answer = readAnswer(pool, options, running, 100)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    pool.handler.onResponseStart?.(c, 200, { 'content-length': '101' }, 'OK')
    pool.endAborted(c)
    assert.deepEqual(await answer, { type: 'too-large', statusCode: 200 })
  })

  it('aborts at the chunk that passes the cap, keeping none past it', async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, running, 4)
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    pool.handler.onResponseStart?.(c, 200, {}, 'OK')
    pool.handler.onResponseData?.(c, Buffer.from('abc'))
    assert.equal(c.abortedWith.length, 0)
    pool.handler.onResponseData?.(c, Buffer.from('de'))
    pool.endAborted(c)
    assert.deepEqual(await answer, { type: 'too-large', statusCode: 200 })
  })

  it("rejects with undici's error for a failed request", async () => {
    const pool = standIn()
    const answer = readAnswer(pool, options, running, 100)
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    // undici reports a connection it could not make before the request has a controller.
    pool.handler.onResponseError?.(undefined as unknown as Dispatcher.DispatchController, refused)
    await assert.rejects(answer, refused)
  })

  it('aborts when stopped: at once once started, at the start when stopped before it', async () => {
    const pool = standIn()
    const early = stopper()
    const answer = readAnswer(pool, options, early.onStop, 100)
    early.stop()
    const c = controller()
    pool.handler.onRequestStart?.(c, {})
    pool.endAborted(c)
    await assert.rejects(answer, { name: 'Stopped' })

    const later = standIn()
    const late = stopper()
    const second = readAnswer(later, options, late.onStop, 100)
    const d = controller()
    later.handler.onRequestStart?.(d, {})
    assert.equal(d.abortedWith.length, 0)
    late.stop()
    later.endAborted(d)
    await assert.rejects(second, { name: 'Stopped' })
  })

  it('sends nothing for a request stopped already, and rejects', async () => {
    let sent = false
    const pool = { dispatch: () => (sent = true) }
    const stopped = stopper()
    stopped.stop()
    await assert.rejects(readAnswer(pool, options, stopped.onStop, 100), { name: 'Stopped' })
    assert.equal(sent, false)
  })
})
