/**
 * The instrumentation scope of the library's meter and tracer. The version is package.json's.
 */
export const SCOPE_NAME = 'rx-consul-semaphore'

/** The package version this scope reports. */
export const SCOPE_VERSION = '0.1.0'
