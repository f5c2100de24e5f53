// Many acquire/release cycles in one process: no session or key left in Consul, no growth in open
// sockets or timers, heap flat. RXSEM_SOAK_CYCLES sets the count (the issue asks for 10,000; the
// default keeps this file under about 3 minutes on a 2-core machine, see docs/reliability.md).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { readdirSync, readlinkSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { filter, firstValueFrom } from 'rxjs'
import { semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import { eventually, listPrefix, sessionsNamed } from '../support/observe.js'

const CYCLES = Number(process.env['RXSEM_SOAK_CYCLES'] ?? 10_000)
// Cycles run in this many lanes at once, each on its own prefix: one cycle is mostly waiting
// (round trips and the watch's pacing), so lanes reach the 10,000 cycles in CI's time.
const LANES = Number(process.env['RXSEM_SOAK_LANES'] ?? 8)
const WARM_UP = 50

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Active handles by type (TCPSocketWrap, Timeout, ...). */
function resources(): Map<string, number> {
  const counts = new Map<string, number>()
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1)
  return counts
}

/** Open file descriptors that are sockets (idle keep-alive sockets are unref'd: not "active"). */
function openSockets(): number {
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) n++
    } catch {
      // closed meanwhile
    }
  }
  return n
}

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((d) => setImmediate(d))
  }
  return process.memoryUsage().heapUsed
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`

describe('soak', () => {
  const agent = agentSuite()

  it(`runs ${CYCLES} acquire/release cycles with no leak in Consul, sockets, timers or heap`, async (t) => {
    assert.ok(Number.isInteger(CYCLES) && CYCLES > 0, 'RXSEM_SOAK_CYCLES is a positive integer')
    const prefixes = Array.from({ length: LANES }, (_, lane) =>
      testPrefix(t, agent.url, `soak-${lane}`),
    )
    const name = `soak ${prefixes[0] ?? ''}`
    const cycle = async (prefix: string): Promise<void> => {
      const sem = semaphore({ prefix, limit: 1, consul: agent.client, sessionName: name })
      const sub = keep(t, sem.holding$.subscribe())
      await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
      await sem.close()
      sub.unsubscribe()
    }
    /** Runs `count` cycles spread over the lanes, calling `progress` after each one. */
    const run = async (count: number, progress: (done: number) => Promise<void>): Promise<void> => {
      let started = 0
      let done = 0
      await Promise.all(
        prefixes.map(async (prefix) => {
          while (started < count) {
            started++
            await cycle(prefix)
            await progress(++done)
          }
        }),
      )
    }
    await run(WARM_UP, async () => {})
    const heapStart = await heapAfterGc()
    const before = resources()
    const socketsBefore = openSockets()
    const samples: number[] = []
    const started = Date.now()
    await run(CYCLES, async (done) => {
      if (done % Math.max(1, Math.floor(CYCLES / 10)) === 0) samples.push(await heapAfterGc())
    })
    const elapsed = Date.now() - started
    // Closed connections and finished timers go when the event loop gets to them: waited for (up
    // to 10 s, then the counts as they are fail below), not given 200 ms of a loaded machine.
    const settled = () => {
      const counts = resources()
      return (counts.get('TCPSocketWrap') ?? 0) <= (before.get('TCPSocketWrap') ?? 0) + 2 &&
        (counts.get('Timeout') ?? 0) <= (before.get('Timeout') ?? 0) + 2 &&
        openSockets() <= socketsBefore + 2
        ? true
        : undefined
    }
    await eventually('connections and timers released', settled, 10_000).catch(() => undefined)
    const heapEnd = await heapAfterGc()
    const afterCounts = resources()
    const socketsAfter = openSockets()
    const sockets = [before.get('TCPSocketWrap') ?? 0, afterCounts.get('TCPSocketWrap') ?? 0]
    const timers = [before.get('Timeout') ?? 0, afterCounts.get('Timeout') ?? 0]
    t.diagnostic(
      `soak: ${CYCLES} cycles in ${LANES} lanes in ${elapsed} ms (${(elapsed / CYCLES).toFixed(1)} ms each); heap ` +
        `after GC ${mb(heapStart)} → ${mb(heapEnd)} (samples ${samples.map(mb).join(', ')}); ` +
        `TCPSocketWrap ${sockets[0]} → ${sockets[1]}; Timeout ${timers[0]} → ${timers[1]}; ` +
        `socket fds ${socketsBefore} → ${socketsAfter}`,
    )
    // The pool keeps up to its connection limit open; only growth past that would be a leak.
    assert.ok((sockets[1] ?? 0) <= (sockets[0] ?? 0) + 2, `sockets grew: ${sockets.join(' → ')}`)
    assert.ok(
      socketsAfter <= socketsBefore + 2,
      `socket fds grew: ${socketsBefore} → ${socketsAfter}`,
    )
    assert.ok((timers[1] ?? 0) <= (timers[0] ?? 0) + 2, `timers grew: ${timers.join(' → ')}`)
    assert.ok(heapEnd - heapStart < 8 * 1024 * 1024, `heap grew ${mb(heapEnd - heapStart)}`)
    for (const prefix of prefixes) {
      await eventually('nothing left in Consul', async () => {
        const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
        return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
      })
    }
    assert.deepEqual(await sessionsNamed(agent.url, name), [], 'no session left')
  })
})
