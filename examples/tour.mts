import {
  EMPTY,
  filter,
  firstValueFrom,
  lastValueFrom,
  map,
  switchMap,
  take,
  tap,
  timer,
} from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  tryAcquire,
  withSlot,
} from 'rx-consul-semaphore'

// Stand-ins for your own work: a stream that runs while a slot is held, a one-off job, and
// batches written to a resource that checks the fencing token.
const worker$ = timer(0, 200).pipe(
  take(3),
  map((n) => `worker: step ${n}`),
)
const schedule$ = timer(0, 200).pipe(
  take(3),
  map((n) => `scheduler: tick ${n}`),
)
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms))
async function migrate(): Promise<void> {
  await pause(100)
  console.log('migrated')
}
const batches = ['batch 1', 'batch 2']
async function writeBatch(
  batch: string,
  { signal, fence }: { signal: AbortSignal; fence: bigint },
) {
  signal.throwIfAborted() // the slot was lost: stop
  await pause(50)
  console.log(`wrote ${batch} with fencing token ${fence}`)
}
const bytes = new TextEncoder().encode('migrated')

const consul = createConsulClient() // CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, ... as Consul's CLI reads them

// At most 3 processes run the migration worker at once; it runs only while the slot is held.
const sem = semaphore({ prefix: 'service/db/lock', limit: 3, consul })
const worked = lastValueFrom(
  sem.holding$.pipe(
    switchMap((held) => (held ? worker$ : EMPTY)),
    tap(console.log),
    take(3), // the worker's three steps
  ),
)

// Who holds, who waits, and a fencing token for the guarded resource. A waiter's `rank` is how
// many are ahead of it (0: next), and `estimatedWaitMs` its expected wait from the recent
// hand-overs its process saw (undefined until it saw two).
sem.state$.subscribe((s) => {
  if (s.rank === undefined) console.log(s.holding, s.reason, s.fencingToken, s.holders)
  else console.log(`waiting: ${s.rank} ahead, about ${s.estimatedWaitMs ?? '?'} ms`)
})

// A Consul write that commits only while this contender still holds its slot.
await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
await sem.fencedTxn([{ verb: 'set', key: 'service/db/state', value: bytes }])

await worked
await sem.close() // CAS out of .lock, delete the contender key, destroy the session

// Metrics and spans (acquisitions, wait and hold times, losses, requests) go to an OpenTelemetry
// SDK if the process registers one: docs/observability.md (in node_modules/rx-consul-semaphore).

// `await using` closes any contender when the block ends, also by a throw (Node 20.4+, TS 5.2+).
{
  await using held = await tryAcquire({ prefix: 'service/db/lock', limit: 3, consul })
  if (held) await migrate()
}

// Without Rx: run while a slot is held; the signal aborts if the slot is lost, and `slot` checks
// synchronously (against the wall clock, so also right after a long pause) before each write.
// The calls of a process share its contenders: see "Jobs under a fleet-wide limit" below.
// `waitTimeout` bounds the wait alone: no slot within 5 s rejects with kind 'WaitTimeout', and
// work that has started runs to its end (a `signal` option would cancel the wait or the work).
const limits = { prefix: 'service/db/lock', limit: 3, consul, waitTimeout: '5s' }
await withSlot(limits, async (signal, slot) => {
  for (const batch of batches) await writeBatch(batch, { signal, fence: slot.assertHolding() })
})

// Leader election on one key, shared with `consul lock service/scheduler/leader ...`.
const election = leaderElection({ prefix: 'service/scheduler/leader', value: 'node-a', consul })
election.leader$.subscribe((l) => console.log('leader:', l?.value ?? 'nobody'))
// The scheduler runs while this process leads; here, for its first three ticks.
await lastValueFrom(
  election.holding$.pipe(
    switchMap((leader) => (leader ? schedule$ : EMPTY)),
    take(3),
    tap(console.log),
  ),
)
await election.close() // steps down: the first in line leads at once

// The tour cleans up the key it wrote, and closes the client's connections.
await consul.kv.delete('service/db/state')()
await consul.close()
