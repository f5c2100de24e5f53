// The session shelf, in virtual time on the Consul double: a session that a closed contender gave
// up cleanly waits SESSION_LINGER_MS for the next contender of the same client and session
// options, which takes it over instead of creating one; after the linger, at exit, on a flush or
// when its client closes, it is destroyed. Anything but a clean release destroys it at once.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient } from '../../src/consul/client-api.js'
import { runCloseHooks } from '../../src/consul/close-hooks.js'
import type { ContenderState } from '../../src/core/contender/contender-state-model.js'
import { contend, type Member } from '../../src/effects/coordinator/contend.js'
import { semaphoreProtocol } from '../../src/effects/protocol/semaphore-protocol.js'
import {
  SESSION_LINGER_MS,
  SHELF_CAPACITY,
  SessionShelf,
  contenderShelf,
  sessionSignature,
} from '../../src/effects/session-shelf.js'
import {
  resolveSemaphoreOptions,
  type SemaphoreOptions,
} from '../../src/options/contender-options.js'
import type { SemaphoreError } from '../../src/base/semaphore-error.js'
import {
  advanceBy,
  advanceUntil,
  createConsulDouble,
  httpFailure,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/shelved'

interface Tenure {
  readonly member: Member
  readonly last: () => ContenderState | undefined
  /** Closes the contender and resolves once its release (and shelving) is done. */
  readonly close: () => Promise<void>
  /** Resolves once every release it started is done. */
  readonly released: () => Promise<void>
}

describe('the session shelf, in virtual time on the Consul double', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  let shelf: SessionShelf
  const members: Member[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    shelf = new SessionShelf()
  })
  afterEach(async () => {
    for (const member of members.splice(0)) member.stop()
    const flushed = shelf.flush()
    await advanceBy(scheduler, 1000)
    await flushed
    await double.close()
  })

  /** A semaphore contender (limit 1) on `client`, with the test's shelf. */
  function tenure(client: ConsulClient, options: Partial<SemaphoreOptions> = {}): Tenure {
    let last: ContenderState | undefined
    const releases: Promise<unknown>[] = []
    const member = contend(
      {
        ...resolveSemaphoreOptions({ prefix, limit: 1, ...options }, 'shelf test'),
        client,
        protocol: semaphoreProtocol,
        scheduler,
        onRelease: (release) => releases.push(release),
        shelf: contenderShelf(client, { shelf }),
      },
      {
        next: (state) => (last = state),
        error: (error: SemaphoreError) => assert.fail(error),
        complete: () => undefined,
      },
    )
    members.push(member)
    const released = async (): Promise<void> => {
      const done = Promise.all(releases)
      let over = false
      void done.then(() => (over = true))
      await until('the release is done', () => over)
      await done
    }
    return {
      member,
      last: () => last,
      close: () => {
        member.close()
        return released()
      },
      released,
    }
  }

  /** Moves virtual time a millisecond at a time until `done()`, at most `limitMs`. */
  const until = (what: string, done: () => boolean, limitMs?: number): Promise<void> =>
    advanceUntil(scheduler, what, done, limitMs)

  const holds = (t: Tenure) => () => t.last()?.holding === true
  const count = (method: 'session.create' | 'session.destroy'): number =>
    double.calls().filter((c) => c.method === method).length
  const sessionIds = (): string[] => double.sessions().map((s) => s.id)

  it('hands a closed contender’s session to the next contender of the client, which creates none', async () => {
    const client = double.connect('a')
    const first = tenure(client)
    await until('the first holds', holds(first))
    const session = first.last()?.session
    await first.close()
    assert.deepEqual(shelf.sessions(client), [session], 'on the shelf')
    assert.deepEqual(sessionIds(), [session], 'still in Consul')
    assert.equal(count('session.destroy'), 0)
    assert.deepEqual(
      double.entries(`${prefix}/`).map((e) => e.key),
      [`${prefix}/.lock`],
    )

    const from = double.requests().length
    const second = tenure(client)
    await until('the second holds', holds(second))
    assert.equal(second.last()?.session, session, 'the same session')
    assert.equal(count('session.create'), 1, 'one create for both tenures')
    assert.deepEqual(shelf.sessions(), [], 'taken off the shelf')
    const lines = double
      .requests()
      .slice(from)
      .map((r) => r.line)
    assert.ok(!lines.some((l) => l.includes('/v1/session/')), lines.join('\n'))
    await second.close()
  })

  it('renews a taken session at once when more than half its TTL has passed since its last renewal', async () => {
    const client = double.connect('a')
    const first = tenure(client)
    await until('the first holds', holds(first))
    // 7.4 s into a 15 s TTL: no renewal yet.
    await advanceBy(scheduler, 7_400)
    await first.close()
    const from = double.calls().length
    const second = tenure(client)
    await until('the second holds', holds(second))
    await until('a renewal', () =>
      double
        .calls()
        .slice(from)
        .some((c) => c.method === 'session.renew'),
    )
    assert.ok(scheduler.now() - double.calls()[from]!.at < 200, 'renewed as it began')
    await second.close()
  })

  it('destroys a shelved session once the linger is over', async () => {
    const client = double.connect('a')
    const first = tenure(client)
    await until('the first holds', holds(first))
    await first.close()
    await advanceBy(scheduler, SESSION_LINGER_MS - 1)
    assert.equal(sessionIds().length, 1, 'still there just before the linger ends')
    await advanceBy(scheduler, 1)
    await until('the session is gone', () => sessionIds().length === 0)
    assert.equal(count('session.destroy'), 1)
    assert.deepEqual(shelf.sessions(), [])
    assert.equal(shelf.destroyFailures, 0)
  })

  it('destroys at once a session whose lease is too short for the linger', async () => {
    const client = double.connect('a')
    const ttlMs = 15_000
    const created = await client.session.create({ ttl: '15s', behavior: 'delete' })()
    assert.ok(created._tag === 'Right')
    const sentAt = scheduler.now() - ttlMs + SESSION_LINGER_MS
    const kept = shelf.shelve(
      client,
      'any',
      { session: created.right, sentAt, ttlMs },
      { scheduler },
    )
    assert.equal(kept, false)
    await until('the session is gone', () => sessionIds().length === 0)
  })

  it('keeps no more than SHELF_CAPACITY sessions of a kind, destroying the oldest', async () => {
    const client = double.connect('a')
    const ids: string[] = []
    for (let i = 0; i <= SHELF_CAPACITY; i++) {
      const created = await client.session.create({ ttl: '15s', behavior: 'delete' })()
      assert.ok(created._tag === 'Right')
      ids.push(created.right)
      shelf.shelve(
        client,
        'kind',
        { session: created.right, sentAt: scheduler.now(), ttlMs: 15_000 },
        { scheduler },
      )
    }
    await until('the oldest is gone', () => !sessionIds().includes(ids[0]!))
    assert.deepEqual(shelf.sessions(client), ids.slice(1))
  })

  it('does not hand a session to a contender with other session options, nor of another client', async () => {
    const a = double.connect('a')
    const first = tenure(a)
    await until('the first holds', holds(first))
    const session = first.last()?.session
    await first.close()

    const otherTtl = tenure(a, { ttl: '20s', prefix: `${prefix}-ttl` })
    await until('another TTL holds', holds(otherTtl))
    assert.notEqual(otherTtl.last()?.session, session)
    const otherClient = tenure(double.connect('b'), { prefix: `${prefix}-b` })
    await until('another client holds', holds(otherClient))
    assert.notEqual(otherClient.last()?.session, session)
    assert.equal(count('session.create'), 3)
    assert.deepEqual(shelf.sessions(a), [session], 'still on the shelf')
    await otherTtl.close()
    await otherClient.close()
  })

  it('destroys the session of a release that failed, and shelves nothing', async () => {
    const client = double.connect('a')
    const first = tenure(client)
    await until('the first holds', holds(first))
    double.fail('kv.txn', httpFailure(403, 'Permission denied'), { times: 1 })
    double.fail('kv.get', httpFailure(403, 'Permission denied'), { times: 1 })
    await first.close()
    assert.deepEqual(shelf.sessions(), [])
    assert.equal(count('session.destroy'), 1)
    assert.deepEqual(sessionIds(), [])
  })

  it('destroys the session of a contender that is stopped rather than closed', async () => {
    const client = double.connect('a')
    const first = tenure(client)
    await until('the first holds', holds(first))
    first.member.stop()
    await first.released()
    assert.deepEqual(shelf.sessions(), [])
    assert.deepEqual(sessionIds(), [])
  })

  it('destroys every shelved session on flush, and when the process is about to exit', async () => {
    const client = double.connect('a')
    const before = process.listeners('beforeExit')
    const first = tenure(client)
    await until('the first holds', holds(first))
    await first.close()
    const added = process.listeners('beforeExit').filter((l) => !before.includes(l))
    assert.equal(added.length, 1, 'listens while it holds one')
    // Called as Node would, without emitting the event (the test runner listens for it too).
    added[0]?.call(process, 0)
    await until('the session is gone', () => sessionIds().length === 0)
    assert.equal(process.listenerCount('beforeExit'), before.length, 'and stops listening after')

    const second = tenure(client)
    await until('the second holds', holds(second))
    await second.close()
    assert.equal(sessionIds().length, 1)
    const flushed = shelf.flush(client)
    await until('the session is gone', () => sessionIds().length === 0)
    await flushed
    assert.equal(count('session.destroy'), 2)
  })

  it('destroys the sessions of a client before that client closes', async () => {
    const client = double.connect('a')
    const other = double.connect('b')
    const first = tenure(client)
    await until('the first holds', holds(first))
    await first.close()
    const second = tenure(other, { prefix: `${prefix}-b` })
    await until('the second holds', holds(second))
    await second.close()
    assert.equal(sessionIds().length, 2)
    const closing = runCloseHooks(client)
    await until('its session is gone', () => sessionIds().length === 1)
    await closing
    assert.deepEqual(shelf.sessions(client), [])
    assert.equal(shelf.sessions(other).length, 1, 'the other client’s stays')
  })

  it('holds what the caller asks while a session stays, and lets go once it left', async () => {
    const client = double.connect('a')
    let held = 0
    const hold = (): (() => void) => {
      held++
      return () => held--
    }
    const created = await client.session.create({ ttl: '15s', behavior: 'delete' })()
    assert.ok(created._tag === 'Right')
    const signature = sessionSignature({ ttl: '15s', behavior: 'delete' })
    const session = { session: created.right, sentAt: scheduler.now(), ttlMs: 15_000 }
    shelf.shelve(client, signature, session, { scheduler, hold })
    assert.equal(held, 1)
    assert.deepEqual(shelf.take(client, signature, scheduler.now()), session)
    assert.equal(held, 0, 'taken')
    const destroy = double.hold('session.destroy')
    shelf.shelve(client, signature, session, { scheduler, hold })
    await advanceBy(scheduler, SESSION_LINGER_MS)
    await destroy.reached
    assert.equal(held, 1, 'held until its destroy answered')
    destroy.release()
    await until('let go', () => held === 0)
    assert.deepEqual(sessionIds(), [])
  })
})
