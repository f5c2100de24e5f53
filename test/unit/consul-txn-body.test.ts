// The body of PUT /v1/txn as the client writes it: every member in Consul's names and order,
// uint64 flags and indexes as exact bare integers, values in base64 of exactly their own bytes,
// and operations the agent would refuse (or misread) refused before anything is sent.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type { HttpRequest } from '../../src/consul/http-request.js'
import type { Transport } from '../../src/consul/http.js'
import { createTxn } from '../../src/consul/txn.js'
import type { TxnOp } from '../../src/base/txn.js'

/** A transport that keeps the request and answers a committed, empty transaction. */
function recording(): { transport: Transport; sent: HttpRequest[] } {
  const sent: HttpRequest[] = []
  const transport = {
    call: (request: HttpRequest, interpret: (answer: never) => unknown) => () => {
      sent.push(request)
      return Promise.resolve(
        interpret({
          status: 200,
          headers: {},
          body: '{"Results":[]}',
          label: 'PUT /v1/txn',
          origin: 'test',
        } as never),
      )
    },
  } as unknown as Transport
  return { transport, sent }
}

describe('txn body', () => {
  it('writes each operation with its members in order, uint64s exact and values in base64', async () => {
    const { transport, sent } = recording()
    // The value is a view into a larger buffer: only its own bytes are sent.
    const around = new TextEncoder().encode('xx{"Limit":2}yy')
    const ops: TxnOp[] = [
      {
        verb: 'cas',
        key: 'svc/lock/.lock',
        value: around.subarray(2, 13),
        flags: 16210313421097356768n,
        index: 18446744073709551615n,
      },
      { verb: 'lock', key: 'svc/lock/s1', value: null, flags: 0n, session: 's1' },
      { verb: 'check-session', key: 'svc/"quoted"', session: 's2' },
      { verb: 'delete', key: 'svc/lock/old' },
    ]
    const result = await createTxn(transport)(ops)()
    assert.ok(E.isRight(result))
    assert.equal(sent.length, 1)
    assert.equal(
      sent[0]?.body,
      '[' +
        '{"KV":{"Verb":"cas","Key":"svc/lock/.lock","Value":"eyJMaW1pdCI6Mn0=",' +
        '"Flags":16210313421097356768,"Index":18446744073709551615}},' +
        '{"KV":{"Verb":"lock","Key":"svc/lock/s1","Value":null,"Flags":0,"Session":"s1"}},' +
        '{"KV":{"Verb":"check-session","Key":"svc/\\"quoted\\"","Session":"s2"}},' +
        '{"KV":{"Verb":"delete","Key":"svc/lock/old"}}' +
        ']',
    )
    assert.equal(Buffer.from('eyJMaW1pdCI6Mn0=', 'base64').toString(), '{"Limit":2}')
  })

  it('refuses a dotted segment or a flag beyond uint64 before sending, naming the operation', async () => {
    const { transport, sent } = recording()
    const dotted = await createTxn(transport)([
      { verb: 'get', key: 'svc/lock' },
      { verb: 'get', key: 'svc/../lock' },
    ])()
    assert.ok(E.isLeft(dotted) && dotted.left._tag === 'BadRequest')
    assert.match(dotted.left.message, /operation 1: the key "svc\/\.\.\/lock" has a "\.\." segment/)
    const big = await createTxn(transport)([
      { verb: 'set', key: 'svc/x', value: null, flags: 2n ** 64n },
    ])()
    assert.ok(E.isLeft(big) && big.left._tag === 'BadRequest')
    assert.match(big.left.message, /operation 0: flags 18446744073709551616 is not a uint64/)
    assert.equal(sent.length, 0, 'nothing was sent')
  })
})
