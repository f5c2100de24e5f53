// `evict` takes a holder out of a prefix whoever it is: a contender of ours (its holding$ turns
// false, the next holder's fencing token is above the floor and the evicted one's below it),
// `consul lock -n` (Go's monitor sees itself no longer listed and stops its child) and
// `consul lock` (its session destroyed, the leader lock released). A session that does not hold is
// refused with nothing written; a CAS lost to a concurrent write is read again and retried.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom, ReplaySubject, tap, timeout } from 'rxjs'
import {
  createConsulClient,
  evict,
  leaderElection,
  semaphore,
  SemaphoreError,
  type ConsulClient,
  type LeaderElectionState,
} from '../../src/index.js'
import { holdingConsulLock, startConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import {
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  SEMAPHORE_FLAGS,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { keep, onEnd, testPrefix, tracked } from '../support/tracked.js'

describe('evict', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  it('takes a holder of ours out: its holding$ turns false, and the floor lies between its fencing token and the next holder’s', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-ours')
    const a = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client, value: 'a' })).when
    const held = await a((s) => s.holding)
    const b = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client, value: 'b' })).when
    const waiting = await b((s) => s.rank === 0)

    const eviction = await evict({ prefix, session: held.session ?? '', consul: agent.client })
    assert.equal(eviction.lock, 'semaphore')
    assert.equal(eviction.session, held.session)
    const lost = await a((s) => !s.holding)
    assert.equal(lost.holding, false)
    const next = await b((s) => s.holding)
    assert.ok(
      (held.fencingToken ?? 0n) < eviction.floor,
      `the evicted token ${held.fencingToken} is below the floor ${eviction.floor}`,
    )
    assert.ok(
      eviction.floor < (next.fencingToken ?? 0n),
      `the next token ${next.fencingToken} is above the floor ${eviction.floor}`,
    )
    assert.equal(next.session, waiting.session)
  })

  it('wakes the first waiter of ours, alone on its client: it takes the freed slot before the evicted process, contending again behind it, could', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-wake')
    // Each on a client of its own, so each long-polls only its own key (`watchTarget`'s `own`).
    const clients = [1, 2].map(() => createConsulClient({ address: agent.addr }))
    // Closed after the contenders on them (clean-ups run last registered first).
    onEnd(t, () => Promise.all(clients.map((c) => c.close())))
    const a = tracked(t, semaphore({ prefix, limit: 1, consul: clients[0], value: 'a' })).when
    const held = await a((s) => s.holding)
    const b = tracked(t, semaphore({ prefix, limit: 1, consul: clients[1], value: 'b' })).when
    const waiting = await b((s) => s.rank === 0)

    const eviction = await evict({ prefix, session: held.session ?? '', consul: agent.client })
    // Not woken, b would see the slot free only at its recheck, 5 s on; a, evicted, joins again
    // behind it and takes a slot left free for its fairness grace (2 s).
    const next = await Promise.race([
      b((s) => s.holding).then((s) => ({ who: 'b', state: s })),
      a((s) => s.holding && s.session !== held.session).then((s) => ({ who: 'a', state: s })),
    ])
    assert.equal(next.who, 'b', 'the waiter first in line holds next')
    assert.equal(next.state.session, waiting.session)
    assert.ok(
      eviction.floor < (next.state.fencingToken ?? 0n),
      `its token ${next.state.fencingToken} is above the floor ${eviction.floor}: it took the slot by its own write`,
    )
  })

  it('leaves a consul lock -n waiter first in line to take the freed slot, and wakes none of ours behind it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-go-first')
    const other = createConsulClient({ address: agent.addr })
    onEnd(t, () => other.close())
    const a = tracked(t, semaphore({ prefix, limit: 2, consul: agent.client, value: 'a' })).when
    const held = await a((s) => s.holding)
    const c = tracked(t, semaphore({ prefix, limit: 2, consul: agent.client, value: 'c' })).when
    const ours = [held.session, (await c((s) => s.holding)).session]
    const go = startConsulLock(agent.addr, ['-n=2', prefix, 'echo started; exec sleep 300'])
    onEnd(t, () => stopAllConsulLocks([go]))
    // Go waits once its contender key is there: a key locked by another session than ours.
    const goKey = await eventually(
      'consul lock waiting',
      async () =>
        (await listPrefix(agent.url, prefix)).find(
          (e) => e.Session !== undefined && !ours.includes(e.Session),
        ),
      30_000,
    )
    const b = tracked(t, semaphore({ prefix, limit: 2, consul: other, value: 'b' })).when
    const behind = await b((s) => s.rank === 1)
    const keyOf = async (session: string | undefined) =>
      (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/${session}`)
    const before = await keyOf(behind.session)

    await evict({ prefix, session: held.session ?? '', consul: agent.client })
    await eventually(
      'consul lock holding',
      async () =>
        holdersOf((await readLock(agent.url, prefix))?.body).includes(goKey.Session ?? '') ||
        undefined,
      30_000,
    )
    assert.equal(
      (await keyOf(behind.session))?.ModifyIndex,
      before?.ModifyIndex,
      'our waiter behind Go’s was not written',
    )
    assert.equal((await b(() => true)).holding, false)
  })

  it('refuses a session that does not hold, a waiter’s or an unknown one, and writes nothing', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-not-holder')
    const a = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client, value: 'a' })).when
    await a((s) => s.holding)
    const b = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client, value: 'b' })).when
    const waiter = await b((s) => s.rank === 0)
    const before = await readLock(agent.url, prefix)

    for (const session of [waiter.session ?? '', '00000000-0000-0000-0000-000000000000']) {
      await assert.rejects(
        evict({ prefix, session, consul: agent.client }),
        (error: unknown) =>
          error instanceof SemaphoreError &&
          error.kind === 'NotHolder' &&
          error.message.includes(`session ${session} is not a holder of ${prefix}`) &&
          /Nothing was written/.test(error.message),
      )
    }
    assert.deepEqual(await readLock(agent.url, prefix), before, '.lock is as it was')
    assert.equal((await b(() => true)).rank, 0, 'the waiter still waits')
    assert.equal((await a(() => true)).holding, true, 'the holder still holds')
  })

  it('reads .lock again and retries when a concurrent write wins the CAS, keeping that write', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-cas')
    // A holder made by hand, not a contender: a contender evicted would contend again with a new
    // session and rewrite .lock (pruning the ghost) before the check below could read it.
    const holder = await createRawSession(agent.url, { Name: 'evict-cas holder', TTL: '60s' })
    onEnd(t, () => destroyRawSession(agent.url, holder))
    assert.equal(
      await putRaw(
        agent.url,
        `${prefix}/${holder}`,
        'h',
        `acquire=${holder}&flags=${SEMAPHORE_FLAGS}`,
      ),
      true,
    )
    const listed = JSON.stringify({ Limit: 2, Holders: { [holder]: true } })
    assert.equal(
      await putRaw(agent.url, `${prefix}/.lock`, listed, `cas=0&flags=${SEMAPHORE_FLAGS}`),
      true,
    )
    const ghost = '11111111-2222-3333-4444-555555555555'
    // The first transaction of evict finds .lock changed under it: another writer lists a ghost
    // holder between evict's read and its CAS.
    let txns = 0
    const racing: ConsulClient = {
      ...agent.client,
      kv: {
        ...agent.client.kv,
        txn: (ops, options) => async () => {
          txns++
          if (txns === 1) {
            // By CAS too, read again if .lock changed meanwhile: the write must go in.
            const put = await eventually('the concurrent write in', async () => {
              const lock = await readLock(agent.url, prefix)
              const holders = [...holdersOf(lock?.body), ghost]
              const body = JSON.stringify({
                Limit: 2,
                Holders: Object.fromEntries(holders.map((h) => [h, true])),
              })
              const query = `cas=${lock?.entry.ModifyIndex}&flags=${SEMAPHORE_FLAGS}`
              return (await putRaw(agent.url, `${prefix}/.lock`, body, query)) || undefined
            })
            assert.equal(put, true)
          }
          return agent.client.kv.txn(ops, options)()
        },
      },
    }
    const eviction = await evict({ prefix, session: holder, consul: racing })
    assert.ok(txns >= 2, `a lost CAS, then one that won (${txns} transactions)`)
    const after = await readLock(agent.url, prefix)
    assert.deepEqual(holdersOf(after?.body), [ghost], 'the evicted session is gone, the ghost kept')
    assert.equal(BigInt(after?.entry.ModifyIndex ?? 0), eviction.floor)
  })

  it('takes a consul lock -n holder out: Go’s monitor stops its child and consul lock ends', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-go')
    const { go, session } = await holdingConsulLock(t, agent, prefix)
    const eviction = await evict({ prefix, session, consul: agent.client })
    assert.equal(eviction.lock, 'semaphore')
    const code = await Promise.race([
      go.exited,
      new Promise<string>((done) => setTimeout(() => done('still running'), 20_000)),
    ])
    assert.notEqual(code, 'still running', 'consul lock ended once its slot was taken')
    // consul lock exits 0 after a lost lock; what tells is its child's end.
    assert.match(go.stderr(), /signal: terminated/, 'its child was stopped with SIGTERM')
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [])
  })

  it('takes a consul lock (leader) holder out: its session destroyed, .lock released, the floor above its acquisition and below the next leader’s token', async (t) => {
    const prefix = testPrefix(t, agent.url, 'evict-leader')
    const go = startConsulLock(agent.addr, [prefix, 'echo started; exec sleep 300'])
    onEnd(t, () => stopAllConsulLocks([go]))
    const acquired = await eventually(
      'consul lock holding',
      async () => {
        const lock = await readLock(agent.url, prefix).catch(() => undefined)
        return lock?.entry.Session === undefined ? undefined : lock.entry
      },
      30_000,
    )
    const leader = leaderElection({ prefix, consul: agent.client, value: 'next' })
    onEnd(t, () => leader.close())
    // What the next leader went through, for the message should it not lead in time.
    const started = performance.now()
    const seen: string[] = []
    const states = new ReplaySubject<LeaderElectionState>(1)
    keep(
      t,
      leader.state$
        .pipe(
          tap((s) => {
            const at = (performance.now() - started).toFixed(0)
            const who = s.leader === null ? 'no one' : `session ${s.leader.session}`
            const { lastError: e } = s
            const error = e === undefined ? '' : `, failing ${e.during}: ${e.message}`
            seen.push(`${at} ms: session ${s.session}, holding ${s.holding}, led by ${who}${error}`)
          }),
        )
        .subscribe(states),
    )
    const eviction = await evict({ prefix, session: acquired.Session ?? '', consul: agent.client })
    assert.equal(eviction.lock, 'leader')
    assert.ok(
      BigInt(acquired.ModifyIndex) < eviction.floor,
      `the evicted acquisition ${acquired.ModifyIndex} is below the floor ${eviction.floor}`,
    )
    const code = await Promise.race([
      go.exited,
      new Promise<string>((done) => setTimeout(() => done('still running'), 20_000)),
    ])
    assert.notEqual(code, 'still running', 'consul lock ended once its lock was released')
    // The next leader waits out the evicted session's lock-delay (Go's default, 15 s), then
    // takes the key within about a second (its retries back off to 1 s).
    const next = await firstValueFrom(
      states.pipe(
        filter((s) => s.holding),
        timeout({
          first: 60_000,
          with: async () =>
            assert.fail(
              `no next leader 60 s after the eviction; its states: ${seen.join('; ')}; ` +
                `the prefix: ${JSON.stringify(await listPrefix(agent.url, prefix))}`,
            ),
        }),
      ),
    )
    assert.ok(
      eviction.floor < (next.fencingToken ?? 0n),
      `the next leader's token ${next.fencingToken} is above the floor ${eviction.floor}`,
    )
    await destroyRawSession(agent.url, acquired.Session ?? '')
  })
})
