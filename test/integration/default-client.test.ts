// Contenders created without a `consul` option share one client per configuration in a process
// (issue 15): one long poll per prefix, one bounded pool, closed when the last of them is done, so
// that the process can end by itself. A client the user passes in stays the user's.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { firstValueFrom, filter } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  type ConsulClient,
} from '../../src/index.js'
import { acquireDefaultClient } from '../../src/consul/default-client.js'
import { sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import { runDefaultClientChild, type DefaultClientRun } from '../support/default-client-child.js'
import { deleteTree, listPrefix, readLock, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

describe('the default client', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    await consul.close()
  })

  /** Nothing of the run is left in Consul: no contender key, no holder, no session. */
  const assertPrefixEmpty = async (prefix: string): Promise<void> => {
    const left = (await listPrefix(consul.url, prefix)).filter((e) => !e.Key.endsWith('/.lock'))
    assert.deepEqual(
      left.map((e) => e.Key),
      [],
      'contender keys left',
    )
    assert.deepEqual((await readLock(consul.url, prefix))?.body, { Limit: 3, Holders: {} })
    assert.deepEqual(await sessionsNamed(consul.url, `default-client ${prefix}`), [])
  }

  const assertExitedBySelf = (run: DefaultClientRun): void => {
    assert.notEqual(
      run.exitedBySelfMs,
      undefined,
      `the child did not exit within 20 s and was killed; it said: ${run.stderr}`,
    )
    assert.equal(run.exitCode, 0, `exit code ${run.exitCode}; stderr: ${run.stderr}`)
  }

  it('gives 200 contenders of a process one long poll and at most 16 connections, and lets it exit once all are closed', async () => {
    const prefix = uniquePrefix('default-client-close')
    const run = await runDefaultClientChild({
      agentAddr: consul.addr,
      prefix,
      contenders: 200,
      ending: 'close',
    })
    assert.equal(run.longPollsOnPrefix, 1, 'blocking list queries of the prefix in flight')
    assert.ok(run.peakConnections <= 16, `${run.peakConnections} connections at most (pool of 16)`)
    assertExitedBySelf(run)
    assert.deepEqual(
      run.messages.find((m) => m.type === 'closed'),
      { type: 'closed', failedCloses: 0 },
    )
    await assertPrefixEmpty(prefix)
    await deleteTree(consul.url, prefix)
  })

  it('lets the process exit by itself when its contenders are only unsubscribed, after their releases', async () => {
    const prefix = uniquePrefix('default-client-unsubscribe')
    const run = await runDefaultClientChild({
      agentAddr: consul.addr,
      prefix,
      contenders: 200,
      ending: 'unsubscribe',
    })
    assert.equal(run.longPollsOnPrefix, 1, 'blocking list queries of the prefix in flight')
    assert.ok(run.peakConnections <= 16, `${run.peakConnections} connections at most (pool of 16)`)
    assertExitedBySelf(run)
    // The background releases finished before the client closed: nothing was cut off.
    await assertPrefixEmpty(prefix)
    await deleteTree(consul.url, prefix)
  })

  it('never closes a client the user passed in', async () => {
    const client: ConsulClient = createConsulClient({ address: consul.addr })
    const prefix = uniquePrefix('default-client-own')
    try {
      const sem = semaphore({ prefix: `${prefix}/sem`, limit: 1, consul: client })
      const election = leaderElection({ prefix: `${prefix}/leader`, consul: client })
      const subscriptions = [sem.holding$.subscribe(), election.leader$.subscribe()]
      await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
      await firstValueFrom(election.holding$.pipe(filter(Boolean)))
      await sem.close()
      await election.close()
      subscriptions.forEach((s) => s.unsubscribe())

      const answer = await client.kv.list(`${prefix}/`)()
      assert.ok(E.isRight(answer), E.isLeft(answer) ? answer.left.message : '')
    } finally {
      await client.close()
      await deleteTree(consul.url, prefix)
    }
  })

  it('shares one client per configuration and closes it when its last user lets go', async () => {
    const env = { CONSUL_HTTP_ADDR: consul.addr }
    const first = acquireDefaultClient({ env })
    const second = acquireDefaultClient({ env })
    const withToken = acquireDefaultClient({ env: { ...env, CONSUL_HTTP_TOKEN: 'other' } })
    try {
      assert.equal(second.client, first.client, 'same configuration, same client')
      assert.notEqual(withToken.client, first.client, 'another token, another client')

      await first.release()
      await first.release() // a second release of the same reference changes nothing
      assert.ok(E.isRight(await second.client.kv.list('rxsem-test/default-client/none')()))

      await second.release()
      const closed = await second.client.kv.list('rxsem-test/default-client/none')()
      assert.ok(E.isLeft(closed) && closed.left._tag === 'Aborted', 'closed with its last user')

      const next = acquireDefaultClient({ env })
      try {
        assert.notEqual(next.client, first.client, 'a later user gets a new client')
        assert.ok(E.isRight(await next.client.kv.list('rxsem-test/default-client/none')()))
      } finally {
        await next.release()
      }
    } finally {
      await first.release()
      await second.release()
      await withToken.release()
    }
  })
})
