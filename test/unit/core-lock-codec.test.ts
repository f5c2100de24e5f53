import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'

import { decodeLockBody } from '../../src/core/lock-body/decode-lock-body.js'
import {
  compareUtf8,
  encodeLockBody,
  goJsonString,
} from '../../src/core/lock-body/encode-lock-body.js'

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)
const text = (b: Uint8Array): string => new TextDecoder().decode(b)

describe('decodeLockBody / encodeLockBody', () => {
  const canonical = [
    ['go-map', '{"Limit":3,"Holders":{"a":true,"b":true}}'],
    ['guide-list', '{"Limit":2,"Holders":["b","a"]}'],
    ['java-list', '{"limit":3,"holders":["b","a"]}'],
  ] as const
  for (const [shape, body] of canonical) {
    it(`should read a ${shape} body and write it back byte for byte`, () => {
      const decoded = decodeLockBody(bytes(body), 'k')
      assert.ok(E.isRight(decoded) && decoded.right !== undefined)
      assert.equal(decoded.right.shape, shape)
      assert.equal(text(encodeLockBody(decoded.right)), body)
    })
  }

  it('should read no record from a null or empty value', () => {
    assert.deepEqual(decodeLockBody(null, 'k'), E.right(undefined))
    assert.deepEqual(decodeLockBody(new Uint8Array(0), 'k'), E.right(undefined))
  })

  it('should count a holder listed twice once', () => {
    const decoded = decodeLockBody(bytes('{"Limit":2,"Holders":["a","a"]}'), 'k')
    assert.deepEqual(decoded, E.right({ limit: 2, holders: ['a'], shape: 'guide-list' }))
  })

  describe('holder map values, judged like Go reads map[string]bool', () => {
    const kept = [
      ['true', 'true'],
      ['false', 'false'],
      ['null', 'null'],
    ] as const
    for (const [what, value] of kept) {
      it(`should count a holder whose value is ${what}, as consul lock does`, () => {
        const decoded = decodeLockBody(bytes(`{"Limit":2,"Holders":{"a":${value},"b":true}}`), 'k')
        assert.deepEqual(decoded, E.right({ limit: 2, holders: ['a', 'b'], shape: 'go-map' }))
      })
    }

    const refused = [
      ['a number', '1', /holder "a" has a number value \(1\)/],
      ['a string', '"true"', /holder "a" has a string value \("true"\)/],
      ['an object', '{"held":true}', /holder "a" has an object value \(\{"held":true\}\)/],
      ['an array', '[true]', /holder "a" has an array value \(\[true\]\)/],
    ] as const
    for (const [what, value, reason] of refused) {
      it(`should call a holder map corrupt when a value is ${what}, naming the holder`, () => {
        const decoded = decodeLockBody(bytes(`{"Limit":2,"Holders":{"b":true,"a":${value}}}`), 'k')
        assert.ok(E.isLeft(decoded))
        assert.equal(decoded.left.type, 'CorruptLock')
        assert.equal(decoded.left.key, 'k')
        assert.match(decoded.left.reason, /^Holders: /)
        assert.match(decoded.left.reason, reason)
        assert.match(decoded.left.reason, /map\[string\]bool/)
        assert.match(decoded.left.reason, /must be true or false/)
      })
    }

    it('should judge a lowercase holder map the same way, Go matching field names without case', () => {
      const decoded = decodeLockBody(bytes('{"limit":2,"holders":{"a":1}}'), 'k')
      assert.ok(E.isLeft(decoded))
      assert.match(decoded.left.reason, /^holders: holder "a" has a number value/)
    })

    it('should name the first bad holder and count the others', () => {
      const decoded = decodeLockBody(
        bytes('{"Limit":3,"Holders":{"a":1,"b":true,"c":"x","d":2}}'),
        'k',
      )
      assert.ok(E.isLeft(decoded))
      assert.match(decoded.left.reason, /holder "a" has a number value \(1\) \(and 2 more holders/)
    })

    it('should still read holder lists as lists of session ids', () => {
      assert.deepEqual(
        decodeLockBody(bytes('{"Limit":2,"Holders":["id"]}'), 'k'),
        E.right({ limit: 2, holders: ['id'], shape: 'guide-list' }),
      )
      assert.deepEqual(
        decodeLockBody(bytes('{"limit":3,"holders":["id"]}'), 'k'),
        E.right({ limit: 3, holders: ['id'], shape: 'java-list' }),
      )
    })
  })

  it('should sort go-map holders by UTF-8 bytes like Go', () => {
    const body = encodeLockBody({
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
