// close() rides out a transient failure: each release step is retried, so one 500 from Consul
// does not leave the session to its TTL.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { createConsulClient, leaderElection, semaphore } from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { listPrefix, sessionsNamed } from '../support/observe.js'

describe('release under a transient failure', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  // The proxy's dice: the next `failures` requests draw 0 (an injected 500), the rest pass.
  let failures = 0
  before(async () => {
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr, { random: () => (failures-- > 0 ? 0 : 0.99) })
  })
  after(async () => {
    await proxy.close()
    await consul.close()
  })

  for (const kind of ['semaphore', 'leaderElection'] as const) {
    it(`${kind}: close() succeeds and leaves Consul clean when its first release request gets a 500`, async (t) => {
      const prefix = testPrefix(t, consul.url, `release-retry-${kind}`)
      const name = `release-retry ${prefix}`
      const client = createConsulClient({ address: proxy.addr })
      const contender =
        kind === 'semaphore'
          ? semaphore({ prefix, limit: 1, consul: client, sessionName: name })
          : leaderElection({ prefix, consul: client, sessionName: name })
      const sub = keep(t, contender.holding$.subscribe())
      await firstValueFrom(contender.holding$.pipe(filter(Boolean)))
      proxy.setMode({ random: { error500: 0.5 } })
      failures = 1
      await contender.close()
      proxy.setMode('pass')
      sub.unsubscribe()
      assert.ok(failures < 0, 'the 500 was injected, and later requests passed')
      assert.deepEqual(await sessionsNamed(consul.url, name), [], 'session destroyed')
      const held = (await listPrefix(consul.url, prefix)).filter((e) => e.Session !== undefined)
      assert.deepEqual(held, [], 'nothing held')
      await client.close()
    })
  }
})
