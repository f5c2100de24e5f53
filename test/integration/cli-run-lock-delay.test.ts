// `rxsem run --lock-delay` on the real agent: the session is made with that lock-delay, and with
// 0 a leader that was killed with `kill -9` is followed as soon as its session ends, not the
// default 15 s later.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { CLI_START_MS, killAllCli, startCliFor } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { destroyRawSession, eventually, listPrefix, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

/** Well below Consul's default lock-delay (15 s): the next leader must be in within it. */
const WELL_BELOW_DEFAULT_MS = 5000

/** The session holding the leader lock `<prefix>/.lock` (its value is the leader's, not JSON). */
async function lockSession(url: string, prefix: string): Promise<string | undefined> {
  const entries = await listPrefix(url, prefix)
  return entries.find((e) => e.Key === `${prefix}/.lock`)?.Session
}

describe('rxsem run --lock-delay', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => killAllCli())
  const agent = agentSuite()

  const leader = (t: { after: (fn: () => unknown) => void }, prefix: string, name: string) =>
    startCliFor(
      t,
      [
        'run',
        '--leader',
        '--prefix',
        prefix,
        '--lock-delay',
        '0s',
        '--name',
        `${name} ${prefix}`,
        '--shell',
        '--',
        `echo leading ${name}; sleep 300`,
      ],
      { addr: agent.addr },
    )

  it('makes the session with it, and after kill -9 of the leader the next one leads as soon as the session ends', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-lock-delay')
    const first = leader(t, prefix, 'first')
    await eventually(
      'the first leading',
      () => /leading first/.test(first.stdout()) || undefined,
      CLI_START_MS,
    )
    const session = (await lockSession(agent.url, prefix)) ?? ''
    assert.notEqual(session, '', 'the first holds .lock')
    onEnd(t, () => destroyRawSession(agent.url, session))

    // Read back from the agent: Consul keeps the lock-delay the session was made with (ns).
    const info = await fetch(`${agent.url}/v1/session/info/${session}`)
    const [made] = (await info.json()) as { LockDelay: number; Name: string }[]
    assert.equal(made?.LockDelay, 0, 'the session has no lock-delay')
    assert.equal(made?.Name, `first ${prefix}`)

    const second = leader(t, prefix, 'second')
    await eventually(
      'the second contending with a session of its own',
      async () =>
        (await sessionsNamed(agent.url, `second ${prefix}`)).length === 1 ? true : undefined,
      CLI_START_MS,
    )

    // kill -9: rxsem releases nothing, and its session lives until its TTL ends it; ending it
    // here stands for that, so that what is measured is the wait after the session ends.
    process.kill(first.pid, 'SIGKILL')
    assert.equal(await first.exited, 137)
    await destroyRawSession(agent.url, session)
    await eventually(
      'the second leading, well before the default lock-delay of 15 s',
      () => /leading second/.test(second.stdout()) || undefined,
      WELL_BELOW_DEFAULT_MS,
    )
    const now = await lockSession(agent.url, prefix)
    assert.notEqual(now, session, 'the second holds .lock with its own session')
  })
})
