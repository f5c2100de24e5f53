// The plot of the demo: six contenders, two slots, a few rounds each, and an operator who
// destroys a holder's session at about 8 s. Times are random within bounds so no two runs are
// alike; the whole story is over in about 20 s, and a deadline cuts it at 25 s whatever happens.
import type { ConsulClient } from '../../src/index.js'
import { runContender, type ContenderPlan } from './contender.js'
import { operatorDestroysAHolder } from './operator.js'
import type { Timeline } from './timeline.js'

export const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'] as const
export const LIMIT = 2
const OPERATOR_AT_S = 8
const LAST_ROUND_STARTS_BY_S = 14
const DEADLINE_S = 25

const between = (low: number, high: number) => (): number => low + Math.random() * (high - low)

export interface Stage {
  readonly client: ConsulClient
  readonly consulUrl: string
  readonly prefix: string
  readonly timeline: Timeline
  /** Aborted from outside (Ctrl-C), and from inside on the deadline or a contender's failure. */
  readonly stop: AbortController
  readonly say: (line: string) => void
}

/** Runs the story to its end; rejects with the first failure of a contender or the operator. */
export async function runStory(stage: Stage): Promise<void> {
  const { timeline, stop } = stage
  const deadline = setTimeout(() => {
    stage.say(`t=${timeline.now().toFixed(1)}s deadline: stopping the contenders still running`)
    stop.abort()
  }, DEADLINE_S * 1000)

  const plans: ContenderPlan[] = NAMES.map((name, i) => ({
    name,
    // Contend once more or twice more after the first round.
    rounds: Math.random() < 0.5 ? 2 : 3,
    workMs: between(1500, 3000),
    pauseMs: between(300, 1200),
    startAfterMs: i * 150,
  }))
  const arena = {
    client: stage.client,
    prefix: stage.prefix,
    limit: LIMIT,
    timeline,
    lastRoundStartsBy: LAST_ROUND_STARTS_BY_S,
    stop: stop.signal,
  }
  const actors = [
    ...plans.map((plan) => runContender(plan, arena)),
    operatorDestroysAHolder(stage.consulUrl, timeline, OPERATOR_AT_S, stop.signal),
  ].map((actor) =>
    // The first failure stops everyone else, so that they give their slots back.
    actor.catch((error: unknown) => {
      stop.abort()
      throw error
    }),
  )
  // The operator's wait must not hold the story open once every contender is done.
  const contenders = Promise.allSettled(actors.slice(0, plans.length)).then(() => stop.abort())
  const results = await Promise.allSettled([...actors, contenders])
  clearTimeout(deadline)
  const failed = results.find((r) => r.status === 'rejected')
  if (failed) throw failed.reason
}
