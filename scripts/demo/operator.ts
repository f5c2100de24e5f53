// The "operator": someone with access to Consul who destroys a holder's session by hand, with the
// raw HTTP API and not the library, as `consul` CLI users or the UI would. The semaphore must
// notice, drop holding$, and let the next waiter have the slot.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Timeline } from './timeline.js'

/** How recently a victim must have taken its slot (s): well under the shortest work, 1.5 s. */
const FRESH_HOLD_S = 1

/**
 * At `atSeconds`, destroys the session of a holder that took its slot less than a second ago
 * (waiting for one, if nobody has): its work (1.5 s at least) is far from done, so the slot is
 * taken from it, not given back by it at the same moment. Resolves without acting when `stop` is
 * aborted first.
 */
export async function operatorDestroysAHolder(
  consulUrl: string,
  timeline: Timeline,
  atSeconds: number,
  stop: AbortSignal,
): Promise<void> {
  const quietly = { signal: stop }
  try {
    await sleep(Math.max(0, atSeconds - timeline.now()) * 1000, undefined, quietly)
    for (;;) {
      const victim = timeline.holders().find((h) => timeline.now() - h.from < FRESH_HOLD_S)
      if (victim) {
        // Recorded as the request leaves: the watch may report the loss before this call answers.
        timeline.operatorDestroyed(victim.name, victim.session)
        await destroySession(consulUrl, victim.session)
        return
      }
      await sleep(100, undefined, quietly)
    }
  } catch (error) {
    if (stop.aborted) return
    throw error
  }
}

async function destroySession(consulUrl: string, session: string): Promise<void> {
  const res = await fetch(`${consulUrl}/v1/session/destroy/${session}`, { method: 'PUT' })
  const body = await res.text()
  if (!res.ok || body.trim() !== 'true') {
    throw new Error(`operator: PUT /v1/session/destroy/${session} answered ${res.status} ${body}`)
  }
}
