// Cancellable, bounded waits: withSlot, tryAcquire and tryLead take a `signal`, as Node's own
// APIs do. An abort before the slot is held releases everything and rejects with
// SemaphoreError('Aborted') whose cause is the signal's reason; an abort while held gives the slot
// back as close() does. Counted in Consul: no session and no key of the aborted contender is left
// when the promise settles.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SemaphoreError, semaphore, tryAcquire, tryLead, withSlot } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { testPrefix } from '../support/tracked.js'
import {
  eventually,
  listPrefix,
  noSessionsNamed,
  readLock,
  sessionsNamed,
} from '../support/observe.js'

/** The rejection of an aborted wait: typed, with the signal's reason as its cause. */
function isAborted(cause: (reason: unknown) => void) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'Aborted')
    cause(error.cause)
    return true
  }
}

describe('a signal bounds or cancels a wait', () => {
  const agent = agentSuite()

  /** A holder of the only slot, and what it left in Consul (its session and key). */
  async function heldBySomeoneElse(prefix: string) {
    const holder = semaphore({
      prefix,
      limit: 1,
      consul: agent.client,
      sessionName: `holder ${prefix}`,
    })
    const sub = holder.holding$.subscribe()
    await eventually('holder holds', async () =>
      (await readLock(agent.url, prefix)) ? true : undefined,
    )
    return {
      close: async () => {
        await holder.close()
        sub.unsubscribe()
      },
    }
  }

  it('withSlot: an abort while waiting leaves no session and no key of the waiter, and rejects with Aborted', async (t) => {
    const prefix = testPrefix(t, agent.url, 'abort-wait')
    const holder = await heldBySomeoneElse(prefix)
    const name = `waiter ${prefix}`
    const controller = new AbortController()
    let ran = false
    const waiting = withSlot(
      { prefix, limit: 1, consul: agent.client, sessionName: name, signal: controller.signal },
      () => {
        ran = true
        return Promise.resolve()
      },
    )
    // The waiter is queued: its session and its contender key are in Consul.
    const [session] = await eventually('waiter queued', async () => {
      const sessions = await sessionsNamed(agent.url, name)
      const keys = await listPrefix(agent.url, prefix)
      return sessions.length === 1 && keys.some((k) => k.Key.endsWith(sessions[0]?.ID ?? '?'))
        ? sessions.map((s) => s.ID)
        : undefined
    })
    try {
      const reason = new Error('the caller gave up')
      controller.abort(reason)
      await assert.rejects(
        waiting,
        isAborted((cause) => assert.equal(cause, reason)),
      )
      // Counted the moment the promise settled: the waiter's key is gone, and its session holds
      // nothing (it lingers on the shelf for the pool's next worker, then is destroyed).
      assert.equal(
        (await listPrefix(agent.url, prefix)).filter((k) => k.Key.endsWith(session ?? '?')).length,
        0,
      )
      assert.equal(ran, false)
      await noSessionsNamed(agent.url, name)
    } finally {
      await holder.close()
    }
  })

  it('withSlot: AbortSignal.timeout bounds the wait, its TimeoutError as the cause', async (t) => {
    const prefix = testPrefix(t, agent.url, 'abort-timeout')
    const holder = await heldBySomeoneElse(prefix)
    const name = `bounded ${prefix}`
    const started = Date.now()
    try {
      await assert.rejects(
        withSlot(
          {
            prefix,
            limit: 1,
            consul: agent.client,
            sessionName: name,
            signal: AbortSignal.timeout(300),
          },
          () => Promise.resolve(undefined),
        ),
        isAborted((cause) => assert.equal((cause as Error).name, 'TimeoutError')),
      )
      assert.ok(Date.now() - started >= 290)
      await noSessionsNamed(agent.url, name)
    } finally {
      await holder.close()
    }
  })

  it('withSlot: a signal aborted already rejects at once and sends nothing', async (t) => {
    const prefix = testPrefix(t, agent.url, 'abort-before')
    const name = `never ${prefix}`
    await assert.rejects(
      withSlot(
        {
          prefix,
          limit: 1,
          consul: agent.client,
          sessionName: name,
          signal: AbortSignal.abort('no'),
        },
        () => Promise.resolve(undefined),
      ),
      isAborted((cause) => assert.equal(cause, 'no')),
    )
    assert.deepEqual(await sessionsNamed(agent.url, name), [])
    assert.deepEqual(await listPrefix(agent.url, prefix), [])
  })

  it('withSlot: an abort while the work runs gives the slot back at once and aborts the work’s signal', async (t) => {
    const prefix = testPrefix(t, agent.url, 'abort-held')
    const name = `worker ${prefix}`
    const controller = new AbortController()
    const outcome = withSlot(
      { prefix, limit: 1, consul: agent.client, sessionName: name, signal: controller.signal },
      async (signal) => {
        controller.abort(new Error('shutting down'))
        // The slot is given back while the work still runs: its session goes.
        await eventually('session released', async () =>
          (await sessionsNamed(agent.url, name)).length === 0 ? true : undefined,
        )
        assert.ok(signal.aborted)
        return signal.reason as unknown
      },
    )
    const reason = await outcome
    assert.ok(reason instanceof SemaphoreError && reason.kind === 'Aborted', String(reason))
  })

  it('tryAcquire and tryLead: an aborted signal rejects at once; after the slot is held, an abort closes the holder', async (t) => {
    const prefix = testPrefix(t, agent.url, 'abort-try')
    await assert.rejects(
      tryAcquire({ prefix, limit: 1, consul: agent.client, signal: AbortSignal.abort() }),
      isAborted(() => undefined),
    )
    await assert.rejects(
      tryLead({ prefix: `${prefix}-lead`, consul: agent.client, signal: AbortSignal.abort() }),
      isAborted(() => undefined),
    )
    const name = `try ${prefix}`
    const controller = new AbortController()
    const held = await tryAcquire({
      prefix,
      limit: 1,
      consul: agent.client,
      sessionName: name,
      signal: controller.signal,
    })
    assert.ok(held !== null)
    assert.equal((await sessionsNamed(agent.url, name)).length, 1)
    controller.abort()
    await eventually('the holder closed', async () =>
      (await sessionsNamed(agent.url, name)).length === 0 ? true : undefined,
    )
    await held.close()
  })
})
