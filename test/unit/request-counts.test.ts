// How many requests each scenario of the protocol costs, request by request, on the in-memory
// Consul double (test/support/consul-double.ts) in virtual time: its request log lists every HTTP
// request that reached the agent, so an extra read or write anywhere in a path fails here. Time is
// moved by hand (`advanceBy`), one virtual millisecond at a time until the state a scenario waits
// for, so a renewal or a long poll's end never falls inside a scenario by accident.
//
// The lines are the request lines, with each session id written as the name of the contender
// that owns it (`<a>`): `a: PUT /v1/txn` is client `a`'s transaction.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler, type Observable, type Subscription } from 'rxjs'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import { revokeKey } from '../../src/core/keys/revoke-key.js'
import { encodeRevokeRequest } from '../../src/core/revoke/revoke-request.js'
import { leaderElection, type LeaderElectionState } from '../../src/recipes/leader-election.js'
import { semaphore, type SemaphoreState } from '../../src/recipes/semaphore.js'
import { setLimit } from '../../src/operator/set-limit.js'
import {
  HELD_LOCK_POLL_MS,
  WAKE_WAIT_MS,
  rememberLock,
} from '../../src/effects/coordinator/prefix-coordinator.js'
import {
  advanceBy,
  advanceUntil,
  closeInVirtualTime,
  createConsulDouble,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/counted'
/** The flags of a semaphore contender key (the semaphore's + 1), as the request line has them. */
const CONTENDER = (BigInt(SEMAPHORE_FLAGS) + 1n).toString()
/** A blocking listing of the prefix, from `index`. */
const poll = (index: number): string => `GET /v1/kv/${prefix}?recurse&index=${index}&wait=30000ms`
/** The first listing of the prefix (does not block). */
const LIST = `GET /v1/kv/${prefix}?recurse`
/** A long poll of `.lock` alone, by the first in line of a leader lock's queue. */
const pollLock = (index: number): string =>
  `GET /v1/kv/${prefix}/.lock?recurse&index=${index}&wait=30000ms`
/** A holder's long poll of `.lock`, beside its own key's. */
const lockPoll = (index: number): string =>
  `GET /v1/kv/${prefix}/.lock?recurse&index=${index}&wait=30000ms`
/** A listing of the prefix outside the watch (a release's, a wake-up's). */
const LIST_PREFIX = `GET /v1/kv/${prefix}/?recurse`
/** The long poll of one contender's own key (`who`: its name in `requests()`). */
const ownPoll = (who: string, index: number): string =>
  `GET /v1/kv/${prefix}/<${who}>?recurse&index=${index}&wait=30000ms`
const TXN = 'PUT /v1/txn'
const CREATE = 'PUT /v1/session/create'
const joinKey = (who: string): string =>
  `PUT /v1/kv/${prefix}/<${who}>?flags=${CONTENDER}&acquire=<${who}>`

type State = SemaphoreState | LeaderElectionState
interface Followed {
  readonly name: string
  last?: State
}

describe('request counts, in virtual time on the Consul double', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  const subscriptions: Subscription[] = []
  const followed: Followed[] = []
  /** How far into the double's request log `requests()` has read. */
  let read = 0

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    followed.length = 0
    read = 0
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    await double.close()
  })

  /** Keeps the last state of `contender`, whose session ids the request lines show as `<name>`. */
  function follow(name: string, contender: { readonly state$: Observable<State> }) {
    const seen: Followed = { name }
    followed.push(seen)
    subscriptions.push(contender.state$.subscribe((s) => (seen.last = s)))
    return seen
  }

  /** The requests since the last call, as `client: METHOD path`, session ids by their owner. */
  function requests(): string[] {
    const names = new Map<string, string>()
    for (const f of followed) {
      const session = f.last?.session
      if (session !== undefined) names.set(session, f.name)
    }
    const log = double.requests().slice(read)
    read += log.length
    return log.map(
      (r) =>
        `${r.client}: ${r.line.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => `<${names.get(id) ?? 'unknown'}>`)}`,
    )
  }

  /** Moves virtual time a millisecond at a time until `done()`, at most `limitMs`. */
  const until = (what: string, done: () => boolean, limitMs?: number): Promise<void> =>
    advanceUntil(scheduler, what, done, limitMs)

  /** Closes `contender`, moving virtual time until close() resolved. */
  const close = (contender: { close(): Promise<void> }): Promise<void> =>
    closeInVirtualTime(scheduler, contender)

  /** Lets every request the last step caused go out (the long polls that follow a write). */
  const quiet = (): Promise<void> => advanceBy(scheduler, 10)

  describe('the semaphore (limit 1)', () => {
    const contender = (name: string) => {
      const sem = semaphore({ prefix, limit: 1, consul: double.connect(name), scheduler })
      return { sem, seen: follow(name, sem) }
    }

    it('acquires uncontended in five requests and two polls of the watch after them, and releases in two', async () => {
      const a = contender('a')
      await until('a holds', () => a.seen.last?.holding === true)
      await quiet()
      assert.deepEqual(requests(), [
        `a: ${CREATE}`,
        // A client new to the prefix lists it before it writes its contender key.
        `a: ${LIST}`,
        `a: ${joinKey('a')}`,
        // The empty prefix answered index 0 (the double's KV table is empty): the poll blocks
        // from 1, and answers at once with the key.
        `a: ${poll(1)}`,
        // CAS .lock, check the session's key, mark the key holder: one transaction.
        `a: ${TXN}`,
        // The watch follows: the answer that shows the CAS; then, holding with nobody waiting, a
        // long-polls the prefix, where the first to join would show.
        `a: ${poll(12)}`,
        `a: ${poll(13)}`,
      ])
      await close(a.sem)
      assert.deepEqual(requests(), [
        // Its watch shows nobody waiting: CAS the session out of .lock and delete the key.
        `a: ${TXN}`,
        'a: PUT /v1/session/destroy/<a>',
      ])
    })

    it('joins in one transaction on a client that saw the prefix: a second tenure acquires in three requests', async () => {
      const client = double.connect('a')
      const first = semaphore({ prefix, limit: 1, consul: client, scheduler })
      const one = follow('a', first)
      await until('the first tenure holds', () => one.last?.holding === true)
      await quiet()
      await close(first)
      requests()
      const second = semaphore({ prefix, limit: 1, consul: client, scheduler })
      const two = follow('a2', second)
      await until('the second tenure holds', () => two.last?.holding === true)
      await quiet()
      assert.deepEqual(requests(), [
        `a: ${CREATE}`,
        // Lock its key and read the prefix as of that write, in one transaction.
        `a: ${TXN}`,
        // The watch starts from the join's answer, and the CAS that answer allows goes out with it
        // (the interpreter steps on the answer once following it has started).
        `a: ${poll(17)}`,
        `a: ${TXN}`,
        `a: ${poll(18)}`,
      ])
      await close(second)
    })

    it('joins in one transaction on a client told what `.lock` holds (the read of rxsem run’s start-up check)', async () => {
      const client = double.connect('a')
      const read = await client.kv.get(`${prefix}/.lock`)()
      assert.ok(E.isRight(read) && read.right === null, 'no .lock yet')
      rememberLock(client, prefix, read.right)
      requests()
      const sem = semaphore({ prefix, limit: 1, consul: client, scheduler })
      const seen = follow('a', sem)
      await until('a holds', () => seen.last?.holding === true)
      await quiet()
      const lines = requests()
      assert.deepEqual(lines.slice(0, 2), [`a: ${CREATE}`, `a: ${TXN}`], 'no listing first')
      assert.ok(!lines.includes(`a: ${LIST}`) && !lines.includes(`a: ${joinKey('a')}`))
      await close(sem)
    })

    it('releases without a read when it closes before the watch showed its own CAS', async () => {
      // The long poll that would show a's CAS is held on the way: a holds (the CAS answered), but
      // its last snapshot does not list it in .lock. The CAS's answer does: the process knows
      // .lock as a's write left it, and the release is built on that.
      const afterCas = double.hold('kv.list', {
        when: () => double.calls().some((call) => call.method === 'kv.txn'),
      })
      const a = contender('a')
      await until('a holds', () => a.seen.last?.holding === true)
      requests()
      await close(a.sem)
      assert.deepEqual(requests(), [`a: ${TXN}`, 'a: PUT /v1/session/destroy/<a>'])
      afterCas.release()
    })

    it('renews its session every TTL/2 and sends nothing else while it holds', async () => {
      const a = contender('a')
      await until('a holds', () => a.seen.last?.holding === true)
      await quiet()
      requests()
      const heldAt = scheduler.now() - 10
      // TTL 15 s: a renewal 7.5 s after the session was created, then every 7.5 s.
      await advanceBy(scheduler, heldAt + 7_499 - scheduler.now())
      assert.deepEqual(requests(), [], 'nothing before TTL/2')
      await advanceBy(scheduler, 1)
      assert.deepEqual(requests(), ['a: PUT /v1/session/renew/<a>'])
      await advanceBy(scheduler, 7_500)
      assert.deepEqual(requests(), ['a: PUT /v1/session/renew/<a>'])
      assert.equal(a.seen.last?.holding, true)
      await close(a.sem)
      requests()
    })

    it('hands the slot to a waiter in four requests and its polls: the holder’s transaction and destroy, the waiter’s listing, and its poll as holder', async () => {
      const a = contender('a')
      await until('a holds', () => a.seen.last?.holding === true)
      await quiet()
      requests()
      const b = contender('b')
      await until('b waits', () => (b.seen.last as SemaphoreState | undefined)?.rank === 0)
      await quiet()
      assert.deepEqual(requests(), [
        `b: ${CREATE}`,
        `b: ${LIST}`,
        `b: ${joinKey('b')}`,
        // b's key wakes a, which long-polled the prefix while nobody waited: a knows its heir,
        // and long-polls only its own key and `.lock` from now on.
        `a: ${ownPoll('a', 13)}`,
        `a: ${lockPoll(13)}`,
        // b, in line behind a holder of this library, long-polls only its own key: the hand-off
        // will rewrite it.
        `b: ${poll(13)}`,
        `b: ${ownPoll('b', 15)}`,
      ])
      await close(a.sem)
      await until('b holds', () => b.seen.last?.holding === true)
      await quiet()
      assert.deepEqual(requests(), [
        // a knows its heir from the listing b's join woke it with: one transaction, no read
        // first: check b's key, CAS .lock a → b, delete a's key, mark b's key holder.
        `a: ${TXN}`,
        'a: PUT /v1/session/destroy/<a>',
        // b's poll answers with its key rewritten: b holds on that (no CAS of its own), lists
        // the prefix to confirm it, then, nobody waiting, long-polls the prefix.
        `b: ${LIST_PREFIX}`,
        `b: ${poll(16)}`,
      ])
      await close(b.sem)
      requests()
    })

    it('loses a CAS for the last slot in one transaction, and waits on the watch after it', async () => {
      // c is first in line; its CAS is held on the way. d, second, sees the slot free for its
      // fairness grace and tries too; c's CAS lands first, d's finds .lock changed.
      const cGate = double.hold('kv.txn', { when: (call) => call.client === 'c' })
      const dGate = double.hold('kv.txn', { when: (call) => call.client === 'd' })
      const c = contender('c')
      const d = contender('d')
      let reached = 0
      for (const gate of [cGate, dGate]) void gate.reached.then(() => (reached += 1))
      await until('both CASes on the way', () => reached === 2)
      assert.deepEqual(requests(), [
        `c: ${CREATE}`,
        `d: ${CREATE}`,
        `c: ${LIST}`,
        `d: ${LIST}`,
        `c: ${joinKey('c')}`,
        `d: ${joinKey('d')}`,
        `c: ${poll(1)}`,
        `d: ${poll(1)}`,
        `c: ${poll(14)}`,
        `d: ${poll(14)}`,
      ])
      cGate.release()
      dGate.release()
      await until('c holds', () => c.seen.last?.holding === true)
      await until('d saw c hold', () => (d.seen.last as SemaphoreState).holders.length === 1)
      await quiet()
      const txns = double.calls().filter((call) => call.method === 'kv.txn')
      assert.deepEqual(
        txns.map((call) => `${call.client} ${call.answer}`),
        ['c ok', 'd rolled back'],
        'the race the test means: c won, d lost its CAS',
      )
      assert.deepEqual(requests(), [
        `c: ${TXN}`,
        `d: ${TXN}`,
        // Both polls from 14 answer with c's CAS. d neither reads .lock nor writes again: the
        // snapshot tells it that c holds. Each long-polls its own key from then on: c's
        // rewritten by its CAS (and `.lock`, as a holder), d's as it joined.
        `c: ${ownPoll('c', 15)}`,
        `c: ${lockPoll(15)}`,
        `d: ${ownPoll('d', 14)}`,
      ])
      assert.equal(d.seen.last?.holding, false)
      await close(c.sem)
      await close(d.sem)
      requests()
    })
  })

  describe('a queue of four processes (limit 1)', () => {
    const contender = (name: string, followLimit = false) => {
      const consul = double.connect(name)
      const sem = semaphore({ prefix, limit: 1, followLimit, consul, scheduler })
      return { sem, seen: follow(name, sem) }
    }
    const rank = (c: { seen: Followed }): number | undefined =>
      (c.seen.last as SemaphoreState | undefined)?.rank
    type Contender = ReturnType<typeof contender>
    /** a holds, and b, c and d wait in that order, each a process of its own. */
    const queueOfFour = async (
      followLimit = false,
    ): Promise<[Contender, Contender, Contender, Contender]> => {
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => contender(name, followLimit)) as [
        Contender,
        Contender,
        Contender,
        Contender,
      ]
      await until('a holds', () => a.seen.last?.holding === true)
      await until('the queue b, c, d', () => rank(b) === 0 && rank(c) === 1 && rank(d) === 2)
      return [a, b, c, d]
    }

    it('leaves a waiter alone in its process asleep on its own key while the slot changes hands ahead of it, and wakes it with the hand-off', async () => {
      const [a, b, c, d] = await queueOfFour()
      await quiet()
      requests()
      // Two hand-overs ahead of d: b is handed a's slot, then c b's.
      await close(a.sem)
      await until('b holds', () => b.seen.last?.holding === true)
      await close(b.sem)
      await until('c holds', () => c.seen.last?.holding === true)
      await quiet()
      assert.deepEqual(
        requests().filter((line) => line.startsWith('d: ')),
        [],
        'd sent nothing: its key did not change',
      )
      assert.equal(rank(d), 2, 'd still shows the rank it last saw')
      // c hands the slot to d: d's poll answers, d holds and lists the prefix at once; last in
      // line, it then long-polls the prefix, where the next to join would show.
      await close(c.sem)
      await until('d holds', () => d.seen.last?.holding === true)
      await quiet()
      const ofD = requests().filter((line) => line.startsWith('d: '))
      const handOff = /index=(\d+)/.exec(ofD[1] ?? '')?.[1]
      assert.deepEqual(ofD, [`d: ${LIST_PREFIX}`, `d: ${poll(Number(handOff))}`])
      await close(d.sem)
      requests()
    })

    it('wakes the waiters a raise of the limit admits, asleep on their own keys, long before their recheck', async () => {
      const [a, b, c, d] = await queueOfFour(true)
      await quiet()
      requests()
      const raised = setLimit({ prefix, limit: 3, consul: double.connect('op') })
      // Their recheck would come PARKED_RECHECK_MS after they parked.
      await until(
        'b and c hold',
        () => b.seen.last?.holding === true && c.seen.last?.holding === true,
        100,
      )
      assert.equal((await raised).limit, 3)
      await quiet()
      assert.equal(d.seen.last?.holding, false, 'd, not admitted, still waits')
      assert.deepEqual(
        requests().filter((line) => line.startsWith('d: ')),
        [],
        'd was not woken',
      )
      for (const x of [a, b, c, d]) await close(x.sem)
      requests()
    })

    it('wakes a parked waiter with one answer of its key poll and one listing that blocks on the change, and no other poll of the key', async () => {
      const [a, b, c] = ['a', 'b', 'c'].map((name) => contender(name)) as [
        Contender,
        Contender,
        Contender,
      ]
      // d's process runs a second contender, e, behind it: a process of several contenders
      // parks on the key ahead of its best-placed one.
      const client = double.connect('d')
      const dSem = semaphore({ prefix, limit: 1, consul: client, scheduler })
      const d = { seen: follow('d', dSem) }
      await until('a holds', () => a.seen.last?.holding === true)
      await until('the queue b, c, d', () => rank(b) === 0 && rank(c) === 1 && rank(d) === 2)
      const e = semaphore({ prefix, limit: 1, consul: client, scheduler })
      const eSeen = follow('e', e)
      await until('e queued behind d', () => (eSeen.last as SemaphoreState | undefined)?.rank === 3)
      await quiet()
      await close(a.sem)
      await until('b holds', () => b.seen.last?.holding === true)
      await quiet()
      requests()
      // d waits third (rank 2, then 1 once b holds): its process parks on c's key, which changes
      // when c is handed the slot.
      await close(b.sem)
      await until('c holds', () => c.seen.last?.holding === true)
      const handedAt = scheduler.now()
      await until('d is first in line', () => rank(d) === 0)
      // Nothing else changes in the prefix: the listing answers after WAKE_WAIT_MS.
      assert.ok(scheduler.now() - handedAt <= WAKE_WAIT_MS + 10, 'd moved up within the wait')
      await quiet()
      const ofD = requests().filter((line) => line.startsWith('d: '))
      const handOff = /index=(\d+)/.exec(ofD[0] ?? '')?.[1]
      assert.deepEqual(ofD, [
        // The listing after c's key changed (the key poll that saw it was sent before), blocking
        // on the index of that change; then the prefix's poll from it: d is first in line.
        `d: GET /v1/kv/${prefix}/?recurse&index=${handOff}&wait=${WAKE_WAIT_MS}ms`,
        `d: ${poll(Number(handOff))}`,
      ])
      await close(c.sem)
      await close(dSem)
      await close(e)
      requests()
    })
  })

  describe('the release of a holder alone in its process (limit 3)', () => {
    // Each in a process of its own, as its value says (the double's clients share this one).
    const contender = (name: string) => {
      const consul = double.connect(name)
      const sem = semaphore({ prefix, limit: 3, consul, scheduler, value: `host-${name}:1` })
      return { sem, seen: follow(name, sem) }
    }
    const holding = (c: { seen: Followed }): boolean => c.seen.last?.holding === true
    const LOCK_POLL_OF_A = new RegExp(
      `^a: GET /v1/kv/${prefix}/\\.lock\\?recurse&index=\\d+&wait=30000ms$`,
    )

    /**
     * x, y and z hold; a, p and q wait, in that order; x leaves, handing a its slot: a lists the
     * prefix then, and knows p and q. y leaves next, handing p its slot, which a's first poll of
     * `.lock` sees: a holds beside others, so that poll goes out HELD_LOCK_POLL_MS into its hold.
     * The `.lock` a knows then lists a, z and p, and q is the first in line.
     */
    async function aHoldsBehindTwoHandOvers() {
      const [x, y, z] = ['x', 'y', 'z'].map(contender) as [
        ReturnType<typeof contender>,
        ReturnType<typeof contender>,
        ReturnType<typeof contender>,
      ]
      await until('x, y and z hold', () => holding(x) && holding(y) && holding(z))
      const [a, p, q] = ['a', 'p', 'q'].map(contender) as [
        ReturnType<typeof contender>,
        ReturnType<typeof contender>,
        ReturnType<typeof contender>,
      ]
      const rank = (c: { seen: Followed }) => (c.seen.last as SemaphoreState | undefined)?.rank
      await until('the queue a, p, q', () => rank(a) === 0 && rank(p) === 1 && rank(q) === 2)
      await close(x.sem)
      await until('a holds', () => holding(a))
      await quiet()
      requests()
      await close(y.sem)
      await until('p holds', () => holding(p))
      await quiet()
      const beforePoll = requests().filter(
        (line) => line.startsWith('a: ') && line.includes('.lock'),
      )
      assert.deepEqual(beforePoll, [], 'a has not polled .lock yet')
      await advanceBy(scheduler, HELD_LOCK_POLL_MS)
      await quiet()
      const firstPoll = requests().filter((line) => line.startsWith('a: '))
      assert.equal(firstPoll.length, 1, `a's first poll of .lock: ${firstPoll.join(', ')}`)
      assert.match(firstPoll[0] ?? '', LOCK_POLL_OF_A)
      return { a, p, q, z }
    }

    it('hands its slot on from the `.lock` it knows while its poll of `.lock` has been out since the last answer', async () => {
      const { a, q, z } = await aHoldsBehindTwoHandOvers()
      // The poll after the last answer goes out HELD_LOCK_POLL_MS after the one before it.
      await advanceBy(scheduler, HELD_LOCK_POLL_MS)
      const ofA = requests().filter((line) => line.startsWith('a: '))
      assert.equal(ofA.length, 1, `a's second poll of .lock: ${ofA.join(', ')}`)
      assert.match(ofA[0] ?? '', LOCK_POLL_OF_A)
      await close(a.sem)
      await until('q holds', () => holding(q))
      await quiet()
      assert.deepEqual(
        requests().filter((line) => line.startsWith('a: ')),
        [`a: ${TXN}`, 'a: PUT /v1/session/destroy/<a>'],
        'one transaction hands q the slot: no read',
      )
      await close(z.sem)
    })

    it('lists the prefix before its release when `.lock` may have changed since its poll last answered', async () => {
      const { a, q, z } = await aHoldsBehindTwoHandOvers()
      // Within HELD_LOCK_POLL_MS of a's last answer, z leaves too, handing q its slot: a's next
      // poll of `.lock` is not out yet, and the `.lock` a knows still names q first in line.
      await close(z.sem)
      await until('q holds', () => holding(q))
      await close(a.sem)
      await quiet()
      assert.deepEqual(
        requests().filter((line) => line.startsWith('a: ')),
        [`a: ${LIST_PREFIX}`, `a: ${TXN}`, 'a: PUT /v1/session/destroy/<a>'],
        'a listing, then a release that nobody waits for: no CAS lost on a stale `.lock`',
      )
      assert.equal(double.calls().filter((c) => c.answer === 'Conflict').length, 0)
    })
  })

  describe('the writers of .lock of one process (limit 2, one client)', () => {
    /** The transactions that reached the agent and rolled back: a CAS lost. */
    const rolledBack = (): number =>
      double.calls().filter((c) => c.method === 'kv.txn' && c.answer === 'rolled back').length

    it('hands two slots on at the same moment in two transactions, none lost, none read', async () => {
      const client = double.connect('a')
      const contender = (name: string) => {
        const sem = semaphore({ prefix, limit: 2, consul: client, scheduler })
        return { sem, seen: follow(name, sem) }
      }
      const [h1, h2] = [contender('h1'), contender('h2')]
      await until(
        'h1 and h2 hold',
        () => h1.seen.last?.holding === true && h2.seen.last?.holding === true,
      )
      const joined = [contender('w1'), contender('w2'), contender('w3')]
      const rank = (w: (typeof joined)[number]): number | undefined =>
        (w.seen.last as SemaphoreState | undefined)?.rank
      await until('the waiters queue', () => joined.every((w) => rank(w) !== undefined))
      await quiet()
      // In the order of the queue (keys taken together in one transaction share its index, and
      // go by key).
      const waiters = [...joined].sort((a, b) => (rank(a) as number) - (rank(b) as number))
      requests()
      const lostBefore = rolledBack()
      // Both close in the same turn, on the same last snapshot: built on it alone, both would
      // hand their slot to w1 on the same index, and one would lose.
      await Promise.all([close(h1.sem), close(h2.sem)])
      await until('the first in line holds', () => waiters[0]?.seen.last?.holding === true)
      await until('the second in line holds', () => waiters[1]?.seen.last?.holding === true)
      const lines = requests().filter((line) => !line.includes('GET /v1/kv/svc/counted?recurse'))
      assert.deepEqual(lines, [
        // Each a hand-off (its heir's key checked, .lock CASed, its own key deleted, the heir's
        // marked), the second built on what the first answered: to the second in line.
        `a: ${TXN}`,
        `a: ${TXN}`,
        'a: PUT /v1/session/destroy/<h1>',
        'a: PUT /v1/session/destroy/<h2>',
      ])
      assert.equal(rolledBack() - lostBefore, 0, 'no CAS lost')
      assert.equal(waiters[2]?.seen.last?.holding, false)
      for (const w of waiters) await close(w.sem)
    })
  })

  describe('the leader election', () => {
    const contender = (name: string) => {
      const election = leaderElection({ prefix, consul: double.connect(name), scheduler })
      return { election, seen: follow(name, election) }
    }

    it('leads uncontended in three requests and its poll of .lock as leader after them, and gives the lead back in two', async () => {
      const a = contender('a')
      await until('a leads', () => a.seen.last?.holding === true)
      await quiet()
      assert.deepEqual(requests(), [
        `a: ${CREATE}`,
        `a: ${LIST}`,
        // The lock operation on .lock, in a transaction: nobody in line and the key free, it
        // tries before it takes a place in line.
        `a: ${TXN}`,
        // It long-polls .lock alone (as a prefix: its revoke request would answer it too), but
        // not while its acquisition is on its way: that answers with the prefix as of its write,
        // and the poll goes out from there.
        `a: ${pollLock(12)}`,
      ])
      await close(a.election)
      assert.deepEqual(requests(), [
        `a: PUT /v1/kv/${prefix}/.lock?flags=${LOCK_FLAGS}&release=<a>`,
        'a: PUT /v1/session/destroy/<a>',
      ])
    })

    it('sees a request to step down in the answer of its poll of .lock, with no listing', async () => {
      const a = contender('a')
      await until('a leads', () => a.seen.last?.holding === true)
      await quiet()
      requests()
      const session = a.seen.last?.session ?? assert.fail('no session')
      // An evict with a grace writes the request (a double's client stands in for it).
      const e = double.connect('e')
      const body = encodeRevokeRequest({ graceMs: 30_000, reason: 'deploy' })
      await e.kv.put(revokeKey(prefix, session), body)()
      await until('a sees the request', () => a.seen.last?.revokeRequested?.reason === 'deploy')
      await quiet()
      const lines = requests().filter((line) => line.startsWith('a: '))
      assert.deepEqual(
        lines,
        [`a: ${pollLock(13)}`],
        'the poll goes on from the answer, no listing',
      )
      await close(a.election)
      requests()
    })

    it('renews its session every TTL/2 and sends nothing else while it leads', async () => {
      const a = contender('a')
      await until('a leads', () => a.seen.last?.holding === true)
      await quiet()
      requests()
      const heldAt = scheduler.now() - 10
      await advanceBy(scheduler, heldAt + 7_499 - scheduler.now())
      assert.deepEqual(requests(), [], 'nothing before TTL/2')
      await advanceBy(scheduler, 1)
      assert.deepEqual(requests(), ['a: PUT /v1/session/renew/<a>'])
      await close(a.election)
      requests()
    })

    it('polls .lock after a refused acquisition, from the index of the free key: it answers at once with who took it', async () => {
      const a = contender('a')
      await until('a leads', () => a.seen.last?.holding === true)
      const b = contender('b')
      await until('b waits', () => (b.seen.last as LeaderElectionState | undefined)?.leader != null)
      await quiet()
      requests()
      const gate = double.hold('kv.txn', { when: (call) => call.client === 'b' })
      let reached = false
      void gate.reached.then(() => (reached = true))
      await close(a.election)
      await until('b tries the free key', () => reached)
      // g (a consul lock, say) takes the key while b's transaction is on its way.
      const g = double.connect('g')
      const lockIndex = async (): Promise<number> => {
        const entry = E.getOrElseW(() => undefined)(await g.kv.get(`${prefix}/.lock`)())
        return Number(entry?.modifyIndex)
      }
      const freedAt = await lockIndex()
      const session = E.getOrElse<unknown, string>(() => assert.fail('no session'))(
        await g.session.create({ lockDelay: 0 })(),
      )
      await g.kv.put(`${prefix}/.lock`, '', { acquire: session, flags: LOCK_FLAGS })()
      const takenAt = await lockIndex()
      await quiet()
      assert.deepEqual(
        requests().filter((line) => line.startsWith('b: ')),
        [],
        'no poll of .lock while b’s acquisition is on its way',
      )
      gate.release()
      await until(
        'b sees g lead',
        () => (b.seen.last as LeaderElectionState | undefined)?.leader?.session === session,
      )
      await quiet()
      assert.equal(b.seen.last?.holding, false)
      assert.deepEqual(
        requests().filter((line) => line.startsWith('b: ')),
        // Refused: the poll from the free key's index answers at once with g's acquisition, and
        // b, still first in line, polls on from there.
        [`b: ${TXN}`, `b: ${pollLock(freedAt)}`, `b: ${pollLock(takenAt)}`],
      )
      await close(b.election)
      requests()
    })

    it('passes the lead to a waiter in four requests: the leader’s release and destroy, the waiter’s lock and its poll of .lock as leader, which no join behind it answers', async () => {
      const a = contender('a')
      await until('a leads', () => a.seen.last?.holding === true)
      await quiet()
      requests()
      const b = contender('b')
      await until('b waits', () => (b.seen.last as LeaderElectionState | undefined)?.leader != null)
      await quiet()
      assert.deepEqual(requests(), [
        `b: ${CREATE}`,
        `b: ${LIST}`,
        // The key is a's: b does not try it, it takes its place in line, which wakes its own
        // watch and not a's (a leader long-polls .lock alone).
        `b: PUT /v1/kv/${prefix}/.queue/<b>?flags=${LOCK_FLAGS + 1n}&acquire=<b>`,
        `b: ${poll(12)}`,
        // First in line, b long-polls .lock alone, from the listing its join answered.
        `b: ${pollLock(14)}`,
      ])
      await close(a.election)
      await until('b leads', () => b.seen.last?.holding === true)
      await quiet()
      assert.deepEqual(requests(), [
        `a: PUT /v1/kv/${prefix}/.lock?flags=${LOCK_FLAGS}&release=<a>`,
        'a: PUT /v1/session/destroy/<a>',
        // The poll answers with the key free; b takes it (and deletes its waiter key) in a
        // transaction that reads the prefix too, and no poll of .lock goes out meanwhile: leading,
        // it long-polls .lock from the index of its own write.
        `b: ${TXN}`,
        `b: ${pollLock(17)}`,
      ])
      await close(b.election)
      requests()
    })
  })
})
