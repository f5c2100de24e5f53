// A contender that ends while its session request is in flight, in virtual time on the Consul
// double: close() (and the start-up timeout) wait for the answer and destroy the session it
// made, resolve quietly when the request fails, and wait at most ABANDONED_SESSION_WAIT_MS for an
// answer that never comes.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { NEVER, VirtualTimeScheduler, filter, firstValueFrom, of, type Subscription } from 'rxjs'
import { ABANDONED_SESSION_WAIT_MS } from '../../src/effects/coordinator/contend.js'
import { SemaphoreError } from '../../src/base/semaphore-error.js'
import { exclusive, type ExclusiveClosed } from '../../src/recipes/exclusive.js'
import { semaphore, type Semaphore } from '../../src/recipes/semaphore.js'
import {
  advanceBy,
  createConsulDouble,
  settle,
  unreachable,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/early'

describe('a contender closed while its session is being created', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  const subscriptions: Subscription[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    await double.close()
  })

  const started = (options: { startupTimeout?: string } = {}): Semaphore => {
    const sem = semaphore({ prefix, limit: 1, consul: double.client, scheduler, ...options })
    subscriptions.push(sem.holding$.subscribe({ error: () => undefined }))
    return sem
  }
  /** Whether `promise` has settled once every continuation queued so far ran. */
  const settledYet = async (promise: Promise<unknown>): Promise<boolean> => {
    let settled = false
    promise.then(
      () => (settled = true),
      () => (settled = true),
    )
    await settle()
    return settled
  }
  const destroys = (): number => double.calls().filter((c) => c.method === 'session.destroy').length

  it('destroys the session that the request makes after close() began, before close() resolves', async () => {
    const gate = double.hold('session.create')
    const sem = started()
    await gate.reached
    const closed = sem.close()
    assert.equal(await settledYet(closed), false, 'close() waits for the session request')
    gate.release()
    await closed
    assert.deepEqual(double.sessions(), [])
    assert.equal(destroys(), 1)
    assert.deepEqual(double.entries(`${prefix}/`), [], 'nothing was written with it')
  })

  it('resolves quietly when the request fails after close() began', async () => {
    const gate = double.hold('session.create')
    const sem = started()
    await gate.reached
    const closed = sem.close()
    assert.equal(await settledYet(closed), false, 'close() waits for the session request')
    gate.fail(unreachable('PUT /v1/session/create'))
    await closed
    assert.deepEqual(double.sessions(), [])
    assert.equal(destroys(), 0)
  })

  it('waits at most ABANDONED_SESSION_WAIT_MS for an answer that never comes, then aborts it', async () => {
    const gate = double.hold('session.create')
    const sem = started()
    await gate.reached
    const from = scheduler.now()
    const closed = sem.close()
    await advanceBy(scheduler, ABANDONED_SESSION_WAIT_MS - 1)
    assert.equal(await settledYet(closed), false)
    await advanceBy(scheduler, 1)
    await closed
    assert.equal(scheduler.now() - from, ABANDONED_SESSION_WAIT_MS)
    const create = double.calls().find((c) => c.method === 'session.create')
    assert.equal(create?.answer, 'Aborted')
    assert.deepEqual(double.sessions(), [])
  })

  it('resolves when its client is closed under the request', async () => {
    const client = double.connect('own')
    const gate = double.hold('session.create')
    const sem = semaphore({ prefix, limit: 1, consul: client, scheduler })
    subscriptions.push(sem.holding$.subscribe({ error: () => undefined }))
    await gate.reached
    const closed = sem.close()
    assert.equal(await settledYet(closed), false, 'close() waits for the session request')
    await client.close()
    await closed
    assert.deepEqual(double.sessions(), [])
  })

  it('makes no new request when closed while a retry backs off', async () => {
    double.fail('session.create', unreachable('PUT /v1/session/create'))
    const sem = started()
    await firstValueFrom(sem.state$.pipe(filter((s) => s.lastError !== undefined)))
    await sem.close()
    await advanceBy(scheduler, 60_000)
    assert.equal(double.calls().filter((c) => c.method === 'session.create').length, 1)
    assert.deepEqual(double.sessions(), [])
  })

  it('destroys the session that answers after the start-up timeout ended the contender', async () => {
    const gate = double.hold('session.create')
    const sem = semaphore({
      prefix,
      limit: 1,
      consul: double.client,
      scheduler,
      startupTimeout: '1s',
    })
    let failure: unknown
    subscriptions.push(sem.holding$.subscribe({ error: (error: unknown) => (failure = error) }))
    await gate.reached
    await advanceBy(scheduler, 1000)
    assert.ok(failure instanceof SemaphoreError && failure.kind === 'Unreachable', String(failure))
    const closed = sem.close()
    assert.equal(await settledYet(closed), false, 'close() waits for the session request')
    gate.release()
    await closed
    assert.deepEqual(double.sessions(), [])
    assert.equal(destroys(), 1)
  })

  it('exclusive: an unsubscribe while its session is being made writes no task key', async () => {
    const gate = double.hold('session.create')
    let closed: ExclusiveClosed | undefined
    const run = of('job-1')
      .pipe(
        exclusive({
          keyOf: (job) => `${prefix}/task/${job}`,
          run: () => NEVER,
          consul: double.client,
          scheduler,
          onClosed: (report) => (closed = report),
        }),
      )
      .subscribe()
    await gate.reached
    run.unsubscribe()
    gate.release()
    await advanceBy(scheduler, 1000)
    assert.ok(closed, 'onClosed was called')
    assert.equal(closed.error, undefined)
    assert.equal(closed.sessions.length, 1)
    assert.deepEqual(double.sessions(), [])
    assert.deepEqual(
      double.calls().filter((c) => c.method === 'kv.txn'),
      [],
      'no task key was written',
    )
    assert.deepEqual(double.entries(`${prefix}/`), [])
  })
})
