// Decoding Consul's answers: errors name the request and the path of the bad field.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import {
  decodeJson,
  KVEntriesJson,
  kvEntriesJsonOf,
  KVEntryJson,
  kvEntryJsonOf,
  SessionsJson,
  toKVEntry,
  TxnAnswerJson,
  txnAnswerJsonOf,
} from '../../src/consul/codecs.js'

const entry = (fields: Record<string, string>): string =>
  `{"LockIndex":0,"Key":"p/a","Flags":0,"Value":"aGk=","CreateIndex":1,"ModifyIndex":2${Object.entries(
    fields,
  )
    .map(([k, v]) => `,"${k}":${v}`)
    .join('')}}`

describe('Consul codecs', () => {
  it('report a bad Flags with the request and the field path', () => {
    const body = `[${entry({ Flags: '"abc"' })}]`.replace('"Flags":0,', '')
    const decoded = decodeJson(KVEntriesJson, body, 'GET /v1/kv/p?recurse')
    assert.ok(E.isLeft(decoded))
    assert.equal(decoded.left._tag, 'DecodeError')
    assert.equal(
      decoded.left.message,
      'GET /v1/kv/p?recurse: [0].Flags: expected uint64 decimal, got "abc"',
    )
    assert.equal(decoded.left.request, 'GET /v1/kv/p')
  })

  it('decode a value from base64 to bytes, and null to null', () => {
    const decoded = decodeJson(
      KVEntriesJson,
      `[${entry({})},${entry({ Key: '"p/b"' }).replace('"aGk="', 'null')}]`,
      'GET /v1/kv/p?recurse',
    )
    assert.ok(E.isRight(decoded))
    assert.deepEqual(decoded.right[0]?.Value, new Uint8Array([0x68, 0x69]))
    assert.equal(decoded.right[1]?.Value, null)
  })

  it('name a union field once, with both accepted shapes', () => {
    const body = `[${entry({}).replace('"aGk="', '"not base64!"')}]`
    const decoded = decodeJson(KVEntriesJson, body, 'GET /v1/kv/p/a')
    assert.ok(E.isLeft(decoded))
    assert.deepEqual(decoded.left.errors, [
      '[0].Value: expected (base64 | null), got "not base64!"',
    ])
  })

  it('reject a negative index and a missing field', () => {
    const body = `[${entry({}).replace('"ModifyIndex":2', '"ModifyIndex":-2').replace('"Key":"p/a",', '')}]`
    const decoded = decodeJson(KVEntriesJson, body, 'GET /v1/kv/p/a')
    assert.ok(E.isLeft(decoded))
    assert.deepEqual(decoded.left.errors, [
      '[0].Key: expected string, got nothing',
      '[0].ModifyIndex: expected uint64 decimal, got -2',
    ])
  })

  it('report invalid JSON as a DecodeError, not a thrown SyntaxError', () => {
    const decoded = decodeJson(SessionsJson, '<html>', 'GET /v1/session/info/x')
    assert.ok(E.isLeft(decoded))
    assert.match(decoded.left.message, /^GET \/v1\/session\/info\/x: invalid JSON/)
  })

  it('accept a rolled-back txn answer with null results', () => {
    const decoded = decodeJson(
      TxnAnswerJson,
      '{"Results":null,"Errors":[{"OpIndex":1,"What":"failed to lock key"}]}',
      'PUT /v1/txn',
    )
    assert.ok(E.isRight(decoded))
    assert.equal(decoded.right.Errors?.[0]?.OpIndex, 1)
  })
})

describe('the codecs fast paths decode what the io-ts codecs decode, and decline the rest', () => {
  const base = {
    Key: 'p/a',
    Value: 'aGk=',
    Flags: '3304740253564472344',
    Session: 's-1',
    LockIndex: '1',
    CreateIndex: '7',
    ModifyIndex: '18446744073709551615',
  }
  /** The valid entry, and one change of each field to values that are valid or not. */
  const variants: unknown[] = [
    base,
    { ...base, Session: undefined },
    { ...base, Value: null },
    { ...base, Value: '' },
    { ...base, Extra: 'kept aside' },
    { ...base, Value: undefined },
    { ...base, Value: 'aGk' },
    { ...base, Value: 'a!k=' },
    { ...base, Value: 5 },
    { ...base, Key: 5 },
    { ...base, Key: undefined },
    { ...base, Session: null },
    { ...base, Session: 3 },
    ...(['Flags', 'LockIndex', 'CreateIndex', 'ModifyIndex'] as const).flatMap((field) =>
      ['0', '01', '-1', '1.5', '1e3', ' 1', '', '18446744073709551616', 7, 7n, null].map(
        (value) => ({ ...base, [field]: value }),
      ),
    ),
    null,
    'entry',
    [base],
  ]
  const viaCodec = (u: unknown) => {
    const decoded = KVEntryJson.decode(u)
    return E.isRight(decoded) ? toKVEntry(decoded.right) : undefined
  }

  it('kvEntryJsonOf: the same entry as KVEntryJson for every variant, or undefined where it fails', () => {
    for (const u of variants) {
      const quick = kvEntryJsonOf(u)
      assert.deepEqual(
        quick && toKVEntry(quick),
        viaCodec(u),
        JSON.stringify(u, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
      )
    }
  })

  it('kvEntriesJsonOf: a listing only when every entry is one', () => {
    assert.deepEqual(kvEntriesJsonOf([base, base])?.map(toKVEntry), [
      viaCodec(base),
      viaCodec(base),
    ])
    assert.deepEqual(kvEntriesJsonOf([]), [])
    assert.equal(kvEntriesJsonOf([base, { ...base, Flags: '-1' }]), undefined)
    assert.equal(kvEntriesJsonOf(base), undefined)
  })

  it('txnAnswerJsonOf: the same answer as TxnAnswerJson, or undefined where it fails', () => {
    const answers: unknown[] = [
      { Results: [{ KV: base }, { KV: { ...base, Value: null } }], Errors: null },
      { Results: null, Errors: [{ OpIndex: 0, What: 'failed' }] },
      { Errors: [{ OpIndex: 1, What: 'x' }] },
      {},
      { Results: [{ KV: { ...base, Flags: 'x' } }] },
      { Results: [{}] },
      { Results: [null] },
      { Results: 'no' },
      { Errors: [{ OpIndex: '0', What: 'x' }] },
      { Errors: [{ OpIndex: 0 }] },
      { Errors: {} },
      null,
    ]
    const normal = (a: TxnAnswerJson | undefined) =>
      a && {
        results: a.Results?.map((r) => toKVEntry(r.KV)) ?? null,
        errors: a.Errors ?? null,
      }
    for (const u of answers) {
      const decoded = TxnAnswerJson.decode(u)
      assert.deepEqual(
        normal(txnAnswerJsonOf(u)),
        normal(E.isRight(decoded) ? decoded.right : undefined),
        JSON.stringify(u),
      )
    }
  })
})
