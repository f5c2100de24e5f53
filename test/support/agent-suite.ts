// The set-up most integration suites share: the shared dev agent and one client of it, opened in
// the suite's `before` and closed in its `after` (the client first, then the agent).
import { after, before } from 'node:test'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import type { ConsulClientConfig } from '../../src/consul/config.js'
import { sharedAgent } from './consul-agent.js'

/** The agent and client of an `agentSuite`; valid in tests and in hooks registered after it. */
export interface AgentSuite {
  /** host:port of the agent's HTTP API (CONSUL_HTTP_ADDR form). */
  readonly addr: string
  /** http://host:port of the agent, for plain `fetch` checks. */
  readonly url: string
  /** A client of the agent, made with `{ address: addr, ...config }`. */
  readonly client: ConsulHttpClient
}

/**
 * Registers a `before` hook on the enclosing `describe` that gets the shared agent (sharedAgent)
 * and makes a client of it, and an `after` hook that closes the client, then the agent. Its
 * getters throw if read before that `before` hook ran (e.g. directly in the `describe` body).
 *
 * node:test runs `before` and `after` hooks in the order they were registered. So a hook that
 * needs the agent goes below the call, and teardown that must come before the client and the
 * agent close (stopping children, contenders, other clients) goes in an `after` above it.
 *
 * @param config Client options besides the address, e.g. `{ env: {} }` to ignore CONSUL_*.
 *
 * @example
 * ```ts
 * describe('semaphore', () => {
 *   const children: ChildProcess[] = []
 *   after(() => children.forEach((c) => c.kill('SIGKILL'))) // runs before the client closes
 *   const agent = agentSuite()
 *
 *   it('acquires a slot', async (t) => {
 *     const prefix = testPrefix(t, agent.url, 'sem') // cleared when the test ends
 *     const sem = closing(t, semaphore({ prefix, limit: 1, consul: agent.client }))
 *     await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
 *     assert.ok(await readLock(agent.url, prefix))
 *   })
 * })
 * ```
 */
export function agentSuite(config: Omit<ConsulClientConfig, 'address'> = {}): AgentSuite {
  let consul: Awaited<ReturnType<typeof sharedAgent>> | undefined
  let client: ConsulHttpClient | undefined
  before(async () => {
    consul = await sharedAgent()
    client = createConsulClient({ address: consul.addr, ...config })
  })
  after(async () => {
    await client?.close()
    await consul?.close()
  })
  const ready = () => {
    if (consul === undefined || client === undefined)
      throw new Error('agentSuite: read before the before hook of its describe ran')
    return { consul, client }
  }
  return {
    get addr() {
      return ready().consul.addr
    },
    get url() {
      return ready().consul.url
    },
    get client() {
      return ready().client
    },
  }
}
