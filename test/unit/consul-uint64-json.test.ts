// Consul's uint64 members (flags, indexes) must survive JSON parsing exactly: JSON.parse alone
// rounds 16210313421097356768 to 16210313421097357000.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { decodeJson, KVEntriesJson } from '../../src/consul/codecs.js'
import {
  jsonObjectWithUint64,
  parseConsulJson,
  parseUint64,
  quoteUint64Members,
} from '../../src/consul/uint64-json.js'

describe('uint64 JSON', () => {
  it('keeps the semaphore flags exact where JSON.parse rounds them', () => {
    const body =
      '[{"LockIndex":0,"Key":"a","Flags":16210313421097356768,"Value":null,"CreateIndex":7,"ModifyIndex":9}]'
    assert.equal(
      (JSON.parse(body) as { Flags: number }[])[0]?.Flags,
      16210313421097357000,
      'the trap this guards against',
    )
    const decoded = decodeJson(KVEntriesJson, body, 'GET /v1/kv/a')
    assert.ok(E.isRight(decoded))
    assert.equal(decoded.right[0]?.Flags, 16210313421097356768n)
    assert.equal(decoded.right[0]?.ModifyIndex, 9n)
  })

  it('quotes the members with any whitespace Go indenting produces, and the txn Index', () => {
    const pretty = '{\n    "Flags": 18446744073709551615,\n    "Index" : 12,\n    "OpIndex": 3\n}'
    assert.deepEqual(parseConsulJson(pretty), {
      Flags: '18446744073709551615',
      Index: '12',
      OpIndex: 3,
    })
  })

  it('does not touch a key NAME that contains the text "Flags":1', () => {
    const key = 'weird/"Flags":1,"ModifyIndex":2}'
    const body = JSON.stringify([
      { LockIndex: 0, Key: key, Flags: 5, Value: null, CreateIndex: 3, ModifyIndex: 4 },
    ])
    assert.ok(body.includes('\\"Flags\\":1'), 'the name is escaped inside its string')
    assert.equal(quoteUint64Members(body).includes('"Key":"weird/\\"Flags\\":1,'), true)
    const parsed = parseConsulJson(body) as { Key: string; Flags: string }[]
    assert.equal(parsed[0]?.Key, key)
    assert.equal(parsed[0]?.Flags, '5')
  })

  it('leaves negative and fractional numbers alone so that the codec rejects them', () => {
    assert.deepEqual(parseConsulJson('{"Flags":-1,"LockIndex":1.5,"CreateIndex":1e3}'), {
      Flags: -1,
      LockIndex: 1.5,
      CreateIndex: 1000,
    })
  })

  it('quotes only digits that end the value, and every such member', () => {
    assert.equal(
      quoteUint64Members('[{"Flags":1,"Index":22 },{"ModifyIndex":333\n]'),
      '[{"Flags":"1","Index":"22" },{"ModifyIndex":"333"\n]',
    )
    assert.equal(
      quoteUint64Members('{"Flags":12a,"Index":"7","LockIndex":}'),
      '{"Flags":12a,"Index":"7","LockIndex":}',
    )
    assert.equal(quoteUint64Members('{"Flags":5'), '{"Flags":5', 'no delimiter after the digits')
  })

  it('parses only canonical decimals within 0..2^64-1', () => {
    assert.equal(parseUint64('0'), 0n)
    assert.equal(parseUint64('18446744073709551615'), 18446744073709551615n)
    assert.equal(parseUint64('18446744073709551616'), undefined)
    for (const bad of ['', '-1', '01', '1.0', '1e3', ' 1', 'abc', '0x10']) {
      assert.equal(parseUint64(bad), undefined, bad)
    }
  })

  it('writes bigint members as exact bare integers', () => {
    const text = jsonObjectWithUint64([
      ['Verb', 'set'],
      ['Key', 'k"1'],
      ['Flags', 16210313421097356768n],
      ['Session', undefined],
      ['Value', null],
    ])
    assert.equal(text, '{"Verb":"set","Key":"k\\"1","Flags":16210313421097356768,"Value":null}')
  })
})
