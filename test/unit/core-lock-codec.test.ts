import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { compareUtf8 } from '../../src/core/compare-utf8.js'
import { decodeLock } from '../../src/core/decode-lock.js'
import { encodeLock } from '../../src/core/encode-lock.js'
import { goJsonString } from '../../src/core/go-json-string.js'

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)
const text = (b: Uint8Array): string => new TextDecoder().decode(b)

describe('decodeLock / encodeLock', () => {
  const canonical = [
    ['go-map', '{"Limit":3,"Holders":{"a":true,"b":true}}'],
    ['guide-list', '{"Limit":2,"Holders":["b","a"]}'],
    ['java-list', '{"limit":3,"holders":["b","a"]}'],
  ] as const
  for (const [shape, body] of canonical) {
    it(`should read a ${shape} body and write it back byte for byte`, () => {
      const decoded = decodeLock(bytes(body), 'k')
      assert.ok(E.isRight(decoded) && decoded.right !== undefined)
      assert.equal(decoded.right.shape, shape)
      assert.equal(text(encodeLock(decoded.right)), body)
    })
  }

  it('should read no record from a null or empty value', () => {
    assert.deepEqual(decodeLock(null, 'k'), E.right(undefined))
    assert.deepEqual(decodeLock(new Uint8Array(0), 'k'), E.right(undefined))
  })

  it('should count a holder listed twice once', () => {
    const decoded = decodeLock(bytes('{"Limit":2,"Holders":["a","a"]}'), 'k')
    assert.deepEqual(decoded, E.right({ limit: 2, holders: ['a'], shape: 'guide-list' }))
  })

  it('should sort go-map holders by UTF-8 bytes like Go', () => {
    const body = encodeLock({
      limit: 9,
      holders: ['\u{1F600}', '\uFFFD', 'b', 'a'],
      shape: 'go-map',
    })
    assert.equal(
      text(body),
      '{"Limit":9,"Holders":{"a":true,"b":true,"\uFFFD":true,"\u{1F600}":true}}',
    )
  })

  it('should escape strings like Go encoding/json', () => {
    assert.equal(goJsonString('a<b>&c\u2028'), '"a\\u003cb\\u003e\\u0026c\\u2028"')
  })

  it('should order code points above U+FFFF after U+FFFD, unlike UTF-16 comparison', () => {
    assert.ok(compareUtf8('\u{1F600}', '\uFFFD') > 0)
    assert.ok('\u{1F600}' < '\uFFFD')
    assert.ok(compareUtf8('ab', 'abc') < 0)
    assert.equal(compareUtf8('abc', 'abc'), 0)
  })
})
