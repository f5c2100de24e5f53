import { EMPTY, fromEvent, interval, map, switchMap, take, takeUntil } from 'rxjs'
import { semaphore, type Semaphore } from 'rx-consul-semaphore'

// At most 2 processes at once hold a slot of this semaphore (Consul at CONSUL_HTTP_ADDR).
const sem: Semaphore = semaphore({ prefix: 'service/jobs/lock', limit: 2 })
const work$ = interval(1000).pipe(map((n) => `holding a slot, working: step ${n}`))

// holding$ is true only while the slot is held: switchMap starts the work then and stops it
// when the slot is lost (the semaphore then waits for a slot again by itself).
const guarded$ = sem.holding$.pipe(switchMap((held: boolean) => (held ? work$ : EMPTY)))
// Five steps of work, or until Ctrl-C; then release the slot: close() deletes this process's
// key and session from Consul (the prefix's .lock, which holds the limit, stays).
await guarded$.pipe(take(5), takeUntil(fromEvent(process, 'SIGINT'))).forEach(console.log)
await sem.close()
