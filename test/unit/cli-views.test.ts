// What `rxsem status`, `rxsem watch` and `rxsem set-limit` show, from given facts: no count of
// waiters they cannot see, no time of acquisition they did not see, the effect of a new limit on
// the contenders seen, and the library's messages in the words of the command line.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { notConsul } from '../../src/consul/not-consul.js'
import { createConsulClient } from '../../src/consul/client.js'
import { unreachableError } from '../../src/effects/coordinator/give-up-error.js'
import { cliWording, describeError } from '../../src/cli/report.js'
import { describeEffect } from '../../src/cli/set-limit/command.js'
import { formatStatus } from '../../src/cli/status/text.js'
import { withEstimates } from '../../src/cli/status/sample.js'
import { NO_HAND_OVERS, noteHandOvers } from '../../src/core/semaphore/hand-overs.js'
import {
  LEADER_WAITERS_NOTE,
  prefixStatus,
  type PrefixStatus,
} from '../../src/cli/status/prefix-status.js'
import { renderFrame, type WatchView } from '../../src/cli/watch/frame.js'
import { LOCK_FLAGS } from '../../src/base/flags.js'

const session = (digit: string): string => digit.repeat(8) + '-0000-0000-0000-000000000000'

/** A `consul lock` leader key held by session 1, as one listing shows it. */
const leaderSnapshot = {
  index: 7n,
  entries: [
    {
      key: 'svc/leader/.lock',
      value: new TextEncoder().encode('host-a'),
      flags: LOCK_FLAGS,
      session: session('1'),
      createIndex: 5n,
      modifyIndex: 7n,
      lockIndex: 1n,
    },
  ],
}

const leaderStatus = (): PrefixStatus => {
  const read = prefixStatus(leaderSnapshot, 'svc/leader')
  assert.ok(read._tag === 'Right')
  return read.right
}

