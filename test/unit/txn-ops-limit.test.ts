// How many operations one transaction may hold on an agent, by its version (src/base/txn-ops-limit.ts),
// and how a client learns and keeps it (src/consul/txn-limit.ts): asked only for a transaction of
// more than 64 operations, once per client, with 64 when the version cannot be read.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { ConsulClient } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { agentVersion } from '../../src/base/consul-version.js'
import {
  maxTxnOps,
  TXN_OPS_EVERY_VERSION,
  TXN_OPS_FROM_1_14,
} from '../../src/base/txn-ops-limit.js'
import type { HttpAnswer, Transport } from '../../src/consul/http.js'
import { agentTxnLimit, attachTxnLimit, type TxnLimit } from '../../src/consul/txn-limit.js'

describe('the transaction limit of a Consul version', () => {
  it('is 64 up to 1.13 and 128 from 1.14 on', () => {
    assert.equal(TXN_OPS_EVERY_VERSION, 64)
    assert.equal(TXN_OPS_FROM_1_14, 128)
    for (const version of ['1.8.7', '1.13.9', '1.13.0', '1.9', '0.9.3']) {
      assert.equal(maxTxnOps(version), 64, version)
    }
    for (const version of ['1.14.0', '1.14', '1.20.1', '1.21.4', '2.0.0', 'v1.16.1']) {
      assert.equal(maxTxnOps(version), 128, version)
    }
  })

  it('reads release candidates and Enterprise versions by their numbers', () => {
    assert.equal(maxTxnOps('1.14.0-rc1'), 128)
    assert.equal(maxTxnOps('1.15.2+ent'), 128)
    assert.equal(maxTxnOps('1.13.4+ent'), 64)
    assert.equal(maxTxnOps('1.13.0-beta2'), 64)
  })

  it('is 64, which every version takes, for a version it cannot read or none', () => {
    for (const version of ['', 'dev', 'garbage', 'one.fourteen', '.14.0', undefined]) {
      assert.equal(maxTxnOps(version), 64, String(version))
    }
  })

  it("reads the version at Config.Version of the agent's description", () => {
    assert.equal(agentVersion({ Config: { Version: '1.8.7', Server: true } }), '1.8.7')
    assert.equal(agentVersion({ Config: { Version: '' } }), undefined)
    assert.equal(agentVersion({ Config: { Version: 17 } }), undefined)
    assert.equal(agentVersion({ Config: {} }), undefined)
    assert.equal(agentVersion(null), undefined)
    assert.equal(agentVersion('1.8.7'), undefined)
  })
})

/** A transport whose `GET /v1/agent/self` answers are `answers`, one per request, in order. */
function fakeTransport(answers: (() => Promise<HttpAnswer | ConsulError>)[]) {
  const asked: string[] = []
  const transport = {
    call: <A>(
      request: { method: string; path: string },
      interpret: (answer: HttpAnswer) => E.Either<ConsulError, A>,
    ): TE.TaskEither<ConsulError, A> => {
      return async () => {
        asked.push(`${request.method} ${request.path}`)
        const next = answers.shift()
        assert.ok(next !== undefined, 'no more answers')
        const answer = await next()
        return '_tag' in answer ? E.left(answer) : interpret(answer)
      }
    },
  } as unknown as Transport
  const client = {} as ConsulClient
  attachTxnLimit(client, transport)
  return { client, asked }
}

const answer = (status: number, body: string): HttpAnswer =>
  ({
    status,
    body,
    headers: {},
    label: 'GET /v1/agent/self',
  }) as unknown as HttpAnswer
const self = (version: string) => () =>
  Promise.resolve(answer(200, JSON.stringify({ Config: { Version: version } })))
const limitOf = async (client: ConsulClient, needed: number): Promise<TxnLimit> => {
  const read = await agentTxnLimit(client, needed)()
  assert.ok(E.isRight(read), 'no signal: never a failure')
  return read.right
}

