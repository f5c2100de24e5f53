// Cooperative revoke on the real agent: `evict` with a grace asks the holder first. A `withSlot`
// job whose work honours its signal gives the slot back within the grace and is not forced; one
// that ignores it is forced when the grace ends; a `consul lock -n` holder, which cannot see the
// request, is forced when the grace ends. A `semaphore()` holder and a leader see the request in
// their state and give back with close(). The request is withdrawn whatever happened.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom, type Observable } from 'rxjs'
import { evict, leaderElection, semaphore, SemaphoreError, withSlot } from '../../src/index.js'
import {
  childStarted,
  holdingConsulLock,
  startConsulLock,
  stopAllConsulLocks,
} from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { eventually, holdersOf, listPrefix, readLock } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { keep, onEnd, testPrefix, tracked, type Scope } from '../support/tracked.js'

describe('cooperative revoke (evict with a grace)', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  /** The revoke requests left under the prefix. */
  const requests = async (prefix: string) =>
    (await listPrefix(agent.url, prefix)).filter((e) => e.Key.includes('/.lock.revoke/'))

  /** Closes `handle` as soon as its state says it was asked to give its slot back. */
  const givesBackWhenAsked = (
    t: Scope,
    handle: {
      readonly state$: Observable<{ readonly revokeRequested?: unknown }>
      close(): Promise<void>
    },
  ) =>
    keep(
      t,
      handle.state$
        .pipe(filter((s) => s.revokeRequested !== undefined))
        .subscribe(() => void handle.close()),
    )

  /** Starts a withSlot job that reports its start, and returns its session as Consul lists it. */
  const holdingJob = async (
    prefix: string,
    work: (signal: AbortSignal) => Promise<string>,
  ): Promise<{
    readonly session: string
    readonly fencingToken: bigint | undefined
    readonly result: Promise<string>
  }> => {
    let started!: () => void
    let fencingToken: bigint | undefined
    const running = new Promise<void>((resolve) => (started = resolve))
    const result = withSlot({ prefix, limit: 1, consul: agent.client }, (signal, slot) => {
      fencingToken = slot.assertHolding()
      started()
      return work(signal)
    })
    result.catch(() => undefined)
    await running
    const session = await eventually(
      'the job’s session in .lock',
      async () => holdersOf((await readLock(agent.url, prefix))?.body)[0],
    )
    return { session, fencingToken, result }
  }

  it('a withSlot job that honours its signal gives the slot back within a grace of 1 s and is not forced; the next job runs', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-honoured')
    let reason: unknown
    const first = await holdingJob(
      prefix,
      (signal) =>
        new Promise<string>((resolve) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason
            resolve('stopped')
          })
        }),
    )
    // A second job of the same process waits: it must still run once the slot went back.
    const second = withSlot({ prefix, limit: 1, consul: agent.client }, () =>
      Promise.resolve('second ran'),
    )

    const eviction = await evict({
      prefix,
      session: first.session,
      grace: '1s',
      reason: 'rolling restart',
      consul: agent.client,
    })
    assert.equal(eviction.how, 'given-back', 'given back within the grace: not forced')
    assert.equal(eviction.lock, 'semaphore')
    assert.ok(reason instanceof SemaphoreError && reason.kind === 'RevokeRequested', String(reason))
    assert.match(reason.message, /rolling restart/)
    assert.equal(await first.result, 'stopped')
    assert.equal(await second, 'second ran')
    // The session the request named is destroyed, not kept for the pool's next worker.
    const info = await fetch(`${agent.url}/v1/session/info/${first.session}`)
    assert.deepEqual((await info.json()) ?? [], [], 'the asked session is gone')
    assert.deepEqual(await requests(prefix), [], 'the request is withdrawn')
  })

  it('a withSlot job that ignores its signal is forced when the grace ends', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-ignored')
    let signalled: unknown
    let finish!: () => void
    const done = new Promise<void>((resolve) => (finish = resolve))
    onEnd(t, () => finish())
    const job = await holdingJob(prefix, async (signal) => {
      signal.addEventListener('abort', () => {
        signalled ??= signal.reason as unknown
      })
      await done
      return 'ignored'
    })
    const asked = Date.now()
    const eviction = await evict({ prefix, session: job.session, grace: 500, consul: agent.client })
    const took = Date.now() - asked
    assert.equal(eviction.how, 'forced')
    assert.ok(took >= 500, `forced after the grace, not before (${took} ms)`)
    assert.ok(
      signalled instanceof SemaphoreError && signalled.kind === 'RevokeRequested',
      `asked first (${String(signalled)})`,
    )
    // Its session is destroyed: `.lock` may still name it (a contender that saw itself taken out
    // before the destroy may have taken a free slot again), until the next writer prunes it.
    const info = await fetch(`${agent.url}/v1/session/info/${job.session}`)
    assert.deepEqual((await info.json()) ?? [], [], 'the evicted session is gone')
    assert.ok(
      (job.fencingToken ?? 0n) < eviction.floor,
      `the job's token ${job.fencingToken} is below the floor ${eviction.floor}`,
    )
    finish()
    await job.result.catch(() => undefined)
    assert.deepEqual(await requests(prefix), [], 'the request is withdrawn')
  })

  it('a consul lock -n holder, which cannot see the request, is forced when the grace ends', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-go')
    const { go, session } = await holdingConsulLock(t, agent, prefix)
    const asked = Date.now()
    const eviction = await evict({ prefix, session, grace: 500, consul: agent.client })
    const took = Date.now() - asked
    assert.equal(eviction.how, 'forced')
    assert.ok(took >= 500, `forced after the grace, not before (${took} ms)`)
    const code = await Promise.race([
      go.exited,
      new Promise<string>((done) => setTimeout(() => done('still running'), 20_000)),
    ])
    assert.notEqual(code, 'still running', 'consul lock ended once its slot was taken')
    assert.deepEqual(await requests(prefix), [], 'the request is withdrawn')
  })

  it('a semaphore() holder sees the request in its state, and gives back with close()', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-state')
    const sem = semaphore({ prefix, limit: 1, consul: agent.client })
    const a = tracked(t, sem).when
    const held = await a((s) => s.holding)
    assert.equal(held.revokeRequested, undefined, 'no request yet')
    const eviction = evict({
      prefix,
      session: held.session ?? '',
      grace: '30s',
      reason: 'maintenance',
      consul: agent.client,
    })
    const asked = await a((s) => s.revokeRequested !== undefined)
    assert.deepEqual(asked.revokeRequested, { graceMs: 30_000, reason: 'maintenance' })
    assert.equal(asked.holding, true, 'still held while it stops its work')
    await sem.close()
    const done = await eviction
    assert.equal(done.how, 'given-back')
    assert.ok((held.fencingToken ?? 0n) < done.floor, 'its token is below the floor')
    assert.deepEqual(await requests(prefix), [])
  })

  it('a leader sees the request in its state, and steps down with close()', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-leader')
    const election = leaderElection({ prefix, consul: agent.client, value: 'a' })
    onEnd(t, () => election.close())
    // Subscribed throughout: the last unsubscribe would step down.
    keep(t, election.state$.subscribe())
    const leading = await firstValueFrom(election.state$.pipe(filter((s) => s.holding)))
    const eviction = evict({
      prefix,
      session: leading.session ?? '',
      grace: '30s',
      consul: agent.client,
    })
    const asked = await firstValueFrom(
      election.state$.pipe(filter((s) => s.revokeRequested !== undefined)),
    )
    assert.deepEqual(asked.revokeRequested, { graceMs: 30_000, reason: undefined })
    await election.close()
    const done = await eviction
    assert.equal(done.how, 'given-back')
    assert.equal(done.lock, 'leader')
    assert.deepEqual(await requests(prefix), [])
  })

  it('beside consul lock -n first in line: our holder gives back on request, the Go waiter takes the slot, and Go counts two holders of two', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-go-waiter')
    const sem = semaphore({ prefix, limit: 2, consul: agent.client, value: 'ours' })
    const ours = tracked(t, sem).when
    const held = await ours((s) => s.holding)
    const other = tracked(
      t,
      semaphore({ prefix, limit: 2, consul: agent.client, value: 'other' }),
    ).when
    await other((s) => s.holding)
    // Go's contender queues first (consul lock -n 1 would be the single-key lock), then one of
    // ours behind it.
    const go = startConsulLock(agent.addr, ['-n=2', prefix, 'echo started; exec sleep 300'])
    onEnd(t, () => stopAllConsulLocks([go]))
    await ours((s) => s.holders.length === 2 && s.waiting.length === 1)
    const behind = tracked(
      t,
      semaphore({ prefix, limit: 2, consul: agent.client, value: 'behind' }),
    ).when
    await behind((s) => s.rank === 1)
    // Our holder gives back when asked, as a program that honours the request does.
    givesBackWhenAsked(t, sem)
    const eviction = await evict({
      prefix,
      session: held.session ?? '',
      grace: '30s',
      consul: agent.client,
    })
    assert.equal(eviction.how, 'given-back')
    await childStarted(go)
    const lock = await readLock(agent.url, prefix)
    assert.equal(holdersOf(lock?.body).length, 2, 'two holders of two in Go’s count')
    assert.ok(!holdersOf(lock?.body).includes(held.session ?? ''), 'the asked holder is out')
    assert.equal((await behind(() => true)).holding, false, 'ours behind it still waits')
    await stopAllConsulLocks([go])
    await behind((s) => s.holding)
  })

  it('beside consul lock waiting for the leader lock: our leader steps down on request and the Go waiter leads', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-go-leader')
    const election = leaderElection({ prefix, consul: agent.client, value: 'ours' })
    onEnd(t, () => election.close())
    givesBackWhenAsked(t, election)
    const leading = await firstValueFrom(election.state$.pipe(filter((s) => s.holding)))
    const go = startConsulLock(agent.addr, [prefix, 'echo started; exec sleep 300'])
    onEnd(t, () => stopAllConsulLocks([go]))
    // consul lock names its session after the command: it waits once its session exists.
    await eventually('consul lock waiting', async () => {
      const sessions = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as {
        Name: string
      }[]
      return sessions.some((s) => s.Name.includes(prefix)) ? true : undefined
    })
    const eviction = await evict({
      prefix,
      session: leading.session ?? '',
      grace: '30s',
      consul: agent.client,
    })
    assert.equal(eviction.how, 'given-back')
    assert.equal(eviction.lock, 'leader')
    await childStarted(go)
    const lock = await readLock(agent.url, prefix)
    assert.notEqual(lock?.entry.Session, leading.session)
    assert.deepEqual(await requests(prefix), [])
  })

  it('refuses a session that does not hold before it asks anything, and an abort withdraws the request', async (t) => {
    const prefix = testPrefix(t, agent.url, 'revoke-refused')
    const a = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client })).when
    const held = await a((s) => s.holding)
    const b = tracked(t, semaphore({ prefix, limit: 1, consul: agent.client })).when
    const waiter = await b((s) => s.rank === 0)
    await assert.rejects(
      evict({ prefix, session: waiter.session ?? '', grace: '30s', consul: agent.client }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'NotHolder',
    )
    assert.deepEqual(await requests(prefix), [], 'nothing was asked')

    const abort = new AbortController()
    const eviction = evict({
      prefix,
      session: held.session ?? '',
      grace: '30s',
      consul: agent.client,
      signal: abort.signal,
    })
    await a((s) => s.revokeRequested !== undefined)
    abort.abort()
    await assert.rejects(
      eviction,
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'Aborted',
    )
    assert.deepEqual(await requests(prefix), [], 'the request is withdrawn')
    const after = await a((s) => s.revokeRequested === undefined)
    assert.equal(after.holding, true, 'the holder, never forced, still holds')
  })
})
