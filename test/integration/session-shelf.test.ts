// On a real agent: a job pool's worker on the process's default client (withSlot) that gives its
// slot back keeps its session for a short linger, and the pool's next worker takes it over instead
// of creating one; the session is destroyed once the linger is over, by destroyIdleSessions(),
// and, for a client of the user's that held shelved sessions, before that client closes. A
// semaphore's close() keeps nothing: its session is gone when close() resolves.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { firstValueFrom, filter } from 'rxjs'
import { createConsulClient, destroyIdleSessions, semaphore, withSlot } from '../../src/index.js'
import { closeIdleDefaultClients } from '../../src/consul/default-client.js'
import {
  SESSION_LINGER_MS,
  flushShelf,
  processShelf,
  sessionSignature,
} from '../../src/effects/session-shelf.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, onEnd, testPrefix } from '../support/tracked.js'
import { listPrefix, noSessionsNamed, sessionsNamed } from '../support/observe.js'

describe('sessions kept between jobs on the default client', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  const env = process.env['CONSUL_HTTP_ADDR']
  before(async () => {
    consul = await sharedAgent()
    // The default client is the one CONSUL_HTTP_ADDR names.
    process.env['CONSUL_HTTP_ADDR'] = consul.addr
  })
  after(async () => {
    await flushShelf()
    await closeIdleDefaultClients()
    if (env === undefined) delete process.env['CONSUL_HTTP_ADDR']
    else process.env['CONSUL_HTTP_ADDR'] = env
    await consul.close()
  })

  /**
   * One job on the default client; answers, once it is over, the IDs of the sessions named `name`
   * and when its work ended (the worker gives its slot back and shelves its session after that).
   */
  const job = async (
    prefix: string,
    name: string,
  ): Promise<{ readonly ids: string[]; readonly workEnded: number }> => {
    let workEnded = 0
    await withSlot({ prefix, limit: 1, sessionName: name }, () => {
      workEnded = Date.now()
      return Promise.resolve()
    })
    return { ids: (await sessionsNamed(consul.url, name)).map((s) => s.ID), workEnded }
  }

  it('lets two withSlot jobs one after the other share one session, destroyed once the linger is over', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-jobs')
    const name = `shelf ${prefix}`
    onEnd(t, () => flushShelf())
    const first = (await job(prefix, name)).ids
    assert.equal(first.length, 1, 'the session lingers after the job')
    assert.deepEqual(
      (await listPrefix(consul.url, prefix)).map((e) => e.Key),
      [`${prefix}/.lock`],
      'nothing of it is left under the prefix',
    )

    const second = await job(prefix, name)
    assert.deepEqual(second.ids, first, 'the second job’s worker took the session over: one in all')
    // From the end of the job's work, which comes before its worker shelves the session (when the
    // linger starts): not from when the job's promise settled and the sessions were listed, which
    // on a loaded machine is well after the linger started.
    const doneAt = second.workEnded

    await noSessionsNamed(consul.url, name, SESSION_LINGER_MS + 5000)
    const goneAfter = Date.now() - doneAt
    t.diagnostic(`gone ${goneAfter} ms after the second job's work ended`)
    assert.ok(goneAfter >= SESSION_LINGER_MS - 50, `gone after ${goneAfter} ms, before the linger`)
  })

  it('starts no job of a worker that took a kept session before its new tenure: two processes looping on one slot never overlap', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-overlap')
    onEnd(t, () => flushShelf())
    let running = 0
    const overlaps: number[] = []
    const tokens = new Set<bigint>()
    // Each loop's next job comes after its last one's worker gave its slot back (nothing else was
    // queued in its process): it takes that worker's session from the shelf, with a listing from
    // before the release still the prefix's last one.
    const loop = async (value: string): Promise<void> => {
      for (let i = 0; i < 15; i += 1) {
        await withSlot({ prefix, limit: 1, value }, async (_signal, slot) => {
          tokens.add(slot.assertHolding())
          running += 1
          if (running > 1) overlaps.push(running)
          await new Promise((done) => setTimeout(done, 5))
          running -= 1
        })
      }
    }
    await Promise.all([loop('process-a'), loop('process-b')])
    assert.deepEqual(overlaps, [], 'never two jobs at once on a limit of 1')
    assert.equal(tokens.size, 30, 'a fencing token per job')
  })

  it('leaves no session kept behind once destroyIdleSessions() resolves', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-destroy-idle')
    const name = `shelf ${prefix}`
    onEnd(t, () => flushShelf())
    assert.equal((await job(prefix, name)).ids.length, 1, 'the session lingers')
    await destroyIdleSessions()
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
  })

  it('keeps nothing after a semaphore’s close(): its session is gone when close() resolves', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-semaphore')
    const name = `shelf ${prefix}`
    onEnd(t, () => flushShelf())
    const sem = semaphore({ prefix, limit: 1, sessionName: name })
    const subscription = keep(t, sem.state$.subscribe({ error: () => undefined }))
    onEnd(t, () => subscription.unsubscribe())
    const held = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    assert.deepEqual(
      (await sessionsNamed(consul.url, name)).map((s) => s.ID),
      [held.session],
    )
    await sem.close()
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'a session left after close()')
    assert.deepEqual(processShelf.sessions(), [], 'a session on the shelf')
  })

  it('destroys the sessions kept for a client of the user’s before that client closes', async (t) => {
    const name = `shelf own client ${Date.now()}`
    const client = createConsulClient({ address: consul.addr })
    let closed = false
    onEnd(t, async () => {
      await flushShelf(client)
      if (!closed) await client.close()
    })
    const request = { name, ttl: '15s', behavior: 'delete' } as const
    const created = await client.session.create(request)()
    assert.ok(created._tag === 'Right')
    const kept = processShelf.shelve(client, sessionSignature(request), {
      session: created.right,
      sentAt: Date.now(),
      ttlMs: 15_000,
    })
    assert.equal(kept, true)
    assert.equal((await sessionsNamed(consul.url, name)).length, 1)
    await client.close()
    closed = true
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
  })
})
