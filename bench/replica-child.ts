// One service replica of figure 6 (bench/replicas.ts): a process of its own with one semaphore
// at a time. It contends, holds for `holdMs` once it holds, calls close(), and contends again with
// a new semaphore, until SIGTERM or the end of its stdin (the parent is gone); then it gives back
// what it has and exits. Two ways, as users write a replica:
//   shared    one createConsulClient({ address }) passed as `consul` to every tenure
//   default   no `consul` option (the process's default client, from CONSUL_HTTP_ADDR), as
//             `withSlot({ prefix, limit }, work)` in a loop or a new `semaphore(...)` per job
// It imports the package by its name: bench/replicas.ts transpiles this file into the package's
// folder (.cache/bench/) and runs it under plain node, so the import resolves to the build
// (dist/esm, by the package's "exports"), as it does for users. Every moment is written to stdout
// on the wall clock (ms, sub-ms precision), so that the parent can merge the logs of all replicas:
//   U <who>          loaded, about to contend the first time
//   W <who> <ms>     semaphore created (wants a slot)
//   C <who> <ms>     state$ says contending: its key is in Consul, it is in the queue
//   S <who> <ms>     holding (state$, the same moment holding$ turns true)
//   R <who> <ms>     close() called (holding$ turns false at that call)
//   E <who> <text>   the state errored; the replica stops
//   node .cache/bench/replica-child.mjs <consul addr> <prefix> <limit> <holdMs> <who> <client>
import { createConsulClient, semaphore, type ConsulClient } from 'rx-consul-semaphore'

const [addr = '', prefix = '', limitText, holdText, who = '', way = ''] = process.argv.slice(2)
if (addr === '' || prefix === '' || who === '' || (way !== 'shared' && way !== 'default')) {
  console.error('usage: replica-child <addr> <prefix> <limit> <holdMs> <who> shared|default')
  process.exit(2)
}
const limit = Number(limitText)
const holdMs = Number(holdText)

/**
 * The wall clock every replica shares, with the monotonic clock's sub-millisecond steps.
 * `performance.timeOrigin` will not do: each process takes it once at start-up, and on a loaded
 * machine a process descheduled between its two clock reads keeps an origin milliseconds off, so
 * that the tenures of two replicas look overlapping when one merely followed the other. Here the
 * offset is taken on the moment `Date.now()` ticks to its next millisecond (the read after the tick
 * can only come late, which makes an offset too small: the largest of a few is the closest).
 */
function sharedWallClock(ticks = 5): () => number {
  let offset = -Infinity
  for (let i = 0; i < ticks; i++) {
    const from = Date.now()
    let tick = from
    while (tick === from) tick = Date.now()
    offset = Math.max(offset, tick - performance.now())
  }
  return () => offset + performance.now()
}
const clock = sharedWallClock()
const wall = (): string => clock().toFixed(3)
const say = (line: string): void => void process.stdout.write(`${line}\n`)

// The default way leaves the address to the environment, as a user's replica would.
if (way === 'default') process.env['CONSUL_HTTP_ADDR'] = addr
const client: ConsulClient | undefined =
  way === 'shared' ? createConsulClient({ address: addr }) : undefined
let stopping = false
let wakeStop: (() => void) | undefined
const stop = (): void => {
  stopping = true
  wakeStop?.()
}
process.once('SIGTERM', stop)
// The parent holds our stdin open: when it goes away, even by SIGKILL, so do we.
process.stdin.once('end', stop).resume()

/** One tenure: contend, hold, release. Resolves once the slot (or the key) is given back. */
async function tenure(): Promise<void> {
  const sem = semaphore({ prefix, limit, value: who, ...(client ? { consul: client } : {}) })
  say(`W ${who} ${wall()}`)
  let held = false
  let timer: NodeJS.Timeout | undefined
  let over: () => void = () => {}
  const ended = new Promise<void>((done) => (over = done))
  wakeStop = () => {
    clearTimeout(timer)
    over()
  }
  let contending = false
  const subscription = sem.state$.subscribe({
    next: (state) => {
      if (state.contending && !contending) {
        contending = true
        say(`C ${who} ${wall()}`)
      }
      if (!state.holding || held) return
      held = true
      say(`S ${who} ${wall()}`)
      timer = setTimeout(over, holdMs)
    },
    error: (error: unknown) => {
      say(`E ${who} ${error instanceof Error ? error.message : String(error)}`)
      stopping = true
      over()
    },
  })
  if (stopping) over()
  await ended
  wakeStop = undefined
  // Logged right before close(), while still subscribed: the release starts at this moment.
  if (held) say(`R ${who} ${wall()}`)
  await sem.close()
  subscription.unsubscribe()
}

async function main(): Promise<void> {
  say(`U ${who}`)
  while (!stopping) await tenure()
  await client?.close()
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`E ${who} ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  },
)
