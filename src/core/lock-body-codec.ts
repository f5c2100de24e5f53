/**
 * io-ts codecs of the `.lock` body fields. The two key casings seen in the wild are separate
 * codecs, so that a decode error names the exact field (`Limit`, `holders.2`, ...).
 */
import * as t from 'io-ts'

interface PositiveIntBrand {
  readonly PositiveInt: unique symbol
}

/** A positive safe integer: what `Limit` must be. */
export const PositiveInt = t.brand(
  t.number,
  (n): n is t.Branded<number, PositiveIntBrand> => Number.isSafeInteger(n) && n > 0,
  'PositiveInt',
)

/** `Limit` in the casing of Go's client and the newer guide. */
export const CapitalisedLimit = t.type({ Limit: PositiveInt })

/** `limit` in the casing of the Java post. */
export const LowercaseLimit = t.type({ limit: PositiveInt })

/** Holders as a list of session ids (guide and Java shapes). */
export const HolderList = t.array(t.string)

/** Holders as a map used as a set (Go shape). Values are not judged: Go only counts the keys. */
export const HolderMap = t.UnknownRecord
