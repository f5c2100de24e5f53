/**
 * How every message of the library and of `rxsem` is put together from its parts (what went
 * wrong, then what to do): each part is one or more sentences, and the joiner, not the part,
 * ends each with exactly one full stop. A part that ends with a colon, a semicolon, a comma or a
 * full stop already is ended the same way, so a message can neither lose the stop between two
 * sentences ("the agent runs The session expires") nor double it ("got 8080.: give").
 */

/**
 * The parts as sentences, each ended with one full stop (or its own `?` or `!`), joined by a
 * space. Empty and missing parts are left out.
 *
 * @example
 * sentences('cannot reach the agent; check that it runs', 'The session expires by its TTL.')
 * // 'cannot reach the agent; check that it runs. The session expires by its TTL.'
 * @param parts - The sentences of the message, in order.
 * @returns The message.
 */
export function sentences(...parts: readonly (string | undefined | false)[]): string {
  return parts
    .filter((part): part is string => typeof part === 'string' && part.trim() !== '')
    .map(endSentence)
    .join(' ')
}

/**
 * `text` ending with one full stop: trailing stops, colons, semicolons, commas and spaces are
 * replaced by it; a question, an exclamation, or a full stop inside a closing bracket or quote
 * (`(see x.)`) is kept as it is.
 *
 * @example
 * endSentence('must be a value; got 8080.:') // 'must be a value; got 8080.'
 */
export function endSentence(text: string): string {
  const trimmed = text.trim()
  if (/[?!]$|[.?!][)"'`\]]$/.test(trimmed)) return trimmed
  return `${trimmed.replace(/[\s.,;:]+$/, '')}.`
}
