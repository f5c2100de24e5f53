/**
 * JSON parsing that keeps Consul's uint64 numbers exact.
 *
 * `JSON.parse` turns every number into a float64, so the semaphore flags 16210313421097356768
 * come back as 16210313421097357000 and would be written back wrong (docs: consul-http-semantics
 * §9 trap 1). Before parsing, the bare integer values of the members that Consul emits as uint64
 * are quoted, so they reach the codecs as decimal strings that become `bigint` without rounding.
 */

/**
 * A uint64 member, `"Flags": 123` (and the index members), which becomes `"Flags": "123"`: its
 * name and colon (group 1), its digits (group 2), then `,` `}` `]` or whitespace, looked at but
 * not taken.
 *
 * Why a regex is safe here, on valid JSON: inside a JSON string a `"` is always written `\"`.
 * The match needs a `"` directly after the name (`Flags"`), preceded by a letter, not by a
 * backslash, so that quote is a real string delimiter; being followed by `:` it closes a member
 * name. Consul's member names are fixed Go field names, so that name is exactly `Flags` (a name
 * ending in `\"Flags` would need a member name containing a quote). User data (a key called
 * `x"Flags":1`, a session name) only ever appears inside string values, where its quotes are
 * escaped (`"x\"Flags\":1"`) and so never match. The value must be digits followed by `,` `}`
 * `]` or whitespace: a negative or fractional number is left alone and rejected by the codec.
 */
const UINT64_MEMBER =
  /("(?:Flags|LockIndex|CreateIndex|ModifyIndex|Index)"\s*:\s*)(\d+)(?=\s*[,}\]])/g

/**
 * Quotes the bare integer values of Consul's uint64 members (see UINT64_MEMBER for why). One
 * `replace` with a template: it builds the quoted text in one piece, where concatenating the
 * text between the members made a string for each piece and then flattened them all again
 * (this runs on every answer).
 */
export function quoteUint64Members(json: string): string {
  return json.replace(UINT64_MEMBER, '$1"$2"')
}

/** `JSON.parse` with Consul's uint64 members kept as exact decimal strings. */
export function parseConsulJson(json: string): unknown {
  return JSON.parse(quoteUint64Members(json)) as unknown
}

/** The largest uint64, 2^64 - 1. */
export const UINT64_MAX = 0xffffffffffffffffn

/** A uint64 as a decimal string without sign, leading zeros or exponent, or undefined. */
export function parseUint64(text: string): bigint | undefined {
  const length = text.length
  // 2^64 - 1 has 20 digits; a leading zero only in "0".
  if (length === 0 || length > 20 || (length > 1 && text.charCodeAt(0) === 48)) return undefined
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code < 48 || code > 57) return undefined
  }
  const value = BigInt(text)
  return value <= UINT64_MAX ? value : undefined
}

/**
 * Serialises a flat JSON object whose values may be `bigint` (written as bare integers, exactly),
 * strings, numbers, booleans or null. `JSON.stringify` refuses `bigint`, and turning one into a
 * number would round it.
 */
export function jsonObjectWithUint64(
  members: readonly (readonly [string, string | number | boolean | bigint | null | undefined])[],
): string {
  let json = ''
  for (const [name, value] of members) {
    if (value === undefined) continue
    const encoded = typeof value === 'bigint' ? value.toString() : JSON.stringify(value)
    json += `${json === '' ? '' : ','}${JSON.stringify(name)}:${encoded}`
  }
  return `{${json}}`
}
