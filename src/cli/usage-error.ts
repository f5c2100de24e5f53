/**
 * A command line `rxsem` cannot act on: an unknown command or flag, a missing or malformed value.
 * `main` prints its message on one line with a pointer to `--help`, and exits 1.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError'
  constructor(
    message: string,
    /** The command whose `--help` explains the fix, e.g. 'run'; undefined for `rxsem` itself. */
    readonly command?: string,
  ) {
    super(message)
  }
}
