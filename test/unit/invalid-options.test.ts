// Options are checked when the contender is made: semaphore(...), leaderElection(...) and
// exclusive(...) throw SemaphoreError('InvalidOptions') at once, naming every wrong option;
// tryAcquire, tryLead and withSlot reject with it. Nothing is sent: the client points nowhere.
// An option that a function does not take (a typo) is named, with the nearest one it takes.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  SemaphoreError,
  createConsulClient,
  doctor,
  drain,
  evict,
  exclusive,
  leaderElection,
  liftDrain,
  semaphore,
  setLimit,
  tryAcquire,
  tryLead,
  withSlot,
  type SemaphoreOptions,
  type WithSlotOptions,
} from '../../src/index.js'

/** The InvalidOptions error, checked to name each of `options` in its message. */
function invalidOptions(...options: string[]) {
  return (error: unknown): true => {
    assert.ok(error instanceof SemaphoreError, String(error))
    assert.equal(error.kind, 'InvalidOptions')
    for (const option of options) assert.match(error.message, new RegExp(`option ${option}: `))
    return true
  }
}

describe('options checked when the contender is made', () => {
  // Port 9 (discard) on loopback: a request would fail as Unreachable, not as InvalidOptions.
  const consul = createConsulClient({ address: '127.0.0.1:9' })
  after(() => consul.close())

  it('semaphore(...) throws at once, listing every wrong option and what each must be', () => {
    assert.throws(
      () => semaphore({ prefix: '/x', limit: 0, ttl: -5000, consul }),
      (error: unknown) => {
        invalidOptions('prefix', 'limit', 'ttl')(error)
        const { message } = error as SemaphoreError
        assert.match(message, /^3 options are wrong \(nothing was sent to Consul/)
        assert.match(message, /option limit: 0 must be a whole number of at least 1/)
        assert.match(message, /option ttl: -5000 must be a duration from 10s to 24h/)
        return true
      },
    )
  })

  it('semaphore(...) with one wrong option says just that one, as before', () => {
    assert.throws(
      () => semaphore({ prefix: 'svc/lock', limit: 1.5, consul }),
      (error: unknown) => {
        invalidOptions('limit')(error)
        assert.equal(
          (error as SemaphoreError).message,
          'option limit: 1.5 must be a whole number of at least 1.',
        )
        return true
      },
    )
  })

  it('semaphore(...) checks fairness and followLimit too', () => {
    assert.throws(
      () =>
        semaphore({
          prefix: 'svc/lock',
          limit: 1,
          consul,
          fairness: { graceMs: -1 },
          followLimit: 'yes' as unknown as boolean,
        }),
      invalidOptions('fairness', 'followLimit'),
    )
  })

  it('leaderElection(...) throws at once', () => {
    assert.throws(
      () => leaderElection({ prefix: 'svc/leader', ttl: '1s', lockDelay: '2m', consul }),
      invalidOptions('ttl', 'lockDelay'),
    )
  })

  it('exclusive(...) throws at once, naming the watch prefix and its own options', () => {
    assert.throws(
      () =>
        exclusive({
          consul,
          watchPrefix: 'svc//tasks',
          keyOf: undefined as unknown as (task: string) => string,
          run: () => Promise.resolve(undefined),
          concurrency: 0,
        }),
      invalidOptions('watchPrefix', 'keyOf', 'concurrency'),
    )
  })

  it('valid options make a contender and throw nothing', async () => {
    const sem = semaphore({ prefix: 'svc/lock', limit: 2, ttl: '10s', consul })
    const election = leaderElection({ prefix: 'svc/leader', consul })
    assert.equal(
      typeof exclusive({ keyOf: String, run: () => Promise.resolve(1), consul }),
      'function',
    )
    await sem.close()
    await election.close()
  })

  it('tryAcquire and tryLead reject (never throw) with the same error', async () => {
    let made: Promise<unknown> | undefined
    assert.doesNotThrow(() => {
      made = tryAcquire({ prefix: 'svc/lock', limit: 0, consul })
    })
    await assert.rejects(made as Promise<unknown>, invalidOptions('limit'))
    await assert.rejects(
      tryLead({ prefix: '', ttl: 'soon', consul }),
      invalidOptions('prefix', 'ttl'),
    )
  })

  it('withSlot rejects with one error naming the semaphore options and waitTimeout', async () => {
    let called = false
    const work = (): Promise<void> => {
      called = true
      return Promise.resolve()
    }
    await assert.rejects(
      withSlot({ prefix: 'svc/lock', limit: -1, waitTimeout: 'soon', consul }, work),
      invalidOptions('limit', 'waitTimeout'),
    )
    await assert.rejects(
      withSlot({ prefix: 'svc/lock', limit: 1, waitTimeout: 0, consul }, work),
      invalidOptions('waitTimeout'),
    )
    assert.equal(called, false)
  })
})

describe('an option no function takes', () => {
  const consul = createConsulClient({ address: '127.0.0.1:9' })
  after(() => consul.close())

  /** The options with a key the types do not allow: what a JavaScript caller's typo is. */
  const typo = <O>(options: O, extra: Record<string, unknown>): O => ({ ...options, ...extra })

  it('withSlot({ prefix, limt: 2 }) names limt as unknown and suggests limit', async () => {
    await assert.rejects(
      withSlot(
        typo({ prefix: 'svc/lock', consul } as unknown as WithSlotOptions, { limt: 2 }),
        () => Promise.resolve(),
      ),
      (error: unknown) => {
        invalidOptions('limt')(error)
        assert.equal(
          (error as SemaphoreError).message,
          'option limt: withSlot has no such option. Did you mean limit?',
        )
        return true
      },
    )
  })

  it('every function of the API that takes options names the unknown one', async () => {
    const semaphoreOptions = { prefix: 'svc/lock', limit: 1, consul }
    const cases: readonly (readonly [string, () => unknown, string])[] = [
      ['semaphore', () => semaphore(typo(semaphoreOptions, { ttll: '20s' })), 'ttl'],
      [
        'leaderElection',
        () => leaderElection(typo({ prefix: 'p', consul }, { vaule: 'a' })),
        'value',
      ],
      ['tryAcquire', () => tryAcquire(typo(semaphoreOptions, { singal: undefined })), 'signal'],
      ['tryLead', () => tryLead(typo({ prefix: 'p', consul }, { lockDealy: 0 })), 'lockDelay'],
      [
        'exclusive',
        () =>
          exclusive(
            typo({ keyOf: String, run: () => Promise.resolve(1), consul }, { concurency: 2 }),
          ),
        'concurrency',
      ],
      [
        'evict',
        () => evict(typo({ prefix: 'p', session: 'abc', consul }, { sesion: 'x' })),
        'session',
      ],
      ['drain', () => drain(typo({ prefix: 'p', consul }, { limt: 2 })), 'limit'],
      ['liftDrain', () => liftDrain(typo({ prefix: 'p', consul }, { prefx: 'p' })), 'prefix'],
      ['setLimit', () => setLimit(typo({ prefix: 'p', limit: 2, consul }, { limits: 3 })), 'limit'],
      ['doctor', () => doctor(typo({ prefix: 'p' }, { ttl_: '20s' })), 'ttl'],
    ]
    for (const [api, call, near] of cases) {
      const check = (error: unknown): true => {
        assert.ok(error instanceof SemaphoreError, `${api}: ${String(error)}`)
        assert.equal(error.kind, 'InvalidOptions', api)
        assert.match(
          error.message,
          new RegExp(`${api} has no such option\\. Did you mean ${near}\\?$`),
          api,
        )
        return true
      }
      let result: unknown
      try {
        result = call()
      } catch (error) {
        check(error)
        continue
      }
      await assert.rejects(result as Promise<unknown>, check)
    }
  })

  it('without a close one, lists the options there are', () => {
    assert.throws(
      () => semaphore(typo({ prefix: 'svc/lock', limit: 1, consul }, { xyzzy: 1 })),
      /option xyzzy: semaphore has no such option; its options are checks, consul, fairness, followLimit, .*, watchWait\.$/,
    )
  })

  it('a missing limit is said to be missing, not "undefined must be"', () => {
    assert.throws(
      () => semaphore({ prefix: 'svc/lock', consul } as unknown as SemaphoreOptions),
      (error: unknown) => {
        assert.equal(
          (error as SemaphoreError).message,
          'option limit: is missing; give the most holders at once, a whole number of at least 1.',
        )
        return true
      },
    )
  })
})
