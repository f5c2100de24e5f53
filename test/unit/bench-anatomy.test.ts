// How table 2b of the bench (bench/anatomy.ts) reads a Consul debug log and splits a handover
// into exit → release → acquire → start, on hand-made logs in the format of Consul 1.8's, with the
// requests each implementation was seen to make.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { goDurationMs, parseAgentLog, splitHandover } from '../../bench/anatomy.js'

/** a equals b to the µs (wall-clock ms near 1.8e12 keep about 0.2 µs in a double). */
const close = (a: number, b: number): void => assert.ok(Math.abs(a - b) < 1e-3, `${a} ≠ ${b}`)

const P = 'bench-handover/x-1-1'
const S1 = 'ff37a50e-fc28-3498-53b3-2f1031a9e5c7'
const S2 = 'b4cde218-f854-e50a-4992-6abc51f665f6'
const S3 = '1ac444c1-053b-5eea-8e00-19d64685a30b'
const FLAGS = 'flags=3304740253564472344'

/** Wall-clock ms of 2026-11-28T06:00:<seconds>Z. */
const at = (seconds: number): number => Date.parse('2026-11-28T06:00:00.000Z') + seconds * 1000

/** A log line of a request the agent finished at 06:00:<seconds> (to the ms). */
const line = (
  seconds: number,
  method: string,
  url: string,
  port: number,
  latency: string,
): string =>
  `${new Date(at(seconds)).toISOString()} [DEBUG] agent.http: Request finished: method=${method} url=${url} from=127.0.0.1:${port} latency=${latency}`

const lockRelease = (s: number, session: string, port = 40874): string =>
  line(s, 'PUT', `/v1/kv/${P}/.lock?${FLAGS}&release=${session}`, port, '600.1µs')
const lockAcquire = (s: number, session: string, port: number, latency = '250µs'): string =>
  line(s, 'PUT', `/v1/kv/${P}/.lock?acquire=${session}&${FLAGS}`, port, latency)
const txn = (s: number, port: number, latency = '700µs'): string =>
  line(s, 'PUT', '/v1/txn', port, latency)
const poll = (s: number, port: number): string =>
  line(s, 'GET', `/v1/kv/${P}?recurse&index=32&wait=30000ms`, port, '1.529441s')

describe('parseAgentLog', () => {
  it('reads method, URL, client and latency, and takes the middle of the logged ms', () => {
    const [request, ...more] = parseAgentLog(
      [
        '2026-11-28T05:51:07.305Z [DEBUG] agent.server: Cannot upgrade to new ACLs: leaderMode=0',
        poll(21.049, 40870),
        '',
      ].join('\n'),
    )
    assert.equal(more.length, 0)
    assert.ok(request !== undefined)
    const { latencyMs, ...others } = request
    assert.deepEqual(others, {
      at: at(21.049) + 0.5,
      method: 'GET',
      url: `/v1/kv/${P}?recurse&index=32&wait=30000ms`,
      from: '127.0.0.1:40870',
    })
    close(latencyMs, 1529.441)
  })

  it('reads Go durations in every unit the agent prints', () => {
    close(goDurationMs('371.172µs'), 0.371172)
    close(goDurationMs('540.413398ms'), 540.413398)
    close(goDurationMs('1m2.5s'), 62_500)
    assert.ok(Number.isNaN(goDurationMs('soon')))
  })
})

