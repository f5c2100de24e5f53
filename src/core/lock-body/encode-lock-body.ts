import type { LockBodyRecord } from './lock-body-record.js'

const utf8 = new TextEncoder()

/**
 * Encodes a `.lock` body in the shape it was read in: 'go-map' exactly as Go's `json.Marshal`
 * writes it (`{"Limit":N,"Holders":{"a":true,"b":true}}`, holders sorted by UTF-8 bytes),
 * 'guide-list' as `{"Limit":N,"Holders":["a","b"]}` and 'java-list' as
 * `{"limit":N,"holders":["a","b"]}`, lists in the given order. Extra fields of the body read are
 * not written back (Go's client drops them too).
 *
 * @example
 * new TextDecoder().decode(encodeLockBody({ limit: 2, holders: ['b', 'a'], shape: 'go-map' }))
 * // '{"Limit":2,"Holders":{"a":true,"b":true}}'
 * @param record - Limit, holders and shape to write.
 * @returns The body bytes, ready to PUT.
 */
export function encodeLockBody(record: LockBodyRecord): Uint8Array {
  const { limit, holders, shape } = record
  switch (shape) {
    case 'go-map': {
      const entries = [...holders].sort(compareUtf8).map((h) => `${goJsonString(h)}:true`)
      return utf8.encode(`{"Limit":${limit},"Holders":{${entries.join(',')}}}`)
    }
    case 'guide-list':
      return utf8.encode(`{"Limit":${limit},"Holders":[${holders.map(goJsonString).join(',')}]}`)
    case 'java-list':
      return utf8.encode(`{"limit":${limit},"holders":[${holders.map(goJsonString).join(',')}]}`)
  }
}

/**
 * Encodes a string as a JSON string literal the way Go's `encoding/json` does, so that a `.lock`
 * body written here is byte-identical to one written by Consul's Go client: like
 * `JSON.stringify`, plus Go's HTML-safe escapes of `<`, `>`, `&` and of U+2028/U+2029.
 *
 * @example
 * goJsonString('a<b') // '"a\\u003cb"'
 * @param text - The string to encode.
 * @returns The JSON literal, quotes included.
 */
export function goJsonString(text: string): string {
  return JSON.stringify(text).replace(/[<>&\u2028\u2029]/g, (c) => goEscapes[c] ?? c)
}

const goEscapes: Readonly<Record<string, string>> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
}

/**
 * Orders strings by their UTF-8 bytes (the order Go's `json.Marshal` sorts map keys in), which is
 * code point order; JS's `<` compares UTF-16 code units and differs for characters above U+FFFF.
 *
 * @example
 * ['b', 'a', '\u{1F600}', '\uFFFD'].sort(compareUtf8) // ['a', 'b', '\uFFFD', '\u{1F600}']
 * @param a - A string.
 * @param b - Another string.
 * @returns Negative, zero or positive, for `Array.prototype.sort`.
 */
export function compareUtf8(a: string, b: string): number {
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i) ?? 0
    const y = b.codePointAt(j) ?? 0
    if (x !== y) return x - y
    i += x > 0xffff ? 2 : 1
    j += y > 0xffff ? 2 : 1
  }
  return a.length - i - (b.length - j)
}