describe("a client's transaction limit", () => {
  it('asks nothing for a transaction that every version takes', async () => {
    const { client, asked } = fakeTransport([])
    assert.equal((await limitOf(client, 64)).ops, 64)
    assert.equal((await limitOf(client, 1)).ops, 64)
    assert.deepEqual(asked, [])
  })

  it("asks the agent's version once, shared by the calls that wait for it and kept", async () => {
    const { client, asked } = fakeTransport([self('1.14.0')])
    const [a, b] = await Promise.all([limitOf(client, 65), limitOf(client, 128)])
    assert.equal(a.ops, 128)
    assert.equal(b.ops, 128)
    assert.equal(a.version, '1.14.0')
    assert.equal((await limitOf(client, 100)).ops, 128)
    assert.deepEqual(asked, ['GET /v1/agent/self'])
  })

  it('says why 64 on an agent before 1.14', async () => {
    const { client } = fakeTransport([self('1.8.7')])
    const limit = await limitOf(client, 65)
    assert.equal(limit.ops, 64)
    assert.match(limit.why, /Consul 1\.8\.7 takes at most 64 .*128 from Consul 1\.14/)
  })

  it('counts on 64 and keeps it when the token may not read the version (403)', async () => {
    const { client, asked } = fakeTransport([
      () => Promise.resolve(answer(403, 'Permission denied')),
    ])
    const limit = await limitOf(client, 65)
    assert.equal(limit.ops, 64)
    assert.equal(limit.version, undefined)
    assert.match(limit.why, /agent:read.*counts on 64/)
    assert.equal((await limitOf(client, 65)).ops, 64)
    assert.deepEqual(asked, ['GET /v1/agent/self'], 'a 403 is not asked again')
  })

  it('counts on 64 for an answer without a version, or not JSON', async () => {
    for (const body of ['{"Config":{}}', 'not json']) {
      const { client } = fakeTransport([() => Promise.resolve(answer(200, body))])
      const limit = await limitOf(client, 65)
      assert.equal(limit.ops, 64, body)
      assert.match(limit.why, /names no version/, body)
    }
  })

  it('counts on 64 after a network failure, and asks again next time', async () => {
    const unreachable: ConsulError = {
      _tag: 'Unreachable',
      message: 'GET /v1/agent/self: connect ECONNREFUSED',
    }
    const { client, asked } = fakeTransport([
      () => Promise.resolve(unreachable),
      self('1.15.2+ent'),
    ])
    const first = await limitOf(client, 65)
    assert.equal(first.ops, 64)
    assert.match(first.why, /ECONNREFUSED/)
    assert.equal((await limitOf(client, 65)).ops, 128)
    assert.equal((await limitOf(client, 65)).ops, 128)
    assert.equal(asked.length, 2)
  })

  it('answers Aborted when the signal fires first; the request goes on for the others', async () => {
    let answerNow: (() => void) | undefined
    const { client, asked } = fakeTransport([
      () =>
        new Promise((resolve) => {
          answerNow = () => resolve(answer(200, JSON.stringify({ Config: { Version: '1.14.1' } })))
        }),
    ])
    const controller = new AbortController()
    const aborted = agentTxnLimit(client, 65, { signal: controller.signal })()
    const other = limitOf(client, 65)
    controller.abort()
    const read = await aborted
    assert.ok(E.isLeft(read) && read.left._tag === 'Aborted')
    answerNow?.()
    assert.equal((await other).ops, 128)
    const already = await agentTxnLimit(client, 65, { signal: AbortSignal.abort() })()
    assert.ok(E.isLeft(already), 'an aborted signal is answered at once')
    assert.equal(asked.length, 1)
  })

  it('counts on 64 for a client not made by createConsulClient', async () => {
    const limit = await limitOf({} as ConsulClient, 100)
    assert.equal(limit.ops, 64)
    assert.match(limit.why, /not made by createConsulClient/)
  })
})
