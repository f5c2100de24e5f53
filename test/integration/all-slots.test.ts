// A slot of every one of several semaphores, or of none, on the real agent: two processes looping
// on withSlots over the same three semaphores in opposite orders both make progress, and Consul,
// read in one transaction across the three prefixes, never shows one of them holding a slot of
// some and not of the others; beside consul lock -n, the contender waits without holding anything,
// and takes its slots when Go's holder goes; refusals; nothing left once closed.
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { after, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { ALL_SLOTS_FLAGS } from '../../src/base/flags.js'
import { filter, firstValueFrom } from 'rxjs'
import {
  allSlots,
  semaphore,
  SemaphoreError,
  withSlots,
  type ConsulClient,
} from '../../src/index.js'
import { createConsulClient } from '../../src/consul/client.js'
import { holdingConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { startChild } from '../support/default-client-child.js'
import {
  eventually,
  holdersOf,
  putRaw,
  readLock,
  SEMAPHORE_FLAGS as LOCK_BODY_FLAGS,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { keep, onEnd, testPrefix, type Scope } from '../support/tracked.js'
import type { AllSlotsLoopMessage } from './fixtures/all-slots-loop.js'

const fixture = resolve(import.meta.dirname, 'fixtures/all-slots-loop.ts')

/**
 * Reads the three prefixes in one transaction, again and again until the test ends, and names
 * each all-or-nothing session that was listed live in some `.lock` and not in the others.
 */
function partialHolds(t: Scope, consul: ConsulClient, prefixes: readonly string[]): () => string[] {
  const partial = new Set<string>()
  let reads = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const answer = await consul.kv.txn(
        prefixes.map((p) => ({ verb: 'get-tree', key: `${p}/` })),
      )()
      if (E.isRight(answer) && answer.right.committed) {
        reads += 1
        const entries = answer.right.results
        const spanning = new Set(
          entries.filter((e) => e.flags === ALL_SLOTS_FLAGS && e.session).map((e) => e.session),
        )
        const listedLive = prefixes.map((p) => {
          const lock = entries.find((e) => e.key === `${p}/.lock`)
          const body = lock?.value
            ? (JSON.parse(Buffer.from(lock.value).toString('utf8')) as unknown)
            : undefined
          const live = new Set(
            entries.filter((e) => e.key.startsWith(`${p}/`) && e.session).map((e) => e.session),
          )
          return new Set(holdersOf(body).filter((s) => live.has(s) && spanning.has(s)))
        })
        for (const set of listedLive) {
          for (const s of set) if (!listedLive.every((other) => other.has(s))) partial.add(s)
        }
      }
      await new Promise((done) => setTimeout(done, 5))
    }
  })()
  onEnd(t, async () => {
    stopped = true
    await loop
  })
  return () => {
    assert.ok(reads > 10, `Consul was read ${reads} times`)
    return [...partial]
  }
}

