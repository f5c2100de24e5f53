import type * as t from 'io-ts'

/** What each codec of the `.lock` body asks for, in plain words. */
const PLAIN_WORDS: Readonly<Record<string, string>> = {
  PositiveInt: 'a whole number of at least 1',
  string: 'a string (a session id)',
  number: 'a number',
  boolean: 'true or false',
}

/**
 * Turns io-ts validation errors into one line a person reads, naming the path of each bad field,
 * what it holds and what it must be, e.g. `Limit is -1, but it must be a whole number of at least
 * 1`.
 *
 * @example
 * describeValidationErrors(errors, 'Holders') // 'Holders.1 is 5, but it must be a string (a session id)'
 * @param errors - The errors of a failed `decode`.
 * @param root - The name of the decoded value in the path (empty for the whole body).
 * @returns A human-readable reason.
 */
export function describeValidationErrors(errors: t.Errors, root = ''): string {
  const lines = new Set<string>()
  for (const error of errors) {
    const path = [root, ...error.context.slice(1).map((entry) => entry.key)]
      .filter((key) => key !== '')
      .join('.')
    const name = error.context[error.context.length - 1]?.type.name
    const expected = (name === undefined ? undefined : PLAIN_WORDS[name]) ?? name ?? 'valid'
    const field = path === '' ? 'the body' : path
    const found =
      error.value === undefined ? `${field} is missing` : `${field} is ${preview(error.value)}`
    lines.add(`${found}, but it must be ${expected}`)
  }
  return [...lines].join('; ')
}

function preview(value: unknown): string {
  const text = JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
