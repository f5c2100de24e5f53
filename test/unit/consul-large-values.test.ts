// Large valid values decode: the base64 check is a loop, not a regular expression, whose
// backtracking overflowed V8's stack ("Maximum call stack size exceeded") from about 5 MB.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { Base64Bytes, decodeJson, isPaddedBase64, KVEntriesJson } from '../../src/consul/codecs.js'

const MB = 1024 * 1024

/** `bytes` pseudo-random bytes (every base64 character shows up), the same on every run. */
function bytesOf(bytes: number): Buffer {
  const out = Buffer.alloc(bytes)
  let x = 0x12345678
  for (let i = 0; i < bytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

const entryJson = (key: string, value: Buffer, index: number): string =>
  `{"LockIndex":0,"Key":"${key}","Flags":0,"Value":"${value.toString('base64')}","CreateIndex":${index},"ModifyIndex":${index}}`

describe('large values', () => {
  for (const size of [5 * MB, 20 * MB]) {
    it(`decode a ${size / MB} MB value to the same bytes`, () => {
      const value = bytesOf(size)
      const decoded = Base64Bytes.decode(value.toString('base64'))
      assert.ok(E.isRight(decoded))
      assert.equal(decoded.right.length, size)
      assert.ok(Buffer.from(decoded.right).equals(value))
    })
  }

  it('decode a listing of many 512 KiB values (Consul default maximum)', () => {
    const value = bytesOf(512 * 1024)
    const body = `[${Array.from({ length: 40 }, (_, i) => entryJson(`p/k${i}`, value, i + 10)).join(',')}]`
    assert.ok(body.length > 25 * MB)
    const decoded = decodeJson(KVEntriesJson, body, 'GET /v1/kv/p?recurse')
    assert.ok(E.isRight(decoded), E.isLeft(decoded) ? decoded.left.message : '')
    assert.equal(decoded.right.length, 40)
    assert.ok(decoded.right.every((e) => e.Value !== null && Buffer.from(e.Value).equals(value)))
  })

  it('still refuses what is not padded base64, also when large', () => {
    const good = bytesOf(5 * MB + 1).toString('base64') // ends in "="
    assert.equal(isPaddedBase64(good), true)
    for (const bad of [
      `${good.slice(0, -4)}a=b=`, // padding inside
      `${good.slice(0, -1)}`, // length not a multiple of 4
      `!${good.slice(1)}`, // a character outside the alphabet
      `${good.slice(0, -4)}====`,
      `${good.slice(0, -4)}a===`,
      'aGk', // unpadded
      'aG k',
      '-_8=', // the URL alphabet
    ]) {
      assert.equal(isPaddedBase64(bad), false, bad.slice(-8))
      assert.ok(E.isLeft(Base64Bytes.decode(bad)))
    }
    for (const ok of ['', 'aGk=', 'aA==', 'aGVs', '+/+/'])
      assert.equal(isPaddedBase64(ok), true, ok)
  })
})
