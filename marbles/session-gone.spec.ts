import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import type { ConsulError } from '../src/base/consul-error.js'
import type { ContenderEvent } from '../src/core/events.js'
import { endOnSessionGone } from '../src/effects/protocol/session-gone.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const serverError = (body: string): ConsulError => ({
  _tag: 'ServerError',
  status: 500,
  body,
  request: 'PUT /v1/txn',
  message: `PUT /v1/txn: 500 ${body}`,
})
const invalidSession = serverError('invalid session "4ca8e74b"')
const missingSession = serverError('Missing session "4ca8e74b"')
const noLeader = serverError('No cluster leader')
const events: Record<string, ContenderEvent> = {
  g: { type: 'session-gone' },
  k: { type: 'cas-result', ok: true, holders: ['4ca8e74b'], modifyIndex: 42n },
}

describe('endOnSessionGone', () => {
  it('should end a write Consul refused for an invalid session with session-gone', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const write = cold<ContenderEvent>('  --#', undefined, invalidSession)
      const expected = '                    --(g|)'
      const subscribed = '                  ^-!'

      expectObservable(write.pipe(endOnSessionGone)).toBe(expected, events)
      expectSubscriptions(write.subscriptions).toBe(subscribed)
    })
  })

  it('should take a missing session for a gone one too', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const write = cold<ContenderEvent>('-#', undefined, missingSession)

      expectObservable(write.pipe(endOnSessionGone)).toBe('-(g|)', events)
    })
  })

  it('should pass any other failure on as it is', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const write = cold<ContenderEvent>('-#', undefined, noLeader)
      const bug = cold<ContenderEvent>('  -#', undefined, new TypeError('a bug'))

      expectObservable(write.pipe(endOnSessionGone)).toBe('-#', undefined, noLeader)
      expectObservable(bug.pipe(endOnSessionGone)).toBe('  -#', undefined, new TypeError('a bug'))
    })
  })

  it('should pass the answer and completion of a write through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const write = cold('  -k|', events)
      const never = cold<ContenderEvent>('-')

      expectObservable(write.pipe(endOnSessionGone)).toBe('-k|', events)
      expectObservable(never.pipe(endOnSessionGone)).toBe('-')
    })
  })

  it('should unsubscribe from the write when unsubscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const write = cold<ContenderEvent>('----k|', events)
      const unsubscribe = '               --!'

      expectObservable(write.pipe(endOnSessionGone), unsubscribe).toBe('-')
      expectSubscriptions(write.subscriptions).toBe('^-!')
    })
  })
})
