// A contender closed or aborted while its first session is being created leaves nothing in
// Consul: close(), an abort of the caller's signal and a try-once that gives up settle only once
// the session (if the request in flight made one) is destroyed. Each trial closes or aborts right
// after the call (synchronously, on the next turn of the event loop, 1 ms or 2 ms later), and
// counts its sessions and contender keys in Consul the moment its promise settles.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import {
  leaderElection,
  semaphore,
  tryAcquire,
  tryLead,
  withSlot,
  type LeaderElection,
  type Semaphore,
} from '../../src/index.js'
import { closeIdleDefaultClients } from '../../src/consul/default-client.js'
import { flushShelf } from '../../src/effects/session-shelf.js'
import { agentSuite } from '../support/agent-suite.js'
import {
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  readLock,
  sessionsNamed,
  type RawEntry,
} from '../support/observe.js'
import { keep, suiteScope, testPrefix } from '../support/tracked.js'

/** When the close or the abort comes, after the call that starts the contender. */
type When = 'sync' | 'next turn' | '1 ms' | '2 ms'
const WHENS: readonly When[] = ['sync', 'next turn', '1 ms', '2 ms']

/** Runs `act` at `when` after now; `sync` runs it before returning. */
function at(when: When, act: () => void): void {
  if (when === 'sync') act()
  else if (when === 'next turn') setImmediate(act)
  else setTimeout(act, when === '1 ms' ? 1 : 2)
}

/** What one trial left in Consul when its promise settled. */
interface Left {
  readonly sessions: number
  readonly keys: readonly string[]
}

