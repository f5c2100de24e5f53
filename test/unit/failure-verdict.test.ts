// The one verdict every retry loop of the library passes on a failure (src/shared/failure-verdict.ts):
// which failures are retried, which end the loop as they are, and when a 500 naming an ACL problem
// becomes the permanent PermissionDenied.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ConsulError } from '../../src/base/consul-error.js'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  judgeFailure,
  type FailureVerdict,
} from '../../src/base/failure-verdict.js'

const request = 'PUT /v1/session/renew/4ca8e74b'
const serverError = (status: number, body: string): ConsulError => ({
  _tag: 'ServerError',
  status,
  body,
  request,
  message: `${request}: ${status} ${body}`,
})
const aclGone = serverError(500, 'rpc error making call: ACL not found')
const aclDenied = serverError(500, 'rpc error making call: Permission denied')
const noLeader = serverError(500, 'No cluster leader')
const throttled = serverError(429, 'rate limit exceeded')
const unreachable: ConsulError = { _tag: 'Unreachable', message: 'connect ECONNREFUSED' }
const timeout: ConsulError = {
  _tag: 'Timeout',
  timeoutMs: 10_000,
  request,
  message: `${request}: timed out`,
}
const forbidden: ConsulError = {
  _tag: 'PermissionDenied',
  status: 403,
  body: 'Permission denied',
  request,
  message: `${request}: 403`,
}
const badRequest: ConsulError = {
  _tag: 'BadRequest',
  status: 400,
  body: 'bad',
  request,
  message: `${request}: 400`,
}
const decodeError: ConsulError = { _tag: 'DecodeError', errors: ['ID: missing'], message: 'bad' }
const tooLarge: ConsulError = { _tag: 'TooLarge', limitBytes: 1024, message: 'too large' }
const aborted: ConsulError = { _tag: 'Aborted', message: 'aborted' }
const notConsul: ConsulError = { _tag: 'NotConsul', status: 404, body: '<html>', message: 'nc' }
const bug = new TypeError('a bug')

const retry = (aclInRow: number): FailureVerdict => ({ verdict: 'retry', aclInRow })
const permanent = (error: unknown): FailureVerdict => ({ verdict: 'permanent', error })

describe('judgeFailure', () => {
  const table: readonly [string, unknown, number, FailureVerdict][] = [
    ['an unreachable agent is retried', unreachable, 0, retry(0)],
    ['a timeout is retried, and ends a row of ACL failures', timeout, 3, retry(0)],
    ['a 500 naming no ACL problem is retried, and ends the row', noLeader, 4, retry(0)],
    ['a 429 is retried', throttled, 0, retry(0)],
    ['a first 500 naming an ACL problem is retried, counted', aclGone, 0, retry(1)],
    ['an ACL 500 just short of the limit is retried', aclDenied, 3, retry(4)],
    ['a 403 is permanent, as it is', forbidden, 0, permanent(forbidden)],
    ['a 403 after ACL 500s is permanent, as it is', forbidden, 4, permanent(forbidden)],
    ['a bad request is permanent', badRequest, 0, permanent(badRequest)],
    ['an undecodable answer is permanent', decodeError, 0, permanent(decodeError)],
    ['an answer over the cap is permanent', tooLarge, 0, permanent(tooLarge)],
    ['an abort is permanent', aborted, 0, permanent(aborted)],
    ['an address that is no Consul agent is permanent', notConsul, 0, permanent(notConsul)],
    ['a value that is no ConsulError is permanent, as it is', bug, 0, permanent(bug)],
    ['undefined thrown is permanent', undefined, 0, permanent(undefined)],
  ]
  for (const [name, error, aclInRow, expected] of table) {
    it(`should judge: ${name}`, () => {
      assert.deepEqual(judgeFailure(error, aclInRow), expected)
    })
  }

  it('should turn the ACL_FAILURES_BEFORE_PERMANENT-th ACL 500 in a row into PermissionDenied', () => {
    const verdict = judgeFailure(aclGone, ACL_FAILURES_BEFORE_PERMANENT - 1)
    assert.equal(verdict.verdict, 'permanent')
    assert.deepEqual(verdict.error, {
      _tag: 'PermissionDenied',
      status: 500,
      body: 'rpc error making call: ACL not found',
      request,
      message:
        `${request}: Consul answered 5 times in a row that the ACL token is not valid ` +
        '(500: rpc error making call: ACL not found); the token (CONSUL_HTTP_TOKEN, ' +
        'CONSUL_HTTP_TOKEN_FILE or the token option) was probably deleted on the servers: give ' +
        'the client a token that exists',
    })
  })

  it('should count only ACL 500s in a row: any other failure between them starts the count anew', () => {
    const judgeAll = (failures: readonly ConsulError[]): FailureVerdict['verdict'][] => {
      let aclInRow = 0
      return failures.map((error) => {
        const verdict = judgeFailure(error, aclInRow)
        if (verdict.verdict === 'retry') aclInRow = verdict.aclInRow
        return verdict.verdict
      })
    }
    const four = [aclGone, aclGone, aclGone, aclGone]
    assert.deepEqual(judgeAll([...four, timeout, ...four]), new Array<string>(9).fill('retry'))
    assert.deepEqual(judgeAll([...four, aclDenied]), [
      ...new Array<string>(4).fill('retry'),
      'permanent',
    ])
  })
})
