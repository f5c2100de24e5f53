import type { ContenderEvent } from '../events.js'

/**
 * What the contender reducer consumes: the effects layer's events, plus the operator's own
 * `wake` (a timer it set for `wakeAt` fired) and `end` (the events completed).
 */
export type ContenderInput = ContenderEvent | { readonly type: 'wake' } | { readonly type: 'end' }
