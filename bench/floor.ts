// Figure 1, the floor: what Consul itself costs for the steps every handover is made of, through
// the library's own HTTP client (Node's) on loopback.
//   CAS write: one `PUT /v1/kv/<key>?cas=<ModifyIndex>`, from sending to the answer.
//   Wake-up:   a blocking list of a prefix is parked at the agent; another client writes a key
//              under it; time from that write being sent to the list being answered (so it
//              includes the write's commit).
// The floor handover is 2 writes + 1 wake-up (release write, wake-up, acquire write).
import * as E from 'fp-ts/lib/Either.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { createConsulClient } from '../src/consul/client.js'
import { summarize, type Summary } from './stats.js'

export interface FloorResult {
  readonly casWrite: Summary
  readonly wakeUp: Summary
  readonly handoverP50: number
  readonly handoverP95: number
}

async function right<A>(task: () => Promise<E.Either<{ message: string }, A>>): Promise<A> {
  const result = await task()
  if (E.isLeft(result)) throw new Error(result.left.message)
  return result.right
}

export async function measureFloor(addr: string, samples: number): Promise<FloorResult> {
  const writer = createConsulClient({ address: addr })
  const poller = createConsulClient({ address: addr })
  const prefix = `bench-floor/${Date.now()}`
  try {
    const key = `${prefix}/cas`
    await right(writer.kv.put(key, 'v'))
    let index = (await right(writer.kv.get(key)))?.modifyIndex ?? 0n
    const cas: number[] = []
    for (let i = 0; i < samples + 10; i++) {
      const start = performance.now()
      const ok = await right(writer.kv.put(key, `v${i}`, { cas: index }))
      const took = performance.now() - start
      if (!ok) throw new Error('floor: a CAS write nobody races lost')
      if (i >= 10) cas.push(took) // the first ones warm up connections and JIT
      index = (await right(writer.kv.get(key)))?.modifyIndex ?? 0n
    }

    const watched = `${prefix}/watched/`
    await right(writer.kv.put(`${watched}k`, 'x'))
    const wake: number[] = []
    for (let i = 0; i < samples + 10 && wake.length < samples; i++) {
      const before = await right(poller.kv.list(watched))
      let answeredAt = Number.NaN
      const poll = poller.kv
        .list(watched, { index: before.index, waitMs: 10_000 })()
        .then((result) => {
          answeredAt = performance.now()
          return result
        })
      // Give the request time to reach the agent and park; a write before that would be
      // answered without any waking.
      await sleep(15)
      const sent = performance.now()
      await right(writer.kv.put(`${watched}k`, `x${i}`))
      await poll
      if (i >= 10 && answeredAt > sent) wake.push(answeredAt - sent)
    }
    const casWrite = summarize(cas)
    const wakeUp = summarize(wake)
    return {
      casWrite,
      wakeUp,
      handoverP50: 2 * casWrite.p50 + wakeUp.p50,
      handoverP95: 2 * casWrite.p95 + wakeUp.p95,
    }
  } finally {
    await writer.kv.delete(prefix, { recurse: true })()
    await writer.close()
    await poller.close()
  }
}
