// The transport's connection gate (src/consul/http-connection-gate.ts) in virtual time: which
// requests it gives a connection, in which order, when their timeouts start, and what it answers
// a request whose caller gives up or whose client closes. The transport on a real agent is
// covered by the integration tests of the Consul layer.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { VirtualTimeScheduler } from 'rxjs'
import {
  connectionGate,
  type Admission,
  type Admitted,
  type ConnectionGate,
} from '../../src/consul/http-connection-gate.js'
import { advanceBy, settle } from '../support/consul-double/virtual-time.js'

/** A request given to the gate, and what the gate made of it so far. */
interface Request {
  readonly name: string
  /** Undefined while the request waits. */
  admission: Admission | undefined
}

describe('connectionGate', () => {
  let scheduler: VirtualTimeScheduler
  let gate: ConnectionGate
  /** The names of the requests admitted, in the order they were. */
  let admitted: string[]
  let made: Request[]

  const open = (connections: number): void => {
    gate = connectionGate(connections, scheduler)
  }
  const enter = (
    name: string,
    options: { urgent?: boolean; poll?: boolean; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Request => {
    const request: Request = { name, admission: undefined }
    made.push(request)
    void Promise.resolve(
      gate.enter({
        signal: options.signal,
        urgent: options.urgent ?? false,
        poll: options.poll ?? false,
        timeoutMs: options.timeoutMs ?? 10_000,
      }),
    ).then((admission) => {
      request.admission = admission
      if (admission.admitted) admitted.push(name)
    })
    return request
  }
  /** The admission of a request admitted (fails the test if it was not). */
  const admissionOf = (request: Request): Admitted => {
    const admission = request.admission
    assert.ok(admission?.admitted === true, `${request.name} is admitted`)
    return admission
  }
  /** `request` is done: its connection goes to the requests waiting that fit. */
  const leave = async (request: Request): Promise<void> => {
    admissionOf(request).leave()
    await settle()
  }

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    admitted = []
    made = []
  })
  afterEach(() => {
    // Whatever a test left admitted or waiting is let go, and no timeout stays scheduled.
    gate.close()
    for (const request of made) {
      if (request.admission?.admitted === true) request.admission.leave()
    }
    assert.equal(scheduler.actions.length, 0, 'no timeout left scheduled')
  })

  it('admits requests first in first out, never more at once than it has connections', async () => {
    open(2)
    const [a, b, c, d, e] = [enter('a'), enter('b'), enter('c'), enter('d'), enter('e')]
    await settle()
    assert.deepEqual(admitted, ['a', 'b'])
    await leave(b)
    assert.deepEqual(admitted, ['a', 'b', 'c'])
    await leave(a)
    assert.deepEqual(admitted, ['a', 'b', 'c', 'd'])
    assert.equal(e.admission, undefined, 'e waits while c and d hold both connections')
    await leave(d)
    assert.deepEqual(admitted, ['a', 'b', 'c', 'd', 'e'])
    await leave(c)
    await leave(e)
  })

  it("answers at once, in its caller's turn, a request that fits, an aborted one and one after close", () => {
    open(1)
    const entry = { signal: undefined, urgent: false, poll: false, timeoutMs: 10_000 }
    const first = gate.enter(entry)
    assert.ok(!(first instanceof Promise) && first.admitted, 'a free connection admits at once')
    const second = gate.enter(entry)
    assert.ok(second instanceof Promise, 'a request that does not fit waits')
    const aborted = gate.enter({ ...entry, signal: AbortSignal.abort() })
    assert.deepEqual(aborted, { admitted: false, stop: 'caller' })
    first.leave()
    gate.close()
    assert.deepEqual(gate.enter(entry), { admitted: false, stop: 'closed' })
    return second.then((admission) => {
      assert.ok(admission.admitted, 'the waiting request had the connection the first left')
      admission.leave()
    })
  })

  it('lets a renewal (urgent) go ahead of the requests waiting, but not of those admitted', async () => {
    open(1)
    const [a, b, c] = [enter('a'), enter('b'), enter('c')]
    await settle()
    const renewal = enter('renewal', { urgent: true })
    const second = enter('second renewal', { urgent: true })
    await settle()
    assert.deepEqual(admitted, ['a'], 'the renewals wait for the request admitted before them')
    await leave(a)
    assert.deepEqual(admitted, ['a', 'renewal'])
    await leave(renewal)
    assert.deepEqual(admitted, ['a', 'renewal', 'second renewal'], 'renewals in their own order')
    await leave(second)
    await leave(b)
    await leave(c)
    assert.deepEqual(admitted, ['a', 'renewal', 'second renewal', 'b', 'c'])
  })

  it('gives long polls at most all but one connection, and a long poll waiting holds up nothing behind it', async () => {
    open(3)
    const p1 = enter('poll 1', { poll: true })
    const p2 = enter('poll 2', { poll: true })
    const p3 = enter('poll 3', { poll: true })
    await settle()
    assert.deepEqual(admitted, ['poll 1', 'poll 2'], 'the third connection is kept')
    const write = enter('write')
    await settle()
    assert.deepEqual(admitted, ['poll 1', 'poll 2', 'write'], 'a write behind the poll goes')
    const write2 = enter('write 2')
    const renewal = enter('renewal', { urgent: true })
    await settle()
    assert.equal(write2.admission, undefined, 'every connection is busy')
    await leave(write)
    assert.deepEqual(admitted.slice(3), ['renewal'], 'the renewal takes the free connection')
    await leave(renewal)
    assert.deepEqual(admitted.slice(3), ['renewal', 'write 2'], 'past the poll that waits')
    assert.equal(p3.admission, undefined, 'poll 3 still waits: two polls are out')
    await leave(p1)
    assert.deepEqual(admitted.slice(3), ['renewal', 'write 2', 'poll 3'])
    await leave(p2)
    await leave(p3)
    await leave(write2)
  })

  it('lets a long poll take the only connection of a gate of one', async () => {
    open(1)
    const p1 = enter('poll 1', { poll: true })
    const p2 = enter('poll 2', { poll: true })
    await settle()
    assert.deepEqual(admitted, ['poll 1'])
    await leave(p1)
    assert.deepEqual(admitted, ['poll 1', 'poll 2'])
    await leave(p2)
  })

  it("starts a request's timeout when it is admitted, not when it entered", async () => {
    open(1)
    const holder = enter('holder', { timeoutMs: 60_000 })
    const queued = enter('queued', { timeoutMs: 1000 })
    const late = enter('late', { timeoutMs: 1000 })
    await settle()
    await advanceBy(scheduler, 3000) // three times the queued request's timeout
    await leave(holder)
    const admission = admissionOf(queued)
    let told = 0
    admission.onStop(() => told++)
    assert.equal(told, 0, 'admitted at 3 s, its 1 s has not begun to run')
    await advanceBy(scheduler, 999)
    assert.equal(admission.stop(), undefined)
    assert.equal(told, 0)
    await leave(queued) // answered in time: it succeeds
    assert.equal(admission.stop(), undefined)
    // The timeout does run from the admission: the next request, never answered, is stopped
    // 1 s after it was admitted, not before.
    const next = admissionOf(late)
    let nextTold = 0
    next.onStop(() => nextTold++)
    await advanceBy(scheduler, 999)
    assert.equal(nextTold, 0)
    await advanceBy(scheduler, 1)
    assert.equal(nextTold, 1)
    assert.equal(next.stop(), 'timeout')
    await leave(late)
  })

  it('takes a request whose caller aborts while it waits out of the queue, never admitting it', async () => {
    open(1)
    const caller = new AbortController()
    const a = enter('a')
    const b = enter('b', { signal: caller.signal })
    const c = enter('c')
    await settle()
    caller.abort()
    await settle()
    assert.deepEqual(b.admission, { admitted: false, stop: 'caller' })
    await leave(a)
    assert.deepEqual(admitted, ['a', 'c'], 'c takes the connection b would have had')
    await leave(c)
    assert.deepEqual(admitted, ['a', 'c'])
  })

  it('keeps the order of a long line whatever leaves it out of turn (aborts, a long poll passed over)', async () => {
    open(2)
    const poll = enter('poll', { poll: true })
    const blocker = enter('blocker')
    await settle()
    // Both connections are taken; a second long poll waits, and 2,000 requests behind it.
    const waitingPoll = enter('waiting poll', { poll: true })
    const callers = Array.from({ length: 2000 }, () => new AbortController())
    const line = callers.map((caller, i) => enter(`r${i}`, { signal: caller.signal }))
    const renewal = enter('renewal', { urgent: true })
    await settle()
    // Every third request gives up while it waits.
    callers.forEach((caller, i) => (i % 3 === 0 ? caller.abort() : undefined))
    await settle()
    // The blocker leaves: the renewal goes first; the long poll still does not fit (one long
    // poll at most of two connections), so the requests behind it go in turn as each leaves.
    await leave(blocker)
    assert.deepEqual(admitted.slice(2), ['renewal'])
    await leave(renewal)
    for (const request of line) if (request.admission?.admitted === true) await leave(request)
    const expected = line.filter((_, i) => i % 3 !== 0).map((r) => r.name)
    assert.deepEqual(admitted.slice(3), expected, 'the others in the order they entered')
    assert.equal(waitingPoll.admission, undefined, 'the second long poll still waits')
    await leave(poll)
    assert.deepEqual(admitted.at(-1), 'waiting poll')
    await leave(waitingPoll)
  })

  it('refuses a request whose caller aborted before it entered, and stops one admitted when its caller aborts', async () => {
    open(1)
    const gone = new AbortController()
    gone.abort()
    const early = enter('early', { signal: gone.signal })
    const caller = new AbortController()
    const running = enter('running', { signal: caller.signal })
    await settle()
    assert.deepEqual(early.admission, { admitted: false, stop: 'caller' })
    const admission = admissionOf(running)
    let told = 0
    admission.onStop(() => told++)
    caller.abort()
    assert.equal(told, 1)
    assert.equal(admission.stop(), 'caller')
    await leave(running)
  })

  it('tells the stop once, at once to a listener given after it, and never after the request left', async () => {
    open(2)
    const caller = new AbortController()
    const first = enter('first', { signal: caller.signal, timeoutMs: 1000 })
    const second = enter('second', { timeoutMs: 1000 })
    await settle()
    // The second leaves in time: its listener is never called, not even by the close below.
    let secondTold = 0
    admissionOf(second).onStop(() => secondTold++)
    await leave(second)
    let told = 0
    admissionOf(first).onStop(() => told++)
    caller.abort()
    await advanceBy(scheduler, 1000) // its timeout passes too: the caller's stop, told once
    assert.equal(told, 1)
    assert.equal(admissionOf(first).stop(), 'caller')
    let toldLate = 0
    admissionOf(first).onStop(() => toldLate++)
    assert.equal(toldLate, 1, 'stopped already: told at once')
    await leave(first)
    gate.close()
    await advanceBy(scheduler, 1000)
    assert.equal(secondTold, 0)
  })

  it('on close refuses every request waiting, stops those admitted and refuses later ones', async () => {
    open(2)
    const a = enter('a')
    const p = enter('poll', { poll: true })
    const b = enter('b')
    const renewal = enter('renewal', { urgent: true })
    const p2 = enter('poll 2', { poll: true })
    await settle()
    assert.deepEqual(admitted, ['a', 'poll'])
    const told: string[] = []
    for (const running of [a, p]) admissionOf(running).onStop(() => told.push(running.name))
    gate.close()
    const after = enter('after')
    await settle()
    for (const waiter of [b, renewal, p2, after]) {
      assert.deepEqual(waiter.admission, { admitted: false, stop: 'closed' }, waiter.name)
    }
    assert.deepEqual(told, ['a', 'poll'])
    for (const running of [a, p]) assert.equal(admissionOf(running).stop(), 'closed', running.name)
    await leave(a)
    await leave(p)
    assert.deepEqual(admitted, ['a', 'poll'], 'nothing admitted after the close')
  })
})
