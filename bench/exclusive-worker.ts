// The process of the exclusive figure: one long-lived client and one `exclusive(...)` subscription
// that serves `keys` distinct task keys (each task: acquire its key, watch it while it runs,
// delete it), with nothing else in the process, so that its heap is the library's. Started by
// bench/exclusive-keys.ts with --expose-gc; it reports the live heap (after a full collection)
// before the first task, after every tenth of them, and once every key was given back.
import { lastValueFrom, range, reduce, tap } from 'rxjs'
import { createConsulClient } from '../src/consul/client.js'
import { commonWatchCount } from '../src/effects/common-watch.js'
import { exclusive, type ExclusiveClosed } from '../src/recipes/exclusive.js'

export interface ExclusiveWorkerReport {
  readonly type: 'done'
  readonly keys: number
  /** Results per outcome ('done' for every task, when all went well). */
  readonly outcomes: Readonly<Record<string, number>>
  readonly ms: number
  /** Live heap before the first task (client created, library loaded), in MB. */
  readonly startHeapMb: number
  /** Live heap after every tenth of the tasks, in MB. */
  readonly heapMbByTenth: readonly number[]
  /** Live heap once every task is done and its key given back; the client still open. */
  readonly endHeapMb: number
  /** Shared watches the process still holds at the end (one per watched key while it ran). */
  readonly watchesLeft: number
  /** The first cleanup failure onClosed reported, if any. */
  readonly closeError: string | undefined
}

const [agentAddr, keyCount, concurrencyArg, runId] = process.argv.slice(2)
const keys = Number(keyCount)
const concurrency = Number(concurrencyArg)

const liveHeapMb = (): number => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return process.memoryUsage().heapUsed / 1024 / 1024
}

async function main(): Promise<void> {
  const client = createConsulClient({ address: agentAddr })
  const startHeapMb = liveHeapMb()
  const heapMbByTenth: number[] = []
  const tenth = Math.max(1, Math.floor(keys / 10))
  let finished = 0
  let onClosed!: (closed: ExclusiveClosed) => void
  const closed = new Promise<ExclusiveClosed>((done) => (onClosed = done))
  const started = performance.now()
  const outcomes = await lastValueFrom(
    range(0, keys).pipe(
      exclusive<number, number>({
        consul: client,
        keyOf: (id) => `bench-exclusive/${runId}/task/${id}`,
        run: (id) => Promise.resolve(id),
        concurrency,
        onDone: 'delete',
        onClosed,
      }),
      tap(() => {
        if (++finished % tenth === 0 && finished < keys) heapMbByTenth.push(liveHeapMb())
      }),
      reduce<{ outcome: string }, Record<string, number>>(
        (counts, r) => ({ ...counts, [r.outcome]: (counts[r.outcome] ?? 0) + 1 }),
        {},
      ),
    ),
  )
  const { error } = await closed
  const ms = performance.now() - started
  const report: ExclusiveWorkerReport = {
    type: 'done',
    keys,
    outcomes,
    ms,
    startHeapMb,
    heapMbByTenth,
    endHeapMb: liveHeapMb(),
    watchesLeft: commonWatchCount(),
    closeError: error?.message,
  }
  process.send?.(report)
  await client.close()
  process.disconnect()
}

main().catch((error: unknown) => {
  console.error('exclusive worker:', error)
  process.exitCode = 1
  process.disconnect()
})
