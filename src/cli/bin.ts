#!/usr/bin/env node
/**
 * The `rxsem` bin (dist/rxsem.cjs): runs the CLI's bundle (dist/rxsem-cli.cjs, built from
 * `main.ts`) beside it with its code cache (`code-cache.ts`).
 * The build bundles this file on its own, with nothing but Node's modules, and gives it the
 * bundle's hash as RXSEM_BUNDLE_ID.
 *
 * @packageDocumentation
 */
import { join } from 'node:path'
import { runBundle } from './code-cache.js'

/** The hash of dist/rxsem-cli.cjs, put here by scripts/build.mjs; undefined elsewhere. */
declare const RXSEM_BUNDLE_ID: string | undefined

runBundle(
  join(__dirname, 'rxsem-cli.cjs'),
  typeof RXSEM_BUNDLE_ID === 'string' ? RXSEM_BUNDLE_ID : undefined,
)
