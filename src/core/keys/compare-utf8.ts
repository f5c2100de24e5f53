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
