// Where a bench child's CPU goes among its threads: its main thread (JavaScript, and V8's
// collections that stop it), V8's worker threads (its optimizing compilers and the parts of its
// collections that run beside JavaScript) and the rest (libuv's pool, Node's own). Read from
// /proc/self/task on Linux, in clock ticks; elsewhere there is nothing to read.
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'

/** CPU by kind of thread (user + system): clock ticks as read, ms once converted (`ticksInMs`). */
export interface ThreadCpu {
  readonly main: number
  readonly v8Workers: number
  readonly other: number
}

/** One thread's kind and its user + system ticks, from its `stat` and `comm` files. */
interface ThreadReading {
  readonly kind: keyof ThreadCpu
  readonly ticks: number
}

/**
 * User + system ticks of a `/proc/<pid>/task/<tid>/stat` line: fields 14 and 15, counted after
 * the command name, which is in parentheses and may itself hold spaces or parentheses.
 *
 * @returns The ticks, or undefined for a line that is not such a line.
 */
export function ticksOfStat(stat: string): number | undefined {
  const nameEnd = stat.lastIndexOf(')')
  if (nameEnd < 0) return undefined
  // After the name: state is field 3, so utime (14) and stime (15) are the 12th and 13th here.
  const fields = stat.slice(nameEnd + 2).split(' ')
  const ticks = Number(fields[11]) + Number(fields[12])
  return Number.isFinite(ticks) ? ticks : undefined
}

/** The kind of thread `tid` of process `pid`, named `name` (its `comm`). */
export function kindOfThread(pid: number, tid: number, name: string): keyof ThreadCpu {
  if (tid === pid) return 'main'
  return name === 'V8Worker' ? 'v8Workers' : 'other'
}

/** This process's threads now, by thread id; undefined where /proc cannot tell. */
export function readThreads(): ReadonlyMap<number, ThreadReading> | undefined {
  try {
    const threads = new Map<number, ThreadReading>()
    for (const entry of readdirSync('/proc/self/task')) {
      const tid = Number(entry)
      const dir = `/proc/self/task/${entry}`
      const ticks = ticksOfStat(readFileSync(`${dir}/stat`, 'utf8'))
      const name = readFileSync(`${dir}/comm`, 'utf8').trim()
      if (ticks !== undefined)
        threads.set(tid, { kind: kindOfThread(process.pid, tid, name), ticks })
    }
    return threads
  } catch {
    return undefined
  }
}

/**
 * The ticks each kind of thread spent from `before` to `now` (two `readThreads`; a thread started
 * between counts from zero, one ended between is not counted, its last ticks unknown).
 */
export function ticksSince(
  before: ReadonlyMap<number, ThreadReading> | undefined,
  now: ReadonlyMap<number, ThreadReading> | undefined,
): ThreadCpu | undefined {
  if (before === undefined || now === undefined) return undefined
  const spent = { main: 0, v8Workers: 0, other: 0 }
  for (const [tid, thread] of now) {
    spent[thread.kind] += thread.ticks - (before.get(tid)?.ticks ?? 0)
  }
  return spent
}

/** The length of a clock tick, ms (`getconf CLK_TCK`; 100 a second, Linux's, if it cannot tell). */
export function clockTickMs(): number {
  try {
    const hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
    return hz > 0 ? 1000 / hz : 10
  } catch {
    return 10
  }
}

/** `ticks` in ms, a tick being `tickMs`. */
export function ticksInMs(ticks: ThreadCpu, tickMs: number): ThreadCpu {
  return {
    main: ticks.main * tickMs,
    v8Workers: ticks.v8Workers * tickMs,
    other: ticks.other * tickMs,
  }
}

/** Two readings' sum, kind by kind. */
export function addThreadCpu(a: ThreadCpu, b: ThreadCpu): ThreadCpu {
  return { main: a.main + b.main, v8Workers: a.v8Workers + b.v8Workers, other: a.other + b.other }
}
