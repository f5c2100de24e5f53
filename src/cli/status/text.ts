/** `rxsem status` without `--json`: the same facts, for people. */
import type { PrefixStatus } from './prefix-status.js'
import { askedToGiveBack, waitFor } from '../report.js'

/** Why a leader that is gone may still be shown, and for how long (a crash releases nothing). */
const LEADER_NOTE = [
  'note     the leader is the process of the session shown. If it died without releasing',
  '         (kill -9, a crash, a lost machine), Consul keeps the key until that session ends,',
  "         up to 2 x the session's TTL after its last renewal, and then refuses it to everyone",
  "         for the session's lock-delay (15 s by default) before anyone else can lead.",
]

const quoted = (text: string | null): string => (text === null ? '-' : JSON.stringify(text))

/**
 * The status as lines of text.
 *
 * @example
 * formatStatus(status)
 * // prefix   service/db/lock
 * // limit    2 (.lock shape go-map)
 * // holders  1 of 2 ...
 */
export function formatStatus(status: PrefixStatus): string {
  const lines = [
    `prefix   ${status.prefix}`,
    `limit    ${status.limit ?? 'unknown (no .lock yet)'}` +
      (status.shape === null ? '' : ` (.lock shape ${status.shape})`),
  ]
  const live = status.holders.filter((h) => h.alive)
  lines.push(`holders  ${live.length}${status.limit === null ? '' : ` of ${status.limit}`}`)
  for (const h of status.holders) {
    lines.push(
      `  ${h.session}  ${h.alive ? 'alive' : 'DEAD '}  value ${quoted(h.value)}  name ${quoted(h.name)}`,
    )
    if (h.revoke !== null) lines.push(`    ${askedToGiveBack(h.revoke)}`)
  }
  if (status.shape === 'lock' && status.holders.length > 0) lines.push(...LEADER_NOTE)
  if (status.waiting === null) {
    lines.push(...wrapNote(`waiting  not visible: ${status.waitingNote ?? 'unknown'}.`))
    return lines.join('\n') + '\n'
  }
  lines.push(`waiting  ${status.waiting.length}`)
  for (const w of status.waiting) {
    const wait =
      w.estimatedWaitMs === undefined
        ? ''
        : `  wait ${w.estimatedWaitMs === null ? 'unknown (too few hand-overs seen)' : `~${waitFor(w.estimatedWaitMs)}`}`
    lines.push(`  #${w.rank} ${w.session}  value ${quoted(w.value)}  name ${quoted(w.name)}${wait}`)
  }
  if (status.waitingNote !== undefined) lines.push(...wrapNote(`note     ${status.waitingNote}.`))
  return lines.join('\n') + '\n'
}

/** A note cut into lines of at most 95 columns, indented under the first. */
function wrapNote(text: string): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > 95) {
      lines.push(line)
      line = `         ${word}`
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  return line === '' ? lines : [...lines, line]
}
