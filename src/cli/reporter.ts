/**
 * `rxsem`'s own messages. They all go to stderr: stdout belongs to the child (`run`) or to the
 * requested output (`status`), so scripts can pipe it untouched.
 */

/** How much `rxsem` says: only errors, a few key lines, or every transition with its reason. */
export type Verbosity = 'quiet' | 'normal' | 'verbose'

export interface Reporter {
  /** A failure: always printed. */
  error(message: string): void
  /** A key step (waiting, acquired, lost, stopping): printed unless quiet. */
  info(message: string): void
  /** Every transition and its reason: printed only when verbose. */
  detail(message: string): void
}

/**
 * A reporter writing `rxsem: <message>` lines to `stream` (default stderr).
 *
 * @example
 * createReporter('verbose').detail('holding slot (acquired, session 1234abcd, fencing token 57)')
 */
export function createReporter(
  verbosity: Verbosity,
  stream: NodeJS.WritableStream = process.stderr,
): Reporter {
  const say = (message: string): void => {
    stream.write(`rxsem: ${message}\n`)
  }
  const nothing = (): void => {}
  return {
    error: say,
    info: verbosity === 'quiet' ? nothing : say,
    detail: verbosity === 'verbose' ? say : nothing,
  }
}
