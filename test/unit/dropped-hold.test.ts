// What a contender handle of either kind says when its holder fails for good: a state that no
// longer holds (no fencing token, its release under way) before the error, so that `holding$`
// never ends on true. In virtual time on the Consul double.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import {
  VirtualTimeScheduler,
  filter,
  firstValueFrom,
  type Observable,
  type Subscription,
} from 'rxjs'
import { leaderElection } from '../../src/leader-election.js'
import { semaphore } from '../../src/semaphore.js'
import type { HeldState } from '../../src/contender-handle.js'
import {
  autoAdvance,
  createConsulDouble,
  httpFailure,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/dropped'

describe('a holder that fails for good', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  let stopTime: () => void
  const subscriptions: Subscription[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    stopTime = autoAdvance(scheduler)
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    stopTime()
    await double.close()
  })

  /** Holds, then answers every renewal 403, and collects the states up to the error. */
  const failWhileHolding = async (contender: {
    state$: Observable<HeldState>
    close: () => Promise<void>
  }): Promise<{ states: HeldState[]; error: unknown }> => {
    const states: HeldState[] = []
    const failed = new Promise<unknown>((resolve) => {
      subscriptions.push(
        contender.state$.subscribe({ next: (s) => states.push(s), error: resolve }),
      )
    })
    await firstValueFrom(contender.state$.pipe(filter((s) => s.holding)))
    double.fail('session.renew', httpFailure(403, 'Permission denied', 'PUT /v1/session/renew'), {
      times: 1_000,
    })
    const error = await failed
    await contender.close().catch(() => undefined)
    return { states, error }
  }

  for (const [kind, make] of [
    ['a semaphore', () => semaphore({ prefix, limit: 1, consul: double.client, scheduler })],
    ['a leader election', () => leaderElection({ prefix, consul: double.client, scheduler })],
  ] as const) {
    it(`should say, for ${kind}, that it no longer holds before the error`, async () => {
      const { states, error } = await failWhileHolding(make())
      assert.equal((error as { kind?: string }).kind, 'PermissionDenied')
      const held = [...states].reverse().find((s) => s.holding)
      const last = states.at(-1)
      assert.ok(held?.fencingToken !== undefined, 'it held, with a fencing token')
      assert.deepEqual(last, {
        ...held,
        holding: false,
        reason: 'released',
        fencingToken: undefined,
      })
    })
  }
})
