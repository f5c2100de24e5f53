/**
 * The digest that keys the default clients by configuration (default-client.ts). A CommonJS module
 * (`.cts`), as undici-pool.cts, so that node:crypto is loaded by the first digest, not by every
 * import of the library: loading it cost a process some 10 ms of CPU, and `rxsem run`, which
 * makes its own client, never needs it.
 */

/**
 * The SHA-256 of `text`, in hex.
 *
 * @example
 * sha256Hex('') // 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
 * @param text - What to digest (UTF-8).
 * @returns 64 hex digits.
 */
export function sha256Hex(text: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { createHash } = require('node:crypto') as typeof import('node:crypto')
  return createHash('sha256').update(text).digest('hex')
}
