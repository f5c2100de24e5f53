/** Typed readers of parsed flag values, each failing with a UsageError that names the flag. */
import { durationMs } from '../../consul/durations.js'
import type { ParsedValues } from './parse-flags.js'
import { badValue, UsageError } from './parse-flags.js'

/** The string value of `--name`, or undefined when absent. */
export function stringFlag(values: ParsedValues, name: string): string | undefined {
  const value = values[name]
  return typeof value === 'string' ? value : undefined
}

/** The string value of a required `--name`. */
export function requiredFlag(values: ParsedValues, name: string, command: string): string {
  const value = stringFlag(values, name)
  if (value === undefined || value === '') {
    throw new UsageError(`--${name} is required.`, command)
  }
  return value
}

/** A whole number of at least 1, e.g. `--limit 3`; undefined when absent. */
export function countFlag(values: ParsedValues, name: string, command: string): number | undefined {
  const text = stringFlag(values, name)
  if (text === undefined) return undefined
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(badValue(name, shown(text)), command)
  }
  return n
}

/** A Go-style duration in ms (`500ms`, `15s`, `1m30s`, or `0`); undefined when absent. */
export function durationFlag(
  values: ParsedValues,
  name: string,
  command: string,
): number | undefined {
  const text = stringFlag(values, name)
  if (text === undefined) return undefined
  const ms = durationMs(text)
  if (ms === undefined) throw new UsageError(badValue(name, shown(text)), command)
  return ms
}

/** The values of a repeatable `--name` (parseArgs gives them as a list), or undefined when absent. */
export function listFlag(values: ParsedValues, name: string): string[] | undefined {
  const value = (values as Record<string, unknown>)[name]
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined
}

/** A value as typed when it is one word, else quoted so that its spaces show. */
export function shown(text: string): string {
  return /^\S+$/.test(text) ? text : JSON.stringify(text)
}