describe('splitHandover', () => {
  it("consul lock: the next holder's attempt, named by the session that releases next", () => {
    // Both waiters try in the same ms; only the session that releases next had won.
    const log = parseAgentLog(
      [
        lockRelease(21.047, 'a0000000-0000-0000-0000-000000000000'),
        lockAcquire(21.064, S1, 40846),
        lockAcquire(21.064, S2, 40870),
        lockRelease(21.678, S2, 35046),
      ].join('\n'),
    )
    const split = splitHandover(log, { release: at(21.0355), start: at(21.0925) }, 'consul lock')
    assert.ok(!('unsplit' in split))
    // R 21.0355 → release 21.0475 → S2's attempt (the second line) 21.0645 → S 21.0925.
    close(split.exitToRelease, 12)
    close(split.releaseToAcquire, 17)
    close(split.acquireToStart, 28)
    close(split.exitToRelease + split.releaseToAcquire + split.acquireToStart, split.total)
    assert.equal(split.oneWrite, false)

    const other = parseAgentLog(
      [
        lockRelease(21.047, 'a0000000-0000-0000-0000-000000000000'),
        lockAcquire(21.064, S2, 40870, '3ms'),
        lockAcquire(21.065, S1, 40846),
        lockRelease(21.678, S1, 35046),
      ].join('\n'),
    )
    const first = splitHandover(other, { release: at(21.0355), start: at(21.0925) }, 'consul lock')
    assert.ok(!('unsplit' in first))
    // S2's slow attempt finished first but overlapped S1's: the releaser says S1 had won.
    close(first.releaseToAcquire, 18)
  })

  it('consul lock: an acquisition the agent logged before the release it followed', () => {
    // The release's handler ended 4.65 ms after it began: the waiters were served meanwhile.
    const log = parseAgentLog(
      [
        lockAcquire(45.114, S1, 43436),
        lockAcquire(45.114, S2, 43362),
        line(45.116, 'PUT', `/v1/kv/${P}/.lock?${FLAGS}&release=${S3}`, 43440, '4.65ms'),
        lockRelease(45.673, S1, 43452),
      ].join('\n'),
    )
    const split = splitHandover(log, { release: at(45.0965), start: at(45.1405) }, 'consul lock')
    assert.ok(!('unsplit' in split))
    close(split.exitToRelease, 20)
    close(split.releaseToAcquire, -2)
    close(split.acquireToStart, 26)
  })

  it("rxsem run --leader: the first lock attempt; of two the log cannot order, the next releaser's", () => {
    const pair = { release: at(36.0579), start: at(36.1796) }
    const apart = parseAgentLog(
      [lockRelease(36.089, S1), txn(36.099, 36958), txn(36.107, 36962)].join('\n'),
    )
    const split = splitHandover(apart, pair, 'rxsem lock')
    assert.ok(!('unsplit' in split))
    close(split.releaseToAcquire, 10)

    // Two attempts the log cannot order (the second began before the first surely ended).
    const overlapping = [lockRelease(36.089, S1), txn(36.099, 36958), txn(36.1, 36962, '2ms')]
    assert.deepEqual(splitHandover(parseAgentLog(overlapping.join('\n')), pair, 'rxsem lock'), {
      unsplit: 'two acquiring writes in the same millisecond',
    })
    // The next holder releases on the connection it tried on: that attempt was its own.
    for (const [port, ms] of [
      [36962, 11],
      [36958, 10],
    ] as const) {
      const log = parseAgentLog([...overlapping, lockRelease(37.75, S2, port)].join('\n'))
      const byPort = splitHandover(log, pair, 'rxsem lock')
      assert.ok(!('unsplit' in byPort))
      close(byPort.releaseToAcquire, ms)
    }
    const early = parseAgentLog([lockRelease(36.089, S1), txn(36.089, 36958)].join('\n'))
    assert.deepEqual(splitHandover(early, pair, 'rxsem lock'), {
      unsplit: 'an acquiring write in the same millisecond as the release',
    })
  })

  it('rxsem run --limit 1: a release that hands the slot over is the acquiring write', () => {
    const log = parseAgentLog(
      [
        txn(19.306, 49630, '2.3ms'),
        poll(19.306, 49594),
        line(19.33, 'PUT', `/v1/session/destroy/${S1}`, 49764, '1.34ms'),
      ].join('\n'),
    )
    const split = splitHandover(
      log,
      { release: at(19.2865), start: at(19.3805) },
      'rxsem semaphore',
    )
    assert.ok(!('unsplit' in split))
    assert.equal(split.oneWrite, true)
    assert.equal(split.releaseToAcquire, 0)
    close(split.exitToRelease, 20)
    close(split.acquireToStart, 74)
  })

  it("rxsem run --limit 1: after a plain release, the heir's transaction", () => {
    const pair = { release: at(22.5746), start: at(22.6996) }
    const casOut = parseAgentLog(
      [txn(22.608, 49654), poll(22.609, 49774), txn(22.62, 49750)].join('\n'),
    )
    const split = splitHandover(casOut, pair, 'rxsem semaphore')
    assert.ok(!('unsplit' in split))
    assert.equal(split.oneWrite, false)
    close(split.releaseToAcquire, 12)

    // The heir's transaction logged first: the one that began first was the release.
    const inverted = parseAgentLog(
      [txn(22.61, 49750, '300µs'), txn(22.612, 49654, '5ms')].join('\n'),
    )
    const late = splitHandover(inverted, pair, 'rxsem semaphore')
    assert.ok(!('unsplit' in late))
    close(late.exitToRelease, 37.9)
    close(late.releaseToAcquire, -2)

    // A read of .lock between: maybe the holder's own second try after a lost CAS.
    const reread = parseAgentLog(
      [
        txn(22.608, 49654),
        line(22.611, 'GET', `/v1/kv/${P}/.lock`, 49654, '90µs'),
        txn(22.62, 49654),
      ].join('\n'),
    )
    assert.deepEqual(splitHandover(reread, pair, 'rxsem semaphore'), {
      unsplit: 'a read of .lock between the two transactions',
    })
  })

  it('counts a handover without its writes as not split', () => {
    const log = parseAgentLog([poll(22.609, 49774)].join('\n'))
    assert.deepEqual(
      splitHandover(log, { release: at(22.5746), start: at(22.6996) }, 'rxsem semaphore'),
      { unsplit: 'no release write before the start' },
    )
    assert.deepEqual(
      splitHandover(
        parseAgentLog(lockRelease(22.6, S1)),
        { release: at(22.5746), start: at(22.6996) },
        'consul lock',
      ),
      { unsplit: 'no acquiring write before the start' },
    )
  })
})
