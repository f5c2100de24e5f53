import type * as t from 'io-ts'

/**
 * Turns io-ts validation errors into one line naming the path of each bad field, what was expected
 * and what was found, e.g. `Limit: expected PositiveInt, got 0`.
 *
 * @example
 * describeValidationErrors(errors, 'holders') // 'holders.1: expected string, got 5'
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
    const expected = error.context[error.context.length - 1]?.type.name ?? 'a valid value'
    lines.add(`${path === '' ? 'body' : path}: expected ${expected}, got ${preview(error.value)}`)
  }
  return [...lines].join('; ')
}

function preview(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
