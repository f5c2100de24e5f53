// The demo's event log: one plain line per timeline event, the same on a terminal and in a pipe.
import type { TimelineEvent } from './timeline.js'

/** What a reason for losing a slot means, for a reader who has not read docs/design.md. */
const lossMeaning: Partial<Record<string, string>> = {
  removed:
    'its session is gone, and Consul deleted its contender key with it, so the next snapshot no ' +
    'longer lists it as a live holder',
  'session-invalidated': 'Consul answered that its session no longer exists',
  'watch-failed':
    'the watch of the prefix failed, and nothing vouches for the slot until it is back',
  'lease-expired': 'its session was not renewed in time, so it no longer trusts its slot',
}

const seconds = (at: number): string => `t=${at.toFixed(1)}s`.padEnd(7)
const short = (session: string): string => session.slice(0, 8)

export function describeEvent(event: TimelineEvent): string {
  switch (event.type) {
    case 'contends':
      return `${seconds(event.at)} ${event.name} contends (session ${short(event.session)})`
    case 'acquired':
      return (
        `${seconds(event.at)} ${event.hold.name} acquired a slot ` +
        `(fencing token ${event.hold.fencingToken}); holders now: ${event.holders.join(', ')}`
      )
    case 'lost': {
      const { hold } = event
      const held = `${(event.at - hold.from).toFixed(1)}s`
      return hold.endReason === 'released'
        ? `${seconds(event.at)} ${hold.name} released its slot after ${held} of work`
        : `${seconds(event.at)} ${hold.name} lost its slot (${hold.endReason ?? 'no reason given'}) after ${held}` +
            (lossMeaning[hold.endReason ?? ''] === undefined
              ? ''
              : `: ${lossMeaning[hold.endReason ?? '']}`)
    }
    case 'gave-up':
      return `${seconds(event.at)} ${event.name} stopped waiting (the demo is ending)`
    case 'operator':
      return (
        `${seconds(event.at)} operator destroys ${event.cut.name}'s session ` +
        `${short(event.cut.session)} (PUT /v1/session/destroy)`
      )
    case 'over-limit':
      return `${seconds(event.at)} OVER THE LIMIT: ${event.holders.join(', ')} hold at once`
  }
}
