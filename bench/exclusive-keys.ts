// Figure 5d: `exclusive(...)` over many distinct task keys on one long-lived client: the heap
// must come back to where it started, however many distinct keys were served. A child
// process (bench/exclusive-worker.ts, --expose-gc) serves the keys against the agent and reports
// its live heap before the first task and once every key was given back; the target is the
// start again, within 5 MB.
import { fork } from 'node:child_process'
import type { ExclusiveWorkerReport } from './exclusive-worker.js'

export interface ExclusiveKeysResult {
  readonly keys: number
  readonly concurrency: number
  readonly outcomes: Readonly<Record<string, number>>
  readonly ms: number
  readonly startHeapMb: number
  readonly heapMbByTenth: readonly number[]
  readonly endHeapMb: number
  readonly watchesLeft: number
}

/** Tasks held and run at once: a job server's handful, half the client's 16 connections. */
const CONCURRENCY = 8

export async function measureExclusiveKeys(
  addr: string,
  keys: number,
): Promise<ExclusiveKeysResult> {
  const worker = fork(
    new URL('./exclusive-worker.ts', import.meta.url).pathname,
    [addr, String(keys), String(CONCURRENCY), String(Date.now())],
    {
      execArgv: ['--import', 'tsx', '--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  )
  const exited = new Promise<number | null>((done) => worker.once('exit', (code) => done(code)))
  let report: ExclusiveWorkerReport | undefined
  worker.on('message', (message: ExclusiveWorkerReport) => (report = message))
  // A generous limit: about 1 ms a key on an idle machine.
  const limitMs = 120_000 + keys * 20
  const timer = setTimeout(() => worker.kill('SIGKILL'), limitMs)
  const code = await exited
  clearTimeout(timer)
  if (report === undefined) {
    throw new Error(`the exclusive worker ended (code ${code}) without a report`)
  }
  if (report.closeError !== undefined) throw new Error(`cleanup failed: ${report.closeError}`)
  return {
    keys: report.keys,
    concurrency: CONCURRENCY,
    outcomes: report.outcomes,
    ms: report.ms,
    startHeapMb: report.startHeapMb,
    heapMbByTenth: report.heapMbByTenth,
    endHeapMb: report.endHeapMb,
    watchesLeft: report.watchesLeft,
  }
}
