// The "operator": someone with access to Consul who destroys a holder's session by hand, with the
// raw HTTP API and not the library, as `consul` CLI users or the UI would. The semaphore must
// notice, drop holding$, and let the next waiter have the slot.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Timeline } from './timeline.js'

/**
 * At `atSeconds`, destroys the session of the holder that has held the longest (waiting until
 * someone holds, if nobody does then). Resolves without acting when `stop` is aborted first.
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
      const victim = timeline.holders().sort((a, b) => a.from - b.from)[0]
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
