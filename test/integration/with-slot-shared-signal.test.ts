// One AbortSignal for many withSlot jobs of a process (a shutdown signal, one AbortSignal.timeout
// for a batch): the jobs must not add a listener each to it, or Node warns of a leak past ten
// (MaxListenersExceededWarning); and an abort of that one signal still reaches every job.
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { describe, it, type TestContext } from 'node:test'
import { SemaphoreError, withSlot } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import {
  eventually,
  holdersOf,
  listPrefix,
  noSessionsNamed,
  readLock,
  sessionsNamed,
  sleep,
} from '../support/observe.js'

/** The leak warnings this process emits from now until the test ends. */
function leakWarnings(t: TestContext): Error[] {
  const seen: Error[] = []
  const onWarning = (warning: Error): void => {
    if (warning.name === 'MaxListenersExceededWarning') seen.push(warning)
  }
  process.on('warning', onWarning)
  onEnd(t, () => process.off('warning', onWarning))
  return seen
}

/** Resolves after the warnings emitted so far were delivered (emitWarning defers to a tick). */
const warningsDelivered = (): Promise<void> => new Promise((done) => setImmediate(done))

describe('withSlot jobs sharing one AbortSignal', () => {
  const agent = agentSuite()

  it('runs 50 jobs on one signal with no MaxListenersExceededWarning, and leaves no listener on it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'shared-signal')
    const name = `shared signal ${prefix}`
    const warnings = leakWarnings(t)
    const shutdown = new AbortController()
    const options = {
      prefix,
      limit: 5,
      consul: agent.client,
      sessionName: name,
      signal: shutdown.signal,
    }
    let running = 0
    let mostRunning = 0
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        withSlot(options, async (signal) => {
          running++
          mostRunning = Math.max(mostRunning, running)
          await sleep(5) // the job's hold
          running--
          return signal.aborted ? -1 : i
        }),
      ),
    )
    await warningsDelivered()
    assert.deepEqual(
      warnings.map((w) => w.message),
      [],
      'no leak warning for one signal shared by 50 jobs',
    )
    assert.deepEqual(
      results,
      Array.from({ length: 50 }, (_, i) => i),
      'every job ran, unaborted',
    )
    assert.ok(mostRunning <= 5, `at most 5 jobs at once, saw ${mostRunning}`)
    assert.equal(
      getEventListeners(shutdown.signal, 'abort').length,
      0,
      'no listener left on the signal once every job settled',
    )
    await noSessionsNamed(agent.url, name)
  })

  it('an abort of the one signal stops the 2 jobs holding and rejects the 48 waiting with Aborted, with no warning', async (t) => {
    const prefix = testPrefix(t, agent.url, 'shared-signal-abort')
    const name = `shared signal abort ${prefix}`
    const warnings = leakWarnings(t)
    const shutdown = new AbortController()
    onEnd(t, () => shutdown.abort()) // settles every job if an assertion fails first
    const options = {
      prefix,
      limit: 2,
      consul: agent.client,
      sessionName: name,
      signal: shutdown.signal,
    }
    let started = 0
    const jobs = Array.from({ length: 50 }, () =>
      withSlot(options, async (signal) => {
        started++
        // Holds until its signal aborts, then fails with the reason, as work that stops does.
        await new Promise((done) => signal.addEventListener('abort', done, { once: true }))
        throw signal.reason
      }).then(
        () => assert.fail('a job resolved, but every job was to be aborted'),
        (error: unknown) => error,
      ),
    )
    await eventually('two jobs hold', () => (started === 2 ? true : undefined), 30_000)
    const reason = new Error('shutting down')
    shutdown.abort(reason)
    const errors = await Promise.all(jobs)
    await warningsDelivered()

    assert.deepEqual(
      warnings.map((w) => w.message),
      [],
      'no leak warning for one signal shared by 50 jobs',
    )
    assert.equal(started, 2, 'no job started after the abort')
    for (const error of errors) {
      assert.ok(error instanceof SemaphoreError, String(error))
      assert.equal(error.kind, 'Aborted', error.message)
      assert.equal(error.cause, reason, "the Aborted error's cause is the signal's reason")
    }
    await eventually(
      'no session or contender key of the jobs left, no holder in .lock',
      async () => {
        const sessions = await sessionsNamed(agent.url, name)
        const keys = (await listPrefix(agent.url, prefix)).filter(
          (e) => e.Key !== `${prefix}/.lock`,
        )
        const lock = await readLock(agent.url, prefix)
        return sessions.length === 0 && keys.length === 0 && holdersOf(lock?.body).length === 0
          ? true
          : undefined
      },
    )
  })
})
