// withSlot: the Promise helper for callers who do not use RxJS.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SemaphoreError, withSlot } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { uniquePrefix } from '../support/consul-agent.js'
import {
  SEMAPHORE_FLAGS,
  deleteTree,
  eventually,
  putRaw,
  readLock,
  sessionsNamed,
} from '../support/observe.js'

describe('withSlot', () => {
  const agent = agentSuite()

  it('runs the work while the slot is held and releases it afterwards', async () => {
    const prefix = uniquePrefix('with-slot')
    const name = `with-slot ${prefix}`
    const result = await withSlot(
      { prefix, limit: 1, consul: agent.client, sessionName: name },
      async () => {
        const lock = await readLock(agent.url, prefix)
        assert.equal(Object.keys((lock?.body as { Holders: object }).Holders).length, 1)
        return 42
      },
    )
    assert.equal(result, 42)
    assert.deepEqual(await sessionsNamed(agent.url, name), [])
    assert.deepEqual((await readLock(agent.url, prefix))?.body, { Limit: 1, Holders: {} })
    await deleteTree(agent.url, prefix)
  })

  it('aborts the signal when the slot is lost, and rejects with what the work threw', async () => {
    const prefix = uniquePrefix('with-slot-lost')
    const failure = withSlot({ prefix, limit: 1, consul: agent.client }, async (signal) => {
      const lock = await readLock(agent.url, prefix)
      // An operator takes the slot away while the work runs.
      await putRaw(
        agent.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 1, Holders: {} }),
        `cas=${lock?.entry.ModifyIndex}&flags=${SEMAPHORE_FLAGS}`,
      )
      await eventually('signal aborted', () => (signal.aborted ? true : undefined), 5000)
      throw signal.reason
    })
    await assert.rejects(failure, (error: unknown) => {
      assert.ok(error instanceof SemaphoreError)
      assert.equal(error.kind, 'SlotLost')
      return true
    })
    await deleteTree(agent.url, prefix)
  })

  it('rejects invalid options with a typed error and never calls the work', async () => {
    let called = false
    await assert.rejects(
      withSlot({ prefix: '/absolute', limit: 1, consul: agent.client }, async () => {
        called = true
        return Promise.resolve()
      }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'InvalidOptions',
    )
    assert.equal(called, false)
  })
})
