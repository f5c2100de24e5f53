// withSlot: the Promise helper for callers who do not use RxJS.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, SemaphoreError, withSlot, type ConsulClient } from '../../src/index.js'
import { sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import {
  SEMAPHORE_FLAGS,
  deleteTree,
  eventually,
  putRaw,
  readLock,
  sessionsNamed,
} from '../support/observe.js'

describe('withSlot', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let client: ConsulClient
  before(async () => {
    consul = await sharedAgent()
    client = createConsulClient({ address: consul.addr })
  })
  after(async () => {
    await client.close()
    await consul.close()
  })

  it('runs the work while the slot is held and releases it afterwards', async () => {
    const prefix = uniquePrefix('with-slot')
    const name = `with-slot ${prefix}`
    const result = await withSlot(
      { prefix, limit: 1, consul: client, sessionName: name },
      async () => {
        const lock = await readLock(consul.url, prefix)
        assert.equal(Object.keys((lock?.body as { Holders: object }).Holders).length, 1)
        return 42
      },
    )
    assert.equal(result, 42)
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
    assert.deepEqual((await readLock(consul.url, prefix))?.body, { Limit: 1, Holders: {} })
    await deleteTree(consul.url, prefix)
  })

  it('aborts the signal when the slot is lost, and rejects with what the work threw', async () => {
    const prefix = uniquePrefix('with-slot-lost')
    const failure = withSlot({ prefix, limit: 1, consul: client }, async (signal) => {
      const lock = await readLock(consul.url, prefix)
      // An operator takes the slot away while the work runs.
      await putRaw(
        consul.url,
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
    await deleteTree(consul.url, prefix)
  })

  it('rejects invalid options with a typed error and never calls the work', async () => {
    let called = false
    await assert.rejects(
      withSlot({ prefix: '/absolute', limit: 1, consul: client }, async () => {
        called = true
        return Promise.resolve()
      }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'InvalidOptions',
    )
    assert.equal(called, false)
  })
})
