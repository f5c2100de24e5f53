// On a real agent: a semaphore on the process's default client that is closed keeps its session
// for a short linger, and the next `semaphore()` of the process takes it over instead of creating
// one; the session is destroyed once the linger is over, when the idle default clients are closed,
// and, for a client of the user's that held shelved sessions, before that client closes.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { firstValueFrom, filter } from 'rxjs'
import { createConsulClient, semaphore } from '../../src/index.js'
import { closeIdleDefaultClients } from '../../src/consul/default-client.js'
import {
  SESSION_LINGER_MS,
  flushShelf,
  processShelf,
  sessionSignature,
} from '../../src/effects/session-shelf.js'
import { sharedAgent, testPrefix } from '../support/consul-agent.js'
import { listPrefix, noSessionsNamed, sessionsNamed } from '../support/observe.js'

describe('sessions kept between tenures on the default client', () => {
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

  /** One tenure of a replica: a new semaphore, held, then closed; answers its session. */
  const tenure = async (prefix: string, name: string): Promise<string | undefined> => {
    const sem = semaphore({ prefix, limit: 1, sessionName: name })
    const subscription = sem.state$.subscribe({ error: () => undefined })
    try {
      const held = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
      return held.session
    } finally {
      await sem.close()
      subscription.unsubscribe()
    }
  }

  it('lets two tenures one after the other share one session, destroyed once the linger is over', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-tenures')
    const name = `shelf ${prefix}`
    t.after(() => flushShelf())
    const first = await tenure(prefix, name)
    const lingering = await sessionsNamed(consul.url, name)
    assert.deepEqual(
      lingering.map((s) => s.ID),
      [first],
      'the session lingers after close()',
    )
    assert.deepEqual(
      (await listPrefix(consul.url, prefix)).map((e) => e.Key),
      [`${prefix}/.lock`],
      'nothing of it is left under the prefix',
    )

    const second = await tenure(prefix, name)
    assert.equal(second, first, 'the second tenure took the session over')
    const closedAt = Date.now()
    assert.equal((await sessionsNamed(consul.url, name)).length, 1, 'one session in all')

    await noSessionsNamed(consul.url, name, SESSION_LINGER_MS + 5000)
    const goneAfter = Date.now() - closedAt
    t.diagnostic(`gone ${goneAfter} ms after the second close() resolved`)
    assert.ok(goneAfter >= SESSION_LINGER_MS - 50, `gone after ${goneAfter} ms, before the linger`)
  })

  it('leaves no session kept behind once the idle default clients are closed', async (t) => {
    const prefix = testPrefix(t, consul.url, 'shelf-close-idle')
    const name = `shelf ${prefix}`
    t.after(() => flushShelf())
    await tenure(prefix, name)
    assert.equal((await sessionsNamed(consul.url, name)).length, 1, 'the session lingers')
    await closeIdleDefaultClients()
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
  })

  it('destroys the sessions kept for a client of the user’s before that client closes', async (t) => {
    const name = `shelf own client ${Date.now()}`
    const client = createConsulClient({ address: consul.addr })
    let closed = false
    t.after(async () => {
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
