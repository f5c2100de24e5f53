// One service replica of figure 6 (bench/replicas.ts): a process of its own with one client and
// one semaphore at a time. It contends, holds for `holdMs` once it holds, calls close(), and
// contends again with a new semaphore, until SIGTERM or the end of its stdin (the parent is
// gone); then it gives back what it has and exits. Every moment is written to stdout on the wall
// clock (ms, sub-ms precision), so that the parent can merge the logs of all replicas:
//   U <who>          loaded, about to contend the first time
//   W <who> <ms>     semaphore created (wants a slot)
//   C <who> <ms>     state$ says contending: its key is in Consul, it is in the queue
//   S <who> <ms>     holding (state$, the same moment holding$ turns true)
//   R <who> <ms>     close() called (holding$ turns false at that call)
//   E <who> <text>   the state errored; the replica stops
//   node --import tsx bench/replica-child.ts <consul addr> <prefix> <limit> <holdMs> <who>
import { createConsulClient } from '../src/consul/client.js'
import { semaphore } from '../src/semaphore.js'

const [addr = '', prefix = '', limitText, holdText, who = ''] = process.argv.slice(2)
if (addr === '' || prefix === '' || who === '') {
  console.error('usage: replica-child.ts <addr> <prefix> <limit> <holdMs> <who>')
  process.exit(2)
}
const limit = Number(limitText)
const holdMs = Number(holdText)

const wall = (): string => (performance.timeOrigin + performance.now()).toFixed(3)
const say = (line: string): void => void process.stdout.write(`${line}\n`)

const client = createConsulClient({ address: addr })
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
  const sem = semaphore({ prefix, limit, consul: client, value: who })
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
  await client.close()
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`E ${who} ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  },
)
