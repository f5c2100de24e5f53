import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { defer, type Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { ConsulError } from '../src/base/consul-error.js'
import { retryTransient } from '../src/effects/call-policy.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const serverError = (status: number, body: string, retryAfterMs?: number): ConsulError => ({
  _tag: 'ServerError',
  status,
  body,
  request: 'PUT /v1/txn',
  message: `PUT /v1/txn: ${status}`,
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
})
const e500 = serverError(500, 'rpc error: EOF')
const throttled = serverError(429, 'rate limit exceeded', 3000)
const sessionGone = serverError(500, 'invalid session "4ca8e74b"')
const aclGone = serverError(500, 'rpc error making call: ACL not found')
const timedOut: ConsulError = {
  _tag: 'Timeout',
  timeoutMs: 10_000,
  request: 'PUT /v1/txn',
  message: 'timed out',
}
const forbidden: ConsulError = {
  _tag: 'PermissionDenied',
  status: 403,
  body: 'Permission denied',
  request: 'PUT /v1/txn',
  message: 'PUT /v1/txn: 403',
}
/** Jitter at its lowest: BACKOFF.write then waits 100, 200, 400, 800, 1000 ms. */
const lowest = (): number => 0
const answers = { a: 'answer' }

/** A call that fails the first `failures` times it is made, then answers with `answered`. */
const failingThen = <A>(
  failures: number,
  failed: Observable<A>,
  answered: Observable<A>,
): Observable<A> => {
  let calls = 0
  return defer(() => (++calls <= failures ? failed : answered))
}

/** A call whose n-th making is `calls[n]`, and `answered` once they are used up. */
const inTurn = <A>(calls: readonly Observable<A>[], answered: Observable<A>): Observable<A> => {
  let made = 0
  return defer(() => calls[made++] ?? answered)
}

describe('retryTransient', () => {
  it('should make the call again after the BACKOFF.write delays, on the given scheduler', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const failed = cold<string>('-#', undefined, e500)
      const answered = cold('-a|', answers)
      const expected = '      303ms a|'
      const failedCalls = ['  ^!', '101ms ^!']
      const answeredCall = '  302ms ^-!'

      expectObservable(
        failingThen(2, failed, answered).pipe(retryTransient(scheduler, lowest)),
      ).toBe(expected, answers)
      expectSubscriptions(failed.subscriptions).toBe(failedCalls)
      expectSubscriptions(answered.subscriptions).toBe(answeredCall)
    })
  })

  it('should draw the jitter from the given random source', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable }) => {
      const failed = cold<string>('-#', undefined, e500)
      const answered = cold('-a|', answers)
      // 200 ms × (0.5 + 0.5 × 0.5): the first retry after 150 ms.
      const expected = '152ms a|'

      expectObservable(
        failingThen(1, failed, answered).pipe(retryTransient(scheduler, () => 0.5)),
      ).toBe(expected, answers)
    })
  })

  it('should wait what Retry-After asks after a 429', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable }) => {
      const failed = cold<string>('-#', undefined, throttled)
      const answered = cold('-a|', answers)
      const expected = '3002ms a|'

      expectObservable(
        failingThen(1, failed, answered).pipe(retryTransient(scheduler, lowest)),
      ).toBe(expected, answers)
    })
  })

  it('should give up after five retries with the last failure', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const failed = cold<string>('-#', undefined, e500)
      const expected = '2506ms #'
      const calls = ['^!', '101ms ^!', '302ms ^!', '703ms ^!', '1504ms ^!', '2505ms ^!']

      expectObservable(failed.pipe(retryTransient(scheduler, lowest))).toBe(
        expected,
        undefined,
        e500,
      )
      expectSubscriptions(failed.subscriptions).toBe(calls)
    })
  })

  it('should pass a permanent failure on at once', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const failed = cold<string>('-#', undefined, forbidden)
      const expected = '            -#'
      const calls = '               ^!'

      expectObservable(failed.pipe(retryTransient(scheduler, lowest))).toBe(
        expected,
        undefined,
        forbidden,
      )
      expectSubscriptions(failed.subscriptions).toBe(calls)
    })
  })

  it('should end with PermissionDenied at the fifth 500 in a row that names an ACL problem', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const failed = cold<string>('-#', undefined, aclGone)
      const expected = '1505ms #'
      const calls = ['^!', '101ms ^!', '302ms ^!', '703ms ^!', '1504ms ^!']

      expectObservable(failed.pipe(retryTransient(scheduler, lowest))).toBe(expected, undefined, {
        _tag: 'PermissionDenied',
        status: 500,
        body: 'rpc error making call: ACL not found',
        request: 'PUT /v1/txn',
        message:
          'PUT /v1/txn: Consul answered 5 times in a row that the ACL token is not valid (500: ' +
          'rpc error making call: ACL not found); the token (CONSUL_HTTP_TOKEN, ' +
          'CONSUL_HTTP_TOKEN_FILE or the token option) was probably deleted on the servers: give ' +
          'the client a token that exists',
      })
      expectSubscriptions(failed.subscriptions).toBe(calls)
    })
  })

  it('should count only the ACL failures in a row, not the failures before them', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable }) => {
      const timeout = cold<string>('-#', undefined, timedOut)
      const acl = cold<string>('-#', undefined, aclGone)
      const answered = cold('-a|', answers)
      // A timeout, then four ACL 500s (the fifth failure in a row, the fourth of ACL): retried.
      const expected = '2506ms a|'

      expectObservable(
        inTurn([timeout, acl, acl, acl, acl], answered).pipe(retryTransient(scheduler, lowest)),
      ).toBe(expected, answers)
    })
  })

  it('should pass on at once a session Consul no longer has, though its status is 500', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable }) => {
      const failed = cold<string>('-#', undefined, sessionGone)
      const expected = '-#'

      expectObservable(failed.pipe(retryTransient(scheduler, lowest))).toBe(
        expected,
        undefined,
        sessionGone,
      )
    })
  })

  it('should not make the call again when unsubscribed during the wait', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const failed = cold<string>('-#', undefined, e500)
      const unsubscribe = '^ 50ms !'
      const expected = '   -'
      const calls = '      ^!'

      expectObservable(failed.pipe(retryTransient(scheduler, lowest)), unsubscribe).toBe(expected)
      expectSubscriptions(failed.subscriptions).toBe(calls)
    })
  })

  it('should pass values and completion through when the call does not fail', () => {
    const scheduler = testScheduler()
    scheduler.run(({ cold, expectObservable }) => {
      const call = cold('-a-a|', answers)
      const never = cold('-')

      expectObservable(call.pipe(retryTransient(scheduler, lowest))).toBe('-a-a|', answers)
      expectObservable(never.pipe(retryTransient(scheduler, lowest))).toBe('-')
    })
  })
})
