// What a contender handle of either kind says when its holder fails for good: a state that no
// longer holds (no fencing token, its release under way) before the error, so that `holding$`
// never ends on true. In virtual time on the Consul double.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  VirtualTimeScheduler,
  filter,
  firstValueFrom,
  type Observable,
  type Subscription,
} from 'rxjs'
import type { ConsulClient } from '../../src/consul/client-api.js'
import type { HeldState } from '../../src/handle/contender-handle.js'
import { leaderElection } from '../../src/recipes/leader-election.js'
import { semaphore } from '../../src/recipes/semaphore.js'
import { autoAdvance, createConsulDouble, httpFailure } from '../support/consul-double.js'

const prefix = 'svc/dropped'

interface Contender {
  readonly state$: Observable<HeldState>
  readonly close: () => Promise<void>
}

/**
 * Lets a contender hold on a fresh double, then answers every renewal 403 (permanent), and
 * collects its states up to the error; the double and the subscription go whatever happens.
 */
async function failWhileHolding(
  make: (consul: ConsulClient, scheduler: VirtualTimeScheduler) => Contender,
): Promise<{ states: HeldState[]; error: unknown }> {
  const scheduler = new VirtualTimeScheduler()
  const double = createConsulDouble({ scheduler })
  const stopTime = autoAdvance(scheduler)
  let subscription: Subscription | undefined
  try {
    const contender = make(double.client, scheduler)
    const states: HeldState[] = []
    const failed = new Promise<unknown>((resolve) => {
      subscription = contender.state$.subscribe({ next: (s) => states.push(s), error: resolve })
    })
    await firstValueFrom(contender.state$.pipe(filter((s) => s.holding)))
    const denied = httpFailure(403, 'Permission denied', 'PUT /v1/session/renew')
    double.fail('session.renew', denied, { times: 1_000 })
    const error = await failed
    await contender.close().catch(() => undefined)
    return { states, error }
  } finally {
    subscription?.unsubscribe()
    stopTime()
    await double.close()
  }
}

describe('a holder that fails for good', () => {
  for (const [kind, make] of [
    [
      'a semaphore',
      (consul: ConsulClient, scheduler: VirtualTimeScheduler) =>
        semaphore({ prefix, limit: 1, consul, scheduler }),
    ],
    [
      'a leader election',
      (consul: ConsulClient, scheduler: VirtualTimeScheduler) =>
        leaderElection({ prefix, consul, scheduler }),
    ],
  ] as const) {
    it(`should say, for ${kind}, that it no longer holds before the error`, async () => {
      const { states, error } = await failWhileHolding(make)
      assert.equal((error as { kind?: string }).kind, 'PermissionDenied')
      const held = [...states].reverse().find((s) => s.holding)
      assert.ok(held?.fencingToken !== undefined, 'it held, with a fencing token')
      assert.deepEqual(states.at(-1), {
        ...held,
        holding: false,
        reason: 'released',
        fencingToken: undefined,
      })
    })
  }
})
