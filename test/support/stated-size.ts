// A size or count as the docs state it ("about 500 files", "3.4 MB", "about 920 kB") against the
// real one: the stated figure must be the real one rounded to the stated figure's last digit
// (500 → to the hundred, 3.4 → to the tenth, 920 → to the ten). MB and kB are npm's: 10^6 and
// 10^3 bytes, as `npm pack` prints them.

const UNITS: Record<string, number> = { files: 1, B: 1, kB: 1e3, MB: 1e6 }

/** The place of a stated number's last significant digit: 500 → 100, 3.4 → 0.1, 915 → 1. */
export function roundingOf(stated: string): number {
  const [whole = '', fraction] = stated.replace(/,/g, '').split('.')
  if (fraction !== undefined) return 10 ** -fraction.length
  const zeros = /0*$/.exec(whole)?.[0].length ?? 0
  return 10 ** Math.min(zeros, whole.length - 1)
}

/**
 * Why `actual` (in files or bytes) is not what "`stated` `unit`" says, or null when it rounds to
 * it.
 */
export function misstated(stated: string, unit: string, actual: number): string | null {
  const scale = UNITS[unit]
  if (scale === undefined)
    return `"${stated} ${unit}": no such unit (${Object.keys(UNITS).join(', ')})`
  const value = Number(stated.replace(/,/g, ''))
  const step = roundingOf(stated)
  const real = actual / scale
  // Rounded to the stated figure's last digit, half up, with a margin for binary fractions.
  const rounded = Math.round(real / step + 1e-9) * step
  if (Math.abs(rounded - value) < step / 1e3) return null
  const shown = Number(rounded.toFixed(Math.max(0, -Math.floor(Math.log10(step)))))
  return `states ${stated} ${unit}, but it is ${real} ${unit} (${shown} ${unit} at that rounding)`
}