describe('a leader lock has no waiters to count', () => {
  it('its status has no waiting list, and a note that says why', () => {
    const status = leaderStatus()
    assert.equal(status.waiting, null)
    assert.equal(status.waitingNote, LEADER_WAITERS_NOTE)
    assert.equal((JSON.parse(JSON.stringify(status)) as PrefixStatus).waiting, null)
  })

  it('rxsem status prints no count of waiters, and says they cannot be counted', () => {
    const text = formatStatus(leaderStatus())
    assert.doesNotMatch(text, /waiting +\d/)
    assert.match(text, /^waiting {2}not visible: contenders waiting for a leader lock/m)
    assert.match(
      text.replace(/\s+/g, ' '),
      /write nothing under the prefix .* cannot be listed or counted/,
    )
  })

  it('rxsem watch prints no count of waiters, and says they cannot be counted', () => {
    const frame = renderFrame(
      {
        prefix: 'svc/leader',
        address: 'http://127.0.0.1:8500',
        connection: { type: 'connected', index: 7n },
        status: leaderStatus(),
        problem: undefined,
        firstSeen: new Map([[session('1'), { at: 0, seenTaken: false }]]),
      },
      5000,
      80,
    ).join('\n')
    assert.doesNotMatch(frame, /\d+ waiting/)
    assert.match(frame, /1 of 1 held, waiters not visible/)
    assert.match(frame.replace(/\s+/g, ' '), /\(not visible: contenders waiting for a leader lock/)
  })
})

describe('rxsem status --sample: estimated waits', () => {
  const queue: PrefixStatus = {
    prefix: 'svc/q',
    limit: 1,
    shape: 'go-map',
    holders: [],
    waiting: [0, 1].map((rank) => ({
      session: session(String(rank + 2)),
      rank,
      value: null,
      name: null,
    })),
  }

  it('gives each waiter its place + 1 times the mean interval between the hand-overs seen', () => {
    let log = noteHandOvers(NO_HAND_OVERS, [session('a')], 0)
    log = noteHandOvers(log, [session('b')], 1000)
    log = noteHandOvers(log, [session('c')], 2000)
    const estimated = withEstimates(queue, log, 2100)
    assert.deepEqual(
      estimated.waiting?.map((w) => w.estimatedWaitMs),
      [1000, 2000],
    )
    assert.match(formatStatus(estimated), /#1 \S+ {2}value - {2}name - {2}wait ~2\.0s/)
  })

  it('says unknown before two hand-overs were seen one after the other, and nothing without a sample', () => {
    const once = noteHandOvers(noteHandOvers(NO_HAND_OVERS, [session('a')], 0), [session('b')], 500)
    const unknown = withEstimates(queue, once, 600)
    assert.deepEqual(
      unknown.waiting?.map((w) => w.estimatedWaitMs),
      [null, null],
    )
    assert.match(formatStatus(unknown), /wait unknown \(too few hand-overs seen\)/)
    assert.doesNotMatch(formatStatus(queue), / wait /)
  })
})

describe('rxsem watch times', () => {
  const view = (seenTaken: boolean): WatchView => ({
    prefix: 'p',
    address: 'http://127.0.0.1:8500',
    connection: { type: 'connected', index: 9n },
    status: {
      prefix: 'p',
      limit: 2,
      shape: 'go-map',
      holders: [{ session: session('1'), alive: true, value: 'v', name: 'n', revoke: null }],
      waiting: [],
    },
    problem: undefined,
    firstSeen: new Map([[session('1'), { at: Date.UTC(2026, 0, 1, 12, 0, 0), seenTaken }]]),
  })
  const at = Date.UTC(2026, 0, 1, 12, 0, 40)

  it('marks a holder already holding when first seen: taken at or before, held at least', () => {
    const lines = renderFrame(view(false), at, 80)
    const row = lines.find((line) => line.startsWith('11111111'))
    assert.match(row ?? '', /^11111111 {2}≤\d\d:\d\d:\d\d ≥40s +v +n$/)
    assert.match(
      lines.join(' '),
      /≤ and ≥: held already when the watch first saw it; Consul records no time of acquisition/,
    )
  })

  it('shows each waiter how many are ahead, and its estimated wait once it saw two hand-overs', () => {
    const waiting = (['2', '3'] as const).map((digit, rank) => ({
      session: session(digit),
      rank,
      value: `w${digit}`,
      name: null,
    }))
    const base = view(true)
    const withWaiters: WatchView = {
      ...base,
      status: base.status && { ...base.status, waiting },
    }
    const rows = (frame: WatchView): string[] =>
      renderFrame(frame, at, 80).filter((line) => /^[23]{8}/.test(line))
    assert.deepEqual(
      rows(withWaiters).map((row) => row.split(/ +/).slice(1, 3)),
      [
        ['0', '-'],
        ['1', '-'],
      ],
    )
    const handOvers = { intervals: [1000, 1000], last: at - 1000, holders: [session('1')] }
    assert.deepEqual(
      rows({ ...withWaiters, handOvers }).map((row) => row.split(/ +/).slice(1, 3)),
      [
        ['0', '~1.0s'],
        ['1', '~2.0s'],
      ],
    )
  })

  it('shows the time of an acquisition it saw as it is', () => {
    const lines = renderFrame(view(true), at, 80)
    const row = lines.find((line) => line.startsWith('11111111'))
    assert.match(row ?? '', /^11111111 {3}\d\d:\d\d:\d\d 40s +v +n$/)
    assert.doesNotMatch(lines.join('\n'), /[≤≥]/)
  })

  it('ends a terminal frame with how to quit, and a piped one (no key hint) without', () => {
    const onTerminal = renderFrame(view(true), at, 80, 'q or Ctrl-C: quit')
    assert.equal(onTerminal.at(-1), 'q or Ctrl-C: quit')
    const piped = renderFrame(view(true), at, 80)
    assert.doesNotMatch(piped.join('\n'), /quit/)
    assert.deepEqual(piped, onTerminal.slice(0, -1))
  })

  it('before the first answer says how long it has waited for it, and shows no holders', () => {
    const lines = renderFrame(
      {
        ...view(false),
        connection: { type: 'connecting' },
        status: undefined,
        startedAt: at - 3000,
      },
      at,
      80,
    )
    assert.match(lines[1] ?? '', /waiting for the first answer \(3s\)/)
    assert.ok(!lines.some((line) => line.startsWith('HOLDER')))
  })
})

describe('rxsem set-limit says what the change does to the contenders seen', () => {
  it('a raise admits followers and stops the waiters that do not follow the limit', () => {
    const text = describeEffect('jobs', { limit: 1, holders: 1, waiting: 2 }, 2, false)
    assert.match(text, /^jobs now: 1 holder, 2 waiting contenders, limit 1\.\n/)
    assert.match(text, /admit 1 of the 2 waiting at once, if it follows the limit/)
    assert.match(
      text.replace(/\s+/g, ' '),
      /stop each waiting contender that does not follow the limit .* with a limit conflict, at once/,
    )
    assert.match(text.replace(/\s+/g, ' '), /up to 2 of the 2 waiting may stop/)
    assert.match(text, /leave the holder its slot until it releases/)
    assert.doesNotMatch(text, /Nothing was written/)
  })

  it('a lowering under the holders admits no one', () => {
    const text = describeEffect('jobs', { limit: 3, holders: 3, waiting: 1 }, 1, true)
    assert.match(text, /Setting the limit to 1 would:/)
    assert.match(text, /admit none of the 1 waiting until fewer than 1 hold/)
    assert.match(text, /Nothing was written \(--dry-run\)\.\n$/)
  })

  it('says nothing of an effect when the limit is already so', () => {
    assert.equal(
      describeEffect('jobs', { limit: 2, holders: 1, waiting: 0 }, 2, false),
      'jobs now: 1 holder, 0 waiting contenders, limit 2.\n',
    )
  })
})

describe('library messages in the words of the command line', () => {
  const answer = {
    status: 404,
    headers: {},
    body: 'nope',
    label: 'GET /v1/kv/p/.lock',
    origin: 'http://127.0.0.1:9999',
  }

  it('names --http-addr where the library says "the address option"', () => {
    const line = describeError(notConsul(answer, 'it answered 404'))
    assert.doesNotMatch(line, /address option/)
    assert.match(
      line,
      /set --http-addr \(or CONSUL_HTTP_ADDR\) to the HTTP address of a Consul agent/,
    )
  })

  it('leaves out the library options a command line cannot set', async () => {
    const client = createConsulClient({ address: '127.0.0.1:9999' })
    try {
      const line = describeError(unreachableError(client, 10_000, undefined))
      assert.doesNotMatch(line, /startupTimeout|option/)
      assert.match(
        line,
        /or set --http-addr \(or CONSUL_HTTP_ADDR\) to the address of a running one\.$/,
      )
    } finally {
      await client.close()
    }
  })

  it('turns each known phrase, and leaves other text alone', () => {
    assert.equal(
      cliWording('check CONSUL_HTTP_ADDR and that the agent runs'),
      'check --http-addr (or CONSUL_HTTP_ADDR) and that the agent runs',
    )
    assert.equal(
      cliWording('(CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token option)'),
      '(CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or --token-file)',
    )
    assert.equal(cliWording('nothing to change here'), 'nothing to change here')
  })
})
