// Contenders created without a `consul` option share one client per configuration in a process
// (issue 15): one long poll per prefix, one bounded pool. When the last of them is done the client
// stays open for an idle grace, so that the next tenure reuses it (issue 25), and is closed after
// it; nothing of it keeps the process from ending by itself at once. A client the user passes in
// stays the user's.
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
import {
  DEFAULT_CLIENT_IDLE_GRACE_MS,
  borrowDefaultClient,
  closeIdleDefaultClients,
} from '../../src/consul/default-client.js'
import { sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import {
  runDefaultClientChild,
  runTenuresChild,
  type DefaultClientRun,
  type TenuresRun,
} from '../support/default-client-child.js'
import { listPrefix, readLock, sessionsNamed } from '../support/observe.js'
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

  /** The child ended by itself (not killed 20 s after the command), with exit code 0. */
  const assertExitedBySelf = (run: DefaultClientRun | TenuresRun): void => {
    assert.notEqual(
      run.exitedBySelfMs,
      undefined,
      `the child did not exit within 20 s and was killed; it said: ${run.stderr}`,
    )
    assert.equal(run.exitCode, 0, `exit code ${run.exitCode}; stderr: ${run.stderr}`)
  }

  /**
   * `ms`, from the moment the child was done (`what`) to its exit, is well below the default
   * client's idle grace: neither the grace timer nor the idle client's sockets held it up. (Tens
   * of ms on a quiet machine, some hundreds when test files run side by side.)
   */
  const assertPrompt = (ms: number | undefined, what: string): void => {
    const within = DEFAULT_CLIENT_IDLE_GRACE_MS / 2
    assert.ok(
      (ms ?? Infinity) < within,
      `exited ${ms} ms after ${what}, not within ${within} ms (the idle grace is ${DEFAULT_CLIENT_IDLE_GRACE_MS} ms)`,
    )
  }

  it('gives 200 contenders of a process one long poll and at most 16 connections, and lets it exit once all are closed', async (t) => {
    const prefix = testPrefix(t, consul.url, 'default-client-close')
    const run = await runDefaultClientChild({
      agentAddr: consul.addr,
      prefix,
      contenders: 200,
      ending: 'close',
    })
    assert.equal(run.longPollsOnPrefix, 1, 'blocking list queries of the prefix in flight')
    assert.ok(run.peakConnections <= 16, `${run.peakConnections} connections at most (pool of 16)`)
    t.diagnostic(
      `exit ${run.exitedBySelfMs} ms after the command, ${run.exitedAfterLastWordMs} ms after the last close() resolved, ${run.exitedAfterLastRequestMs} ms after the last request`,
    )
    assertExitedBySelf(run)
    // From the command: 200 close()s, their releases, then the exit; from the last close(): the
    // exit alone, which the default client's idle grace must not hold up.
    assertPrompt(run.exitedAfterLastWordMs, 'the last close() resolved')
    assertPrompt(run.exitedAfterLastRequestMs, 'its last request')
    assert.deepEqual(
      run.messages.find((m) => m.type === 'closed'),
      { type: 'closed', failedCloses: 0 },
    )
    await assertPrefixEmpty(prefix)
  })

  it('lets the process exit by itself when its contenders are only unsubscribed, after their releases', async (t) => {
    const prefix = testPrefix(t, consul.url, 'default-client-unsubscribe')
    const run = await runDefaultClientChild({
      agentAddr: consul.addr,
      prefix,
      contenders: 200,
      ending: 'unsubscribe',
    })
    assert.equal(run.longPollsOnPrefix, 1, 'blocking list queries of the prefix in flight')
    assert.ok(run.peakConnections <= 16, `${run.peakConnections} connections at most (pool of 16)`)
    t.diagnostic(
      `exit ${run.exitedBySelfMs} ms after the command, ${run.exitedAfterLastRequestMs} ms after the last request`,
    )
    assertExitedBySelf(run)
    // From the command: 200 unsubscribes, their background releases, then the exit; from the last
    // release's last request: the exit alone.
    assertPrompt(run.exitedAfterLastRequestMs, 'its last request')
    // The background releases finished before the client closed: nothing was cut off.
    await assertPrefixEmpty(prefix)
  })

  it('never closes a client the user passed in', async (t) => {
    const client: ConsulClient = createConsulClient({ address: consul.addr })
    const prefix = testPrefix(t, consul.url, 'default-client-own')
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
    }
  })

  for (const how of ['withSlot', 'semaphore'] as const) {
    it(`reuses one client for a replica's tenures one after the other (${how}), which join in one transaction, and lets the process exit at once after the last`, async (t) => {
      const prefix = testPrefix(t, consul.url, `default-client-tenures-${how}`)
      const run = await runTenuresChild({ agentAddr: consul.addr, prefix, tenures: 6, how })
      t.diagnostic(
        `requests per tenure ${run.tenures.map((x) => x.requests).join(' ')}; new connections ${run.tenures.map((x) => x.newConnections).join(' ')}; exit ${run.exitedBySelfMs} ms after end with ${run.openAtEnd} idle connections open; tenure 2: ${run.tenures[1]?.seen.join(', ')}`,
      )
      const [first, ...later] = run.tenures
      assert.ok(first !== undefined && later.length === 5)
      const detail = run.tenures
        .map(
          (x, i) =>
            `tenure ${i + 1}: ${x.requests} requests, ${x.newConnections} new connections\n  ${x.seen.join('\n  ')}`,
        )
        .join('\n')
      // The first tenure lists the prefix (its client has not seen `.lock` yet) and opens the
      // pool's connections; the later ones find the client of the first, which remembers `.lock`.
      // Without the join a contender writes its key on its own (`?...acquire=`) after a list.
      const ownWrites = (x: (typeof run.tenures)[number]): number =>
        x.seen.filter((r) => r.startsWith(`PUT /v1/kv/${prefix}/`) && /acquire=/.test(r)).length
      assert.equal(ownWrites(first), 1, `the first tenure wrote its key on its own\n${detail}`)
      // A holder that held long enough to long-poll only its key and `.lock` sends those polls,
      // and lists the prefix at its release when its last listing showed nobody waiting (a
      // waiter may have joined since, asleep on its own key): a tenure's cost beside its join.
      const underPrefix = `GET /v1/kv/${prefix}/`
      const joinCost = (x: (typeof run.tenures)[number]): number =>
        x.requests - x.seen.filter((r) => r.startsWith(underPrefix)).length
      for (const [i, tenure] of later.entries()) {
        assert.ok(
          joinCost(tenure) < joinCost(first),
          `tenure ${i + 2}: ${joinCost(tenure)} requests besides its own key's, not fewer than the first's ${joinCost(first)}\n${detail}`,
        )
        assert.ok(
          !tenure.seen.some((r) => r.startsWith(`GET /v1/kv/${prefix}?`) && !/index=/.test(r)),
          `tenure ${i + 2} listed the prefix before it joined\n${detail}`,
        )
        assert.equal(
          ownWrites(tenure),
          0,
          `tenure ${i + 2} did not take its key in the join's transaction\n${detail}`,
        )
      }
      // The later tenures reuse the connections of the client they share, but not all of them: a
      // tenure's long poll is aborted at its release unless the release's own write answered it
      // first, and an aborted request's connection is closed, so a tenure may open one again
      // (or two, as many as a first tenure that happened to send its calls one at a time: seen 2
      // then 2; 4 1 1 0 1 1). Fewer than two per later tenure on the whole, then: a client made
      // anew for each tenure opens at least two (its long poll's, and its calls' beside it).
      const reopened = later.reduce((sum, tenure) => sum + tenure.newConnections, 0)
      assert.ok(
        reopened < 2 * later.length,
        `the ${later.length} later tenures opened ${reopened} new connections in all\n${detail}`,
      )
      // One client for the whole run: its pool of 16 at most, however many tenures.
      assert.ok(run.connections <= 16, `${run.connections} connections over the run\n${detail}`)
      // After the last tenure the client is in its idle grace, its keep-alive connections open:
      // the process still ends at once.
      assert.ok(run.openAtEnd > 0, 'the idle client had connections open when the child ended')
      assertExitedBySelf(run)
      assertPrompt(run.exitedBySelfMs, '`end`, the last tenure over')
      await assertPrefixEmpty(prefix)
    })
  }

  it('shares one client per configuration, keeps it for the idle grace after its last user lets go, and closes it after', async () => {
    const env = { CONSUL_HTTP_ADDR: consul.addr }
    const list = (client: ConsulClient) => client.kv.list('rxsem-test/default-client/none')()
    /** Polls the client until a call of it answers Aborted (closed), for at most 5 s. */
    const closedLater = async (client: ConsulClient) => {
      const deadline = Date.now() + 5000
      let closed = await list(client)
      while (E.isRight(closed) && Date.now() < deadline) {
        await new Promise((done) => setTimeout(done, 20))
        closed = await list(client)
      }
      return E.isLeft(closed) && closed.left._tag === 'Aborted'
    }
    const first = borrowDefaultClient({ env }, 100)
    const second = borrowDefaultClient({ env }, 100)
    const withToken = borrowDefaultClient({ env: { ...env, CONSUL_HTTP_TOKEN: 'other' } }, 100)
    try {
      assert.equal(second.client, first.client, 'same configuration, same client')
      assert.notEqual(withToken.client, first.client, 'another token, another client')

      await first.release()
      await first.release() // a second release of the same reference changes nothing
      assert.ok(E.isRight(await list(second.client)))

      // The last user lets go; one that comes within the grace gets the same client, and the
      // close is off. The witness: another client let go after it, with the same grace, closes
      // (its timer fires after the called-off one would have), and this one still answers.
      await second.release()
      const back = borrowDefaultClient({ env }, 100)
      assert.equal(back.client, first.client, 'a user within the grace gets the same client')
      await withToken.release()
      assert.ok(await closedLater(withToken.client), 'the witness closed after its grace')
      assert.ok(E.isRight(await list(back.client)), 'the close was called off')

      // With no user back, the client closes once the grace is over (waited for, not slept on).
      await back.release()
      assert.ok(await closedLater(back.client), 'closed after the grace')

      const next = borrowDefaultClient({ env })
      try {
        assert.notEqual(next.client, first.client, 'a later user gets a new client')
        assert.ok(E.isRight(await list(next.client)))
      } finally {
        await next.release()
      }
      // closeIdleDefaultClients closes an idle one now, and leaves one in use alone.
      const inUse = borrowDefaultClient({ env: { ...env, CONSUL_HTTP_TOKEN: 'in use' } })
      try {
        await closeIdleDefaultClients()
        const idle = await list(next.client)
        assert.ok(E.isLeft(idle) && idle.left._tag === 'Aborted', 'the idle one is closed')
        const fresh = borrowDefaultClient({ env }, 0)
        assert.notEqual(fresh.client, next.client, 'and forgotten: the next user gets a new one')
        await fresh.release()
        const gone = await list(fresh.client)
        assert.ok(E.isLeft(gone) && gone.left._tag === 'Aborted', 'a grace of 0 closes at once')
        const used = await list(inUse.client)
        assert.ok(!(E.isLeft(used) && used.left._tag === 'Aborted'), 'the one in use is open')
      } finally {
        await inUse.release()
      }
    } finally {
      await first.release()
      await second.release()
      await withToken.release()
      await closeIdleDefaultClients()
    }
  })
})
