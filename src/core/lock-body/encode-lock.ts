import { compareUtf8 } from '../keys/compare-utf8.js'
import { goJsonString } from './go-json-string.js'
import type { LockRecord } from './lock-record.js'

const utf8 = new TextEncoder()

/**
 * Encodes a `.lock` body in the shape it was read in: 'go-map' exactly as Go's `json.Marshal`
 * writes it (`{"Limit":N,"Holders":{"a":true,"b":true}}`, holders sorted by UTF-8 bytes),
 * 'guide-list' as `{"Limit":N,"Holders":["a","b"]}` and 'java-list' as
 * `{"limit":N,"holders":["a","b"]}`, lists in the given order. Extra fields of the body read are
 * not written back (Go's client drops them too).
 *
 * @example
 * new TextDecoder().decode(encodeLock({ limit: 2, holders: ['b', 'a'], shape: 'go-map' }))
 * // '{"Limit":2,"Holders":{"a":true,"b":true}}'
 * @param record - Limit, holders and shape to write.
 * @returns The body bytes, ready to PUT.
 */
export function encodeLock(record: LockRecord): Uint8Array {
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
