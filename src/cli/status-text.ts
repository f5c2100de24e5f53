/** `rxsem status` without `--json`: the same facts, for people. */
import type { PrefixStatus } from './prefix-status.js'

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
  }
  lines.push(`waiting  ${status.waiting.length}`)
  for (const w of status.waiting) {
    lines.push(`  #${w.rank} ${w.session}  value ${quoted(w.value)}  name ${quoted(w.name)}`)
  }
  return lines.join('\n') + '\n'
}
