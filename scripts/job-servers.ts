// Three job servers share one task list; each task runs exactly once (docs/job-servers.md).
//
//   npx tsx scripts/job-servers.ts      # against CONSUL_HTTP_ADDR (default 127.0.0.1:8500)
//
// The servers are child processes of this script (`--server <name>`), so that one of them can be
// killed with SIGKILL mid-task: its task runs again on another server once Consul invalidates its
// session (TTL 10 s: up to 2 × TTL, then a lock-delay of 1 s).
import { spawn } from 'node:child_process'
import * as E from 'fp-ts/lib/Either.js'
import { lastValueFrom, mergeMap, takeWhile, timer } from 'rxjs'
import { createConsulClient, exclusive, type ConsulClient } from '../src/index.js'

const prefix = process.env['JOBS_PREFIX'] ?? 'service/jobs'
const taskIds = Array.from({ length: 12 }, (_, i) => `t${String(i + 1).padStart(2, '0')}`)
const taskKey = (id: string) => `${prefix}/task/${id}`
const doneKey = (id: string) => `${prefix}/done/${id}`
const started = Number(process.env['JOBS_STARTED'] ?? Date.now())
const at = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((done, fail) => {
    const timeout = setTimeout(done, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timeout)
      fail(signal.reason as Error)
    })
  })

async function isDone(consul: ConsulClient, id: string): Promise<boolean> {
  const entry = await consul.kv.get(doneKey(id))()
  if (E.isLeft(entry)) throw new Error(entry.left.message)
  return entry.right !== null
}

/** One job server: every 3 s it reads the task list and offers every task not yet done. */
async function server(name: string): Promise<void> {
  const consul = createConsulClient()
  const tasks$ = timer(0, 3000).pipe(
    mergeMap(async () => {
      const open: string[] = []
      for (const id of taskIds) if (!(await isDone(consul, id))) open.push(id)
      return open
    }),
    takeWhile((open) => open.length > 0),
    mergeMap((open) => open),
  )
  await lastValueFrom(
    tasks$.pipe(
      exclusive<string, void>({
        consul,
        value: name,
        ttl: '10s',
        lockDelay: '1s',
        watchPrefix: `${prefix}/task`,
        keyOf: taskKey,
        // Checked while holding the key: a task another server finished is skipped.
        isDone: (id) => isDone(consul, id),
        run: async (id, signal) => {
          console.log(`${at()} ${name} runs ${id}`)
          await sleep(2000, signal)
          const marked = await consul.kv.put(doneKey(id), name)()
          if (E.isLeft(marked)) throw new Error(marked.left.message)
        },
        concurrency: 2,
        onDone: 'delete',
      }),
    ),
    { defaultValue: undefined },
  )
  console.log(`${at()} ${name} finds every task done and stops`)
  await consul.close()
}

async function main(): Promise<void> {
  if (process.argv[2] === '--server') return server(process.argv[3] ?? 'server')
  const consul = createConsulClient()
  await consul.kv.delete(prefix, { recurse: true })()
  const servers = ['A', 'B', 'C'].map((name) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', import.meta.filename, '--server', name],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, JOBS_PREFIX: prefix, JOBS_STARTED: String(started) },
      },
    )
    return { name, child, runs: 0 }
  })
  const runs = new Map<string, string[]>()
  for (const s of servers) {
    s.child.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        console.log(line)
        const id = / runs (\S+)/.exec(line)?.[1]
        if (id === undefined) continue
        runs.set(id, [...(runs.get(id) ?? []), s.name])
        // Kill server A one second into its second task.
        if (s.name === 'A' && ++s.runs === 2) {
          setTimeout(() => {
            console.log(`${at()} -- SIGKILL server A, mid-task on ${id} --`)
            s.child.kill('SIGKILL')
          }, 1000)
        }
      }
    })
  }
  await Promise.all(servers.map((s) => new Promise((done) => s.child.once('exit', done))))
  const markers = await consul.kv.list(`${prefix}/done/`)()
  const marked = E.isRight(markers) ? markers.right.entries.length : 0
  const twice = [...runs].filter(([, by]) => by.length > 1)
  console.log(`${at()} ${marked}/${taskIds.length} tasks marked done; started more than once:`)
  for (const [id, by] of twice) console.log(`        ${id} by ${by.join(', ')}`)
  await consul.kv.delete(prefix, { recurse: true })()
  await consul.close()
}

await main()
