// withSlot: the Promise helper for callers who do not use RxJS.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SemaphoreError, createConsulClient, semaphore, withSlot } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { testPrefix } from '../support/tracked.js'
import {
  SEMAPHORE_FLAGS,
  eventually,
  listPrefix,
  noSessionsNamed,
  putRaw,
  readLock,
  sessionsNamed,
} from '../support/observe.js'

/** The kind of a rejection, failing the test if it is not a SemaphoreError. */
async function rejectionKind(promise: Promise<unknown>): Promise<SemaphoreError> {
  const error: unknown = await promise.then(
    () => assert.fail('resolved, but a rejection was expected'),
    (rejected: unknown) => rejected,
  )
  assert.ok(error instanceof SemaphoreError, String(error))
  return error
}

describe('withSlot', () => {
  const agent = agentSuite()

  it('runs many jobs of a process on at most limit sessions, each under a token of its own, greater than that of every job that ended before it started', async (t) => {
    const prefix = testPrefix(t, agent.url, 'with-slot-pool')
    const name = `pool ${prefix}`
    const seen = new Set<string>()
    let running = 0
    let most = 0
    /** Each job's token, and the greatest token of the jobs that had ended when it started. */
    const jobs: { token: bigint; endedBefore: bigint | undefined }[] = []
    let ended: bigint | undefined
    await Promise.all(
      Array.from({ length: 30 }, () =>
        withSlot({ prefix, limit: 2, consul: agent.client, sessionName: name }, async (_, slot) => {
          const token = slot.assertHolding()
          jobs.push({ token, endedBefore: ended })
          most = Math.max(most, ++running)
          for (const session of await sessionsNamed(agent.url, name)) seen.add(session.ID)
          running--
          if (ended === undefined || token > ended) ended = token
        }),
      ),
    )
    assert.equal(jobs.length, 30)
    assert.ok(most <= 2, `${most} jobs ran at once`)
    assert.ok(seen.size <= 2, `${seen.size} sessions for 30 jobs at limit 2`)
    assert.equal(new Set(jobs.map((job) => job.token)).size, 30, 'a token of its own per job')
    for (const [i, job] of jobs.entries()) {
      assert.ok(
        job.endedBefore === undefined || job.token > job.endedBefore,
        `job ${i} started under ${job.token} after a job under ${job.endedBefore} had ended`,
      )
    }
    await noSessionsNamed(agent.url, name)
  })

  it('gives every job a token no other job ran under, across processes that share the limit', async (t) => {
    // Three clients are three processes: each has its own watch of the prefix and its own view of
    // `.lock` beyond it (its writes' answers). Their slots change hands between them all along.
    const prefix = testPrefix(t, agent.url, 'with-slot-fleet')
    const clients = [0, 1, 2].map(() => createConsulClient({ address: agent.addr }))
    const name = `fleet ${prefix}`
    const tokens = new Map<string, string>()
    const shared: string[] = []
    let running = 0
    let most = 0
    try {
      await Promise.all(
        clients.flatMap((consul, p) =>
          Array.from({ length: 150 }, (_, j) =>
            withSlot({ prefix, limit: 4, consul, sessionName: name }, async (_, slot) => {
              const token = String(slot.assertHolding())
              const other = tokens.get(token)
              if (other !== undefined) shared.push(`${token}: ${other} and p${p} job ${j}`)
              tokens.set(token, `p${p} job ${j}`)
              most = Math.max(most, ++running)
              await new Promise((done) => setTimeout(done, 1 + (j % 3)))
              running--
            }),
          ),
        ),
      )
    } finally {
      await Promise.all(clients.map((client) => client.close()))
    }
    assert.deepEqual(shared, [], 'jobs that ran under the same token')
    assert.equal(tokens.size, 450)
    assert.ok(most <= 4, `${most} jobs ran at once at limit 4`)
    await noSessionsNamed(agent.url, name)
  })

  it('hands a slot of a process that holds several to the first job of a process that holds none, when a job ends', async (t) => {
    // Two processes in one: the contender keys' values tell them apart. A holds both slots with
    // a1 and a2, and a3 waits in A; then B arrives with b1. When a1 ends, well within A's 200 ms
    // quantum, its slot goes to b1, not to a3.
    const prefix = testPrefix(t, agent.url, 'with-slot-turns')
    const a = { prefix, limit: 2, consul: agent.client, sessionName: `A ${prefix}`, value: 'A' }
    const b = { ...a, sessionName: `B ${prefix}`, value: 'B' }
    const started: string[] = []
    const ends = new Map<string, () => void>()
    const job = (name: string) => () =>
      new Promise<void>((done) => {
        started.push(name)
        ends.set(name, done)
      })
    const jobs = ['a1', 'a2', 'a3'].map((name) => withSlot(a, job(name)))
    try {
      await eventually('a1 and a2 running', () => (started.length === 2 ? true : undefined))
      jobs.push(withSlot(b, job('b1')))
      await eventually('B in the line', async () => {
        const keys = (await listPrefix(agent.url, prefix)).filter((e) => !e.Key.endsWith('/.lock'))
        return keys.length === 3 ? true : undefined
      })
      ends.get(started[0] ?? '')?.()
      await eventually('the next job', () => (started.length === 3 ? true : undefined))
      assert.equal(started[2], 'b1', `started in this order: ${started.join(', ')}`)
    } finally {
      // Every job ends as soon as it starts from now on.
      const ending = setInterval(() => ends.forEach((done) => done()), 10)
      await Promise.allSettled(jobs)
      clearInterval(ending)
    }
    await noSessionsNamed(agent.url, a.sessionName)
    await noSessionsNamed(agent.url, b.sessionName)
  })

  it('runs the work while the slot is held and releases it afterwards', async (t) => {
    const prefix = testPrefix(t, agent.url, 'with-slot')
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
    await noSessionsNamed(agent.url, name)
    assert.deepEqual((await readLock(agent.url, prefix))?.body, { Limit: 1, Holders: {} })
  })

  it('aborts the signal when the slot is lost, and rejects with what the work threw', async (t) => {
    const prefix = testPrefix(t, agent.url, 'with-slot-lost')
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

  describe('waitTimeout bounds the wait alone; signal cancels the wait or the work', () => {
    /** A holder of the only slot of `prefix`, held once this resolves; `t.after`-style stop. */
    async function holdTheSlot(prefix: string) {
      const holder = semaphore({ prefix, limit: 1, consul: agent.client })
      const sub = holder.holding$.subscribe()
      await eventually('the other holder holds', async () =>
        (await readLock(agent.url, prefix)) ? true : undefined,
      )
      return async () => {
        await holder.close()
        sub.unsubscribe()
      }
    }

    it('lets work that outlasts waitTimeout run to its end', async (t) => {
      const prefix = testPrefix(t, agent.url, 'wait-timeout-long-work')
      const name = `long work ${prefix}`
      let abortedDuringWork = false
      const result = await withSlot(
        { prefix, limit: 1, consul: agent.client, sessionName: name, waitTimeout: '300ms' },
        async (signal) => {
          // Three times the wait's bound, the signal watched throughout.
          const onAbort = (): void => void (abortedDuringWork = true)
          signal.addEventListener('abort', onAbort)
          await new Promise((resolve) => setTimeout(resolve, 900))
          signal.removeEventListener('abort', onAbort)
          return signal.aborted ? 'aborted' : 'finished'
        },
      )
      assert.equal(result, 'finished')
      assert.equal(abortedDuringWork, false)
      await noSessionsNamed(agent.url, name)
    })

    it('rejects with WaitTimeout when no slot came within it, leaving no session or key', async (t) => {
      const prefix = testPrefix(t, agent.url, 'wait-timeout')
      const name = `timed out ${prefix}`
      const stopHolder = await holdTheSlot(prefix)
      try {
        let ran = false
        const started = Date.now()
        const error = await rejectionKind(
          withSlot(
            { prefix, limit: 1, consul: agent.client, sessionName: name, waitTimeout: 500 },
            () => {
              ran = true
              return Promise.resolve()
            },
          ),
        )
        const waitedMs = Date.now() - started
        assert.equal(error.kind, 'WaitTimeout')
        assert.ok(waitedMs >= 490, `rejected after ${waitedMs} ms`)
        assert.match(
          error.message,
          new RegExp(`no slot of ${prefix} was free within the waitTimeout of 500ms`),
        )
        assert.match(error.message, /Try again later, allow a longer waitTimeout/)
        assert.equal(ran, false)
        // Counted the moment the promise settled: the waiter's key is gone (its session, which
        // holds nothing, lingers for the process's next job, then goes).
        await noSessionsNamed(agent.url, name)
        const keys = (await listPrefix(agent.url, prefix)).map((entry) => entry.Key)
        assert.equal(keys.length, 2, `only .lock and the holder's key are left: ${keys.join(', ')}`)
      } finally {
        await stopHolder()
      }
    })

    it('still lets the signal abort the wait, with another kind than WaitTimeout', async (t) => {
      const prefix = testPrefix(t, agent.url, 'wait-signal')
      const name = `aborted ${prefix}`
      const stopHolder = await holdTheSlot(prefix)
      try {
        const error = await rejectionKind(
          withSlot(
            {
              prefix,
              limit: 1,
              consul: agent.client,
              sessionName: name,
              waitTimeout: '1m',
              signal: AbortSignal.timeout(300),
            },
            () => Promise.resolve(),
          ),
        )
        assert.equal(error.kind, 'Aborted')
        assert.notEqual(error.kind, 'WaitTimeout')
        assert.match(error.message, /waiting for a slot was aborted by its signal \(TimeoutError/)
        assert.match(error.message, /use waitTimeout instead/)
        await noSessionsNamed(agent.url, name)
      } finally {
        await stopHolder()
      }
    })

    it('still lets the signal abort the work, which waitTimeout never does', async (t) => {
      const prefix = testPrefix(t, agent.url, 'work-signal')
      const name = `work aborted ${prefix}`
      const reason = await withSlot(
        {
          prefix,
          limit: 1,
          consul: agent.client,
          sessionName: name,
          waitTimeout: '5s',
          signal: AbortSignal.timeout(500),
        },
        async (signal) => {
          await eventually('the work is aborted', () => (signal.aborted ? true : undefined), 5000)
          return signal.reason as unknown
        },
      )
      assert.ok(reason instanceof SemaphoreError, String(reason))
      assert.equal(reason.kind, 'Aborted')
      assert.match(reason.message, /the work holding a slot was aborted by its signal/)
      await noSessionsNamed(agent.url, name)
    })
  })
})
