/** Test-only: narrows a decision to the type a test expects, or fails naming the one it got. */
import assert from 'node:assert/strict'
import type { Decision } from '../../src/core/events.js'

export function expectType<T extends Decision['type']>(
  decision: Decision,
  type: T,
): Extract<Decision, { type: T }> {
  assert.equal(
    decision.type,
    type,
    JSON.stringify(decision, (_k, v: unknown) => String(v)),
  )
  return decision as Extract<Decision, { type: T }>
}
