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

/** Any JSON object: the body itself, and a holder map before its values are judged. */
export const JsonObject = t.UnknownRecord

/**
 * A value of the Go-shaped holder map. Go's client decodes `Holders` as `map[string]bool`: `true`
 * and `false` decode, `null` leaves the zero value (false), anything else fails the whole body.
 */
export const HolderFlag = t.union([t.boolean, t.null])
