/**
 * The one error the Consul layer throws instead of returning: invalid client configuration,
 * found when the client is constructed, before any request.
 *
 * @example
 * ```ts
 * try {
 *   createConsulClient()
 * } catch (error) {
 *   if (error instanceof ConsulConfigError) console.error(`fix ${error.setting}: ${error.message}`)
 * }
 * ```
 */
export class ConsulConfigError extends Error {
  /** Discriminant, `'ConsulConfigError'`, for code that tells errors apart by `_tag`. */
  readonly _tag = 'ConsulConfigError'
  /** The environment variable or option at fault, e.g. `CONSUL_HTTP_ADDR` or `options.address`. */
  readonly setting: string

  constructor(setting: string, message: string) {
    super(`${setting}: ${message}`)
    this.name = 'ConsulConfigError'
    this.setting = setting
  }
}