describe('a slot of every one of several semaphores', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  it(
    'lets two processes looping in opposite orders over the same three semaphores both progress for 60 s, never holding some and not others',
    { timeout: 150_000 },
    async (t) => {
      const prefixes = ['a', 'b', 'c'].map((n) => testPrefix(t, agent.url, `all-slots-${n}`))
      const partial = partialHolds(t, agent.client, prefixes)
      const forward = startChild<AllSlotsLoopMessage>(
        fixture,
        ['60', 'forward', '1', ...prefixes],
        agent.addr,
      )
      const backward = startChild<AllSlotsLoopMessage>(
        fixture,
        ['60', 'backward', '1', ...[...prefixes].reverse()],
        agent.addr,
      )
      onEnd(t, () => forward.stop())
      onEnd(t, () => backward.stop())
      const [a, b] = await Promise.all([forward.exited, backward.exited])
      assert.equal(a, 0, `forward: ${forward.stderr()} ${JSON.stringify(forward.messages.at(-1))}`)
      assert.equal(
        b,
        0,
        `backward: ${backward.stderr()} ${JSON.stringify(backward.messages.at(-1))}`,
      )
      const jobs = (child: typeof forward): number => {
        const done = child.messages.find((m) => m.type === 'done')
        return done?.type === 'done' ? done.jobs : 0
      }
      const [fj, bj] = [jobs(forward), jobs(backward)]
      t.diagnostic(`jobs in 60 s: forward ${fj}, backward ${bj}`)
      assert.ok(fj > 10 && bj > 10, `both progress: forward ${fj}, backward ${bj}`)
      // Every token is that of one grant: never two jobs under one.
      const tokens = [...forward.messages, ...backward.messages].flatMap((m) =>
        m.type === 'held' ? [m.token] : [],
      )
      assert.equal(new Set(tokens).size, tokens.length, 'a token per job')
      assert.deepEqual(partial(), [], 'no session listed live in some .lock and not the others')
    },
  )

  it('beside consul lock -n 2: waits holding nothing while Go fills one semaphore, then takes a slot of both in one write', async (t) => {
    const [a, b] = ['go-a', 'go-b'].map((n) => testPrefix(t, agent.url, `all-slots-${n}`)) as [
      string,
      string,
    ]
    const first = await holdingConsulLock(t, agent, a, 2)
    await holdingConsulLock(t, agent, a, 2)
    const both = allSlots([
      { prefix: a, limit: 2, consul: agent.client },
      { prefix: b, limit: 1, consul: agent.client },
    ])
    onEnd(t, () => both.close())
    const states: boolean[] = []
    const sub = both.state$.subscribe((s) => states.push(s.holding))
    onEnd(t, () => sub.unsubscribe())
    // It waits first in line in b with its slot free, and holds nothing there.
    await eventually('the contender waiting in both prefixes', async () => {
      const keys = await agent.client.kv.txn([{ verb: 'get-tree', key: `${b}/` }])()
      return E.isRight(keys) &&
        keys.right.committed &&
        keys.right.results.some((e) => e.flags === ALL_SLOTS_FLAGS)
        ? true
        : undefined
    })
    assert.deepEqual(holdersOf((await readLock(agent.url, b))?.body), [], 'nothing held in b')
    assert.ok(!states.includes(true))
    await stopAllConsulLocks([first.go])
    await eventually('holding both', () => (states.at(-1) === true ? true : undefined), 30_000)
    assert.equal(holdersOf((await readLock(agent.url, a))?.body).length, 2, 'Go counts 2 of 2 in a')
    assert.equal(holdersOf((await readLock(agent.url, b))?.body).length, 1)
    await both.close()
    assert.equal(holdersOf((await readLock(agent.url, b))?.body).length, 0, 'given back')
  })

  it('drops holding the moment one slot is taken away, gives every slot back, and holds again with a new session', async (t) => {
    const [a, b] = ['lost-a', 'lost-b'].map((n) => testPrefix(t, agent.url, `all-slots-${n}`)) as [
      string,
      string,
    ]
    const both = allSlots([
      { prefix: a, limit: 1, consul: agent.client },
      { prefix: b, limit: 1, consul: agent.client },
    ])
    onEnd(t, () => both.close())
    const states: { holding: boolean; session: string | undefined }[] = []
    const sub = both.state$.subscribe((s) =>
      states.push({ holding: s.holding, session: s.session }),
    )
    onEnd(t, () => sub.unsubscribe())
    const first = await eventually('holding both', () => states.find((s) => s.holding), 30_000)
    // An operator takes it out of b's .lock: it holds a slot of a only, so it holds none.
    const lock = await readLock(agent.url, b)
    assert.ok(lock !== undefined)
    const emptied = await putRaw(
      agent.url,
      `${b}/.lock`,
      JSON.stringify({ Limit: 1, Holders: {} }),
      `cas=${lock.entry.ModifyIndex}&flags=${LOCK_BODY_FLAGS}`,
    )
    assert.ok(emptied, 'the operator emptied b/.lock')
    await eventually('dropped', () => (states.at(-1)?.holding === false ? true : undefined), 30_000)
    const again = await eventually(
      'holding again',
      () => states.find((s) => s.holding && s.session !== first.session),
      30_000,
    )
    assert.ok(again.session !== undefined)
    // The first session gave a back as well: only the new one is listed in a.
    assert.deepEqual(holdersOf((await readLock(agent.url, a))?.body), [again.session])
  })

  it('stops with the prefix problem of one semaphore, writing nothing anywhere', async (t) => {
    const [a, b] = ['problem-a', 'problem-b'].map((n) =>
      testPrefix(t, agent.url, `all-slots-${n}`),
    ) as [string, string]
    // b's .lock states a limit of 3; this contender expects 1.
    assert.ok(
      await putRaw(
        agent.url,
        `${b}/.lock`,
        JSON.stringify({ Limit: 3, Holders: {} }),
        `flags=${LOCK_BODY_FLAGS}`,
      ),
    )
    const both = allSlots([
      { prefix: a, limit: 1, consul: agent.client },
      { prefix: b, limit: 1, consul: agent.client },
    ])
    onEnd(t, () => both.close())
    const failure = await new Promise<unknown>((resolve) => {
      const sub = both.state$.subscribe({ error: resolve })
      onEnd(t, () => sub.unsubscribe())
    })
    assert.ok(failure instanceof SemaphoreError, String(failure))
    assert.equal(failure.kind, 'LimitConflict', failure.message)
    await both.close()
    assert.deepEqual(holdersOf((await readLock(agent.url, a))?.body), [], 'nothing held in a')
    await eventually('its keys gone', async () => {
      const keys = await agent.client.kv.txn([
        { verb: 'get-tree', key: `${a}/` },
        { verb: 'get-tree', key: `${b}/` },
      ])()
      return E.isRight(keys) &&
        keys.right.committed &&
        keys.right.results.every((e) => e.flags !== ALL_SLOTS_FLAGS)
        ? true
        : undefined
    })
  })

  /**
   * An allSlots contender through a fault proxy, joined in prefixes a and b and waiting for a's
   * slot, which another contender holds; `free()` gives that slot back, so that it grants next.
   * `ended` is the error its `state$` ends with; `grants()` the transactions the proxy saw.
   */
  async function waitingToGrant(t: Scope, name: string) {
    const [a, b] = [`${name}-a`, `${name}-b`].map((n) =>
      testPrefix(t, agent.url, `all-slots-${n}`),
    ) as [string, string]
    const proxy = await startFaultProxy(agent.addr)
    onEnd(t, () => proxy.close())
    const client = createConsulClient({ address: proxy.addr })
    onEnd(t, () => client.close())
    const other = semaphore({ prefix: a, limit: 1, consul: agent.client })
    onEnd(t, () => other.close())
    keep(t, other.holding$.subscribe())
    await firstValueFrom(other.holding$.pipe(filter(Boolean)))
    const both = allSlots([
      { prefix: a, limit: 1, consul: client },
      { prefix: b, limit: 1, consul: client },
    ])
    onEnd(t, () => both.close())
    const ended = new Promise<unknown>((resolve) => {
      const sub = both.state$.subscribe({ error: resolve })
      onEnd(t, () => sub.unsubscribe())
    })
    await firstValueFrom(both.state$.pipe(filter((s) => s.ranks.length === 2)))
    proxy.resetCounts()
    return {
      proxy,
      both,
      ended,
      free: () => other.close(),
      grants: () => proxy.requests().filter((r) => r.method === 'PUT' && r.path === '/v1/txn'),
    }
  }

  /** `failure` is a PermissionDenied of the grant. */
  const grantRefused = (failure: unknown): void => {
    assert.ok(failure instanceof SemaphoreError, String(failure))
    assert.equal(failure.kind, 'PermissionDenied', failure.message)
    assert.match(failure.message, /allSlots, writing every \.lock/)
  }

  it('waits a moment after a grant Consul failed to answer, and stops at a grant it refuses', async (t) => {
    const { proxy, both, ended, free, grants } = await waitingToGrant(t, 'grant')
    // Every transaction answered 500: the grant is tried again only after a pause.
    proxy.setMode({ when: { method: 'PUT', pathPrefix: '/v1/txn' }, then: 'error500' })
    await free()
    const [first, second] = await eventually(
      'two grants answered 500',
      () => (grants().length >= 2 ? grants() : undefined),
      30_000,
    )
    assert.ok(first !== undefined && second !== undefined)
    assert.ok(second.at - first.at >= 900, `tried again after ${second.at - first.at} ms`)

    // A refusal (403): it stops, saying so, and does not write again.
    const before = grants().length
    proxy.setMode({
      when: { method: 'PUT', pathPrefix: '/v1/txn' },
      then: { status: 403, body: 'Permission denied' },
    })
    grantRefused(await ended)
    await both.close()
    assert.equal(
      grants().length - before,
      2,
      "the refused grant, then the give-back's read of every .lock: nothing written again",
    )
  })

  it('stops at the fifth grant in a row answered 500 for an ACL problem, as every contender does', async (t) => {
    const { proxy, both, ended, free, grants } = await waitingToGrant(t, 'grant-acl')
    proxy.setMode({
      when: { method: 'PUT', pathPrefix: '/v1/txn' },
      then: { status: 500, body: 'rpc error making call: ACL not found' },
    })
    await free()
    grantRefused(await ended)
    await both.close()
    assert.equal(grants().length, 6, "five grants, then the give-back's read of every .lock")
  })

  it('refuses more semaphores than one transaction takes, a prefix listed twice, and session options that differ', () => {
    const many = Array.from({ length: 65 }, (_, i) => ({ prefix: `p/${i}`, limit: 1 }))
    const refused = (entries: Parameters<typeof allSlots>[0], pattern: RegExp): void =>
      assert.throws(
        () => allSlots(entries),
        (error: unknown) =>
          error instanceof SemaphoreError &&
          error.kind === 'InvalidOptions' &&
          pattern.test(error.message),
      )
    refused(many, /65 are more than 64: .* no Consul version takes more than 128/)
    refused(
      [
        { prefix: 'p', limit: 1 },
        { prefix: 'p/', limit: 1 },
      ],
      /listed twice/,
    )
    refused(
      [
        { prefix: 'p', limit: 1, ttl: '20s' },
        { prefix: 'q', limit: 1 },
      ],
      /session options/,
    )
  })

  it('leaves no session and no key once withSlots returns', async (t) => {
    const prefixes = ['x', 'y'].map((n) => testPrefix(t, agent.url, `all-slots-clean-${n}`))
    const entries = prefixes.map((prefix) => ({
      prefix,
      limit: 1,
      consul: agent.client,
      sessionName: `clean ${prefixes[0]}`,
    }))
    const token = await withSlots(entries, (_signal, token) => Promise.resolve(token))
    assert.ok(token > 0n)
    for (const prefix of prefixes) {
      const keys = await agent.client.kv.txn([{ verb: 'get-tree', key: `${prefix}/` }])()
      assert.ok(E.isRight(keys) && keys.right.committed)
      if (E.isRight(keys) && keys.right.committed) {
        assert.deepEqual(
          keys.right.results.map((e) => e.key),
          [`${prefix}/.lock`],
        )
      }
    }
    const sessions = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as {
      Name: string
    }[]
    assert.ok(!sessions.some((s) => s.Name === `clean ${prefixes[0]}`), 'its session destroyed')
  })
})