describe('an early close or abort leaves nothing in Consul', () => {
  // Every session of this run is named `early-close <run> <trial>`: other suites share the agent.
  const run = randomUUID().slice(0, 8)
  let trial = 0
  const sessionName = (): string => `early-close ${run} ${++trial}`

  const holders: { close(): Promise<void> }[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    await Promise.allSettled(holders.map((holder) => holder.close()))
    await closeIdleDefaultClients()
    if (addrBefore === undefined) delete process.env['CONSUL_HTTP_ADDR']
    else process.env['CONSUL_HTTP_ADDR'] = addrBefore
    // A failed run leaves sessions to their TTL otherwise.
    const strays = await sessionsNamed(agent.url, `early-close ${run} `)
    await Promise.allSettled(strays.map((s) => destroyRawSession(agent.url, s.ID)))
  })
  // The prefixes' and the subscriptions' clean-up, after the hook above, before the agent's.
  const suite = suiteScope()
  const agent = agentSuite()

  /** The prefix of one trial, cleaned up after the suite. */
  const freshPrefix = (name: string): string => testPrefix(suite, () => agent.url, name)

  /**
   * The sessions named `name`, and the keys under `prefix` that a contender of the trial may have
   * written: any but `.lock` and `kept` (a holder's key), and `.lock` while some session other
   * than `keptSession` locks it. Read the moment the promise settled, without a wait.
   */
  const leftBy = async (
    name: string,
    prefix: string,
    kept: { key?: string; session?: string } = {},
  ): Promise<Left> => {
    const [all, entries] = await Promise.all([
      fetch(`${agent.url}/v1/session/list`).then(
        (res) => res.json() as Promise<{ Name: string }[]>,
      ),
      listPrefix(agent.url, prefix),
    ])
    const stray = (e: RawEntry): boolean =>
      e.Key === `${prefix}/.lock`
        ? e.Session !== undefined && e.Session !== kept.session
        : e.Key !== kept.key
    return {
      sessions: all.filter((s) => s.Name === name).length,
      keys: entries.filter(stray).map((e) => e.Key),
    }
  }

  /** Settles `settle`, then counts what is left; a rejection is an outcome like any other. */
  const countAtSettle = async (
    settle: Promise<unknown>,
    count: () => Promise<Left>,
  ): Promise<Left> => {
    await settle.then(
      () => undefined,
      () => undefined,
    )
    return count()
  }

  /** A holder of the only slot of a semaphore prefix, and of a lock prefix. */
  let fullSemaphore: { prefix: string; key: string }
  let heldLock: { prefix: string; session: string }
  // The default client (no `consul` option) is the one of the environment: this test's agent.
  const addrBefore = process.env['CONSUL_HTTP_ADDR']
  before(async () => {
    process.env['CONSUL_HTTP_ADDR'] = agent.addr
    const semPrefix = freshPrefix('early-close-full')
    const sem = semaphore({ prefix: semPrefix, limit: 1, consul: agent.client })
    holders.push(sem)
    keep(suite, sem.holding$.subscribe())
    const semSession = await eventually(
      'the semaphore holder holds',
      async () => holdersOf((await readLock(agent.url, semPrefix))?.body)[0],
    )
    fullSemaphore = { prefix: semPrefix, key: `${semPrefix}/${semSession}` }

    const lockPrefix = freshPrefix('early-close-led')
    const leader = leaderElection({ prefix: lockPrefix, consul: agent.client })
    holders.push(leader)
    keep(suite, leader.holding$.subscribe())
    const leaderSession = await eventually(
      'the leader leads',
      async () =>
        (await listPrefix(agent.url, lockPrefix)).find((e) => e.Key === `${lockPrefix}/.lock`)
          ?.Session,
    )
    heldLock = { prefix: lockPrefix, session: leaderSession }
  })

  /** One kind of trial: starts a contender, closes or aborts it at `when`, counts at settle. */
  interface Scenario {
    readonly name: string
    /** When the close or abort comes; undefined: never (the try-once gives up by itself). */
    readonly whens: readonly (When | undefined)[]
    readonly trial: (when: When | undefined) => Promise<Left>
  }

  /** Closes a try-once's answer if it held after all, so that the count is of a closed one. */
  const closeIfHeld = async (answer: Promise<Semaphore | LeaderElection | null>): Promise<void> => {
    const held = await answer
    await held?.close()
  }

  /** withSlot on the suite's client or the default one, aborted at `when`. */
  const withSlotAborted = (
    name: string,
    prefixName: string,
    client: 'suite' | 'default',
  ): Scenario => ({
    name,
    whens: WHENS,
    trial: (when) => {
      const session = sessionName()
      const prefix = freshPrefix(prefixName)
      const controller = new AbortController()
      const settled = withSlot(
        {
          prefix,
          limit: 1,
          ...(client === 'suite' ? { consul: agent.client } : {}),
          sessionName: session,
          signal: controller.signal,
        },
        // Held before the abort: the work runs until the abort reaches it.
        (signal) =>
          new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason as Error)),
          ),
      )
      at(when as When, () => controller.abort(new Error('early abort')))
      // A job pool's worker given back cleanly leaves its session on the process's shelf for the
      // pool's next worker (it lingers, then goes): destroyed now, so what is counted is only what
      // the release left.
      const settledClean = settled.finally(() => flushShelf())
      return countAtSettle(settledClean, () => leftBy(session, prefix))
    },
  })

  const scenarios: Scenario[] = [
    {
      name: 'semaphore().close()',
      whens: WHENS,
      trial: (when) => {
        const name = sessionName()
        const prefix = freshPrefix('early-close-sem')
        const sem = semaphore({ prefix, limit: 1, consul: agent.client, sessionName: name })
        const sub = sem.holding$.subscribe({ error: () => undefined })
        const closed = new Promise<void>((done, failed) =>
          at(when as When, () => void sem.close().then(done, failed)),
        )
        return countAtSettle(closed, () => leftBy(name, prefix)).finally(() => sub.unsubscribe())
      },
    },
    withSlotAborted('withSlot, aborted', 'early-close-with-slot', 'suite'),
    withSlotAborted('withSlot on the default client, aborted', 'early-close-default', 'default'),
    {
      name: 'tryAcquire, aborted',
      whens: WHENS,
      trial: (when) => {
        const name = sessionName()
        const prefix = freshPrefix('early-close-try')
        const controller = new AbortController()
        const answer = tryAcquire({
          prefix,
          limit: 1,
          consul: agent.client,
          sessionName: name,
          signal: controller.signal,
        })
        at(when as When, () => controller.abort(new Error('early abort')))
        return countAtSettle(closeIfHeld(answer), () => leftBy(name, prefix))
      },
    },
    {
      name: 'tryLead, aborted',
      whens: WHENS,
      trial: (when) => {
        const name = sessionName()
        const prefix = freshPrefix('early-close-lead')
        const controller = new AbortController()
        const answer = tryLead({
          prefix,
          consul: agent.client,
          sessionName: name,
          signal: controller.signal,
        })
        at(when as When, () => controller.abort(new Error('early abort')))
        return countAtSettle(closeIfHeld(answer), () => leftBy(name, prefix))
      },
    },
    {
      name: 'tryAcquire on a full semaphore (gives up, or aborted first)',
      whens: [...WHENS, undefined],
      trial: (when) => {
        const name = sessionName()
        const { prefix, key } = fullSemaphore
        const controller = new AbortController()
        const answer = tryAcquire({
          prefix,
          limit: 1,
          consul: agent.client,
          sessionName: name,
          signal: controller.signal,
        })
        if (when !== undefined) at(when, () => controller.abort(new Error('early abort')))
        return countAtSettle(closeIfHeld(answer), () => leftBy(name, prefix, { key }))
      },
    },
    {
      name: 'tryLead on a held lock (gives up, or aborted first)',
      whens: [...WHENS, undefined],
      trial: (when) => {
        const name = sessionName()
        const { prefix, session } = heldLock
        const controller = new AbortController()
        const answer = tryLead({
          prefix,
          consul: agent.client,
          sessionName: name,
          signal: controller.signal,
        })
        if (when !== undefined) at(when, () => controller.abort(new Error('early abort')))
        return countAtSettle(closeIfHeld(answer), () => leftBy(name, prefix, { session }))
      },
    },
  ]

  it('leaves no session and no contender key when the promise settles, in 150 trials', async () => {
    // Rounds of every scenario at every time, so that a slow moment of the machine falls on all.
    const rounds = 6
    const tally = new Map<string, { trials: number; sessions: number; keys: number }>()
    const strays: string[] = []
    for (let round = 0; round < rounds; round++) {
      for (const scenario of scenarios) {
        // The try-once scenarios, with one time more, run every other round.
        if (scenario.whens.length > WHENS.length && round % 2 === 1) continue
        for (const when of scenario.whens) {
          const left = await scenario.trial(when)
          const line = `${scenario.name} @ ${when ?? 'never'}`
          const counts = tally.get(line) ?? { trials: 0, sessions: 0, keys: 0 }
          tally.set(line, {
            trials: counts.trials + 1,
            sessions: counts.sessions + left.sessions,
            keys: counts.keys + left.keys.length,
          })
          strays.push(...left.keys)
        }
      }
    }
    let trials = 0
    let sessions = 0
    for (const [line, counts] of tally) {
      trials += counts.trials
      sessions += counts.sessions
      console.log(
        `# ${line}: ${counts.sessions} session(s), ${counts.keys} key(s) left in ${counts.trials}`,
      )
    }
    console.log(`# ${sessions} session(s) left in ${trials} trials`)
    // A create that landed after its trial settled shows now, whatever the counts above say.
    const late = (await sessionsNamed(agent.url, `early-close ${run} `)).length
    console.log(`# ${late} session(s) of the run in Consul after the last trial`)
    assert.ok(trials >= 150, `${trials} trials`)
    assert.equal(sessions, 0, `${sessions} session(s) left in ${trials} trials`)
    assert.deepEqual(strays, [], 'contender keys left')
    assert.equal(late, 0, `${late} session(s) of the run in Consul after the last trial`)
  })
})
