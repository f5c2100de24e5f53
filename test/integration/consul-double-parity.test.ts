// The shared scenario table (test/support/consul-scenarios.ts) against the real dev agent: what
// the in-memory double (test/support/consul-double.ts) answers in test/unit/consul-double.test.ts,
// Consul 1.8 answers here. Each scenario has its own prefix; its sessions and keys are removed
// after it, and the removal is checked.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { pipe } from 'fp-ts/lib/function.js'
import * as TE from 'fp-ts/lib/TaskEither.js'
import type { ConsulClient } from '../../src/consul/client-api.js'
import { createConsulClient } from '../../src/consul/client.js'
import { sharedAgent } from '../support/consul-agent.js'
import { CONSUL_SCENARIOS } from '../support/consul-scenarios.js'
import { ok } from './consul-test-kit.js'
import { testPrefix } from '../support/tracked.js'

/** The client, with every session it creates noted in `sessions` (for the cleanup). */
function noting(client: ConsulClient, sessions: string[]): ConsulClient {
  return {
    ...client,
    session: {
      ...client.session,
      create: (options) =>
        pipe(
          client.session.create(options),
          TE.tap((id) => TE.fromIO(() => void sessions.push(id))),
        ),
    },
    watchPrefix: (prefix, options) => client.watchPrefix(prefix, options),
  }
}

describe('a real Consul agent passes the shared scenario table of the double', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    agent = await sharedAgent()
  })
  after(async () => {
    await agent.close()
  })

  for (const scenario of CONSUL_SCENARIOS) {
    it(scenario.name, { timeout: 30_000 }, async (t) => {
      const prefix = testPrefix(t, agent.url, 'double-parity')
      const opened: ConsulClient[] = []
      const sessions: string[] = []
      const client = (): ConsulClient => {
        const made = createConsulClient({ address: agent.addr, env: {} })
        opened.push(made)
        return noting(made, sessions)
      }
      try {
        await scenario.run(client, { prefix, now: () => performance.now() })
      } finally {
        const cleaner = createConsulClient({ address: agent.addr, env: {} })
        try {
          for (const id of sessions) await ok(cleaner.session.destroy(id))
          await ok(cleaner.kv.delete(prefix, { recurse: true }))
          assert.deepEqual((await ok(cleaner.kv.list(prefix))).entries, [], 'no key left')
          for (const id of sessions) assert.equal(await ok(cleaner.session.info(id)), null)
        } finally {
          await Promise.all([...opened, cleaner].map((c) => c.close()))
        }
      }
    })
  }
})
