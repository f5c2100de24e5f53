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
