/**
 * `rxsem doctor`: checks the agent, the token and a prefix as `rxsem run` would use them
 * (`doctor`), and prints each finding with what to do.
 */
import { doctor, type DoctorReport } from '../../operator/doctor.js'
import { consulConfigFrom, consulFlagSpec } from '../args/consul-flags.js'
import { listFlag, stringFlag } from '../args/flag-values.js'
import {
  badValue,
  parseFlags,
  rejectPositionals,
  UsageError,
  type OptionSpec,
} from '../args/parse-flags.js'
import { doctorUsage } from '../args/usage.js'
import { durationMs } from '../../consul/durations.js'
import { cliWording, ExitCode } from '../report.js'

export const doctorFlagSpec = {
  prefix: { type: 'string' },
  json: { type: 'boolean' },
  ttl: { type: 'string' },
  'lock-delay': { type: 'string' },
  'node-check': { type: 'string', multiple: true },
  'no-node-checks': { type: 'boolean' },
  'service-check': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
  ...consulFlagSpec,
} as const satisfies OptionSpec

/**
 * Runs `rxsem doctor` with the arguments after `doctor`: prints the report on stdout (as JSON
 * with `--json`).
 *
 * @returns 0 when nothing is a problem (warnings may be); 78 when something is. Throws what `main`
 *   reports as one line and exit 1: bad flags, a connection that cannot be configured.
 */
export async function doctorCommand(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, doctorFlagSpec, 'doctor')
  if (values['help'] === true) {
    process.stdout.write(doctorUsage)
    return ExitCode.Ok
  }
  rejectPositionals(positionals, 'doctor')
  const nodeChecks = listFlag(values, 'node-check')
  const noNodeChecks = values['no-node-checks'] === true
  if (noNodeChecks && nodeChecks !== undefined) {
    throw new UsageError(
      '--no-node-checks and --node-check contradict each other: pick one.',
      'doctor',
    )
  }
  for (const name of ['ttl', 'lock-delay'] as const) {
    const text = stringFlag(values, name)
    // The range is the library's to check; a negative or malformed one is said plainly here.
    if (text !== undefined && durationMs(text) === undefined) {
      throw new UsageError(badValue(name, text), 'doctor')
    }
  }
  const prefix = stringFlag(values, 'prefix')
  const ttl = stringFlag(values, 'ttl')
  const lockDelay = stringFlag(values, 'lock-delay')
  const serviceChecks = listFlag(values, 'service-check')
  const report = await doctor({
    consul: consulConfigFrom(values),
    ...(prefix === undefined ? {} : { prefix }),
    ...(ttl === undefined ? {} : { ttl }),
    ...(lockDelay === undefined ? {} : { lockDelay }),
    ...(noNodeChecks ? { checks: [] } : nodeChecks === undefined ? {} : { checks: nodeChecks }),
    ...(serviceChecks === undefined ? {} : { serviceChecks }),
  })
  const worded = {
    ...report,
    findings: report.findings.map((f) => ({
      ...f,
      found: cliWording(f.found),
      action: cliWording(f.action),
    })),
  }
  process.stdout.write(
    values['json'] === true ? `${JSON.stringify(worded)}\n` : formatReport(worded),
  )
  return report.problems > 0 ? ExitCode.Problems : ExitCode.Ok
}

const SEVERITY_WIDTH = 8
const CHECK_WIDTH = 19

/** Wraps `text` to `width` columns, the lines after the first indented by `indent` spaces. */
function wrap(text: string, width: number, indent: number): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  if (line !== '') lines.push(line)
  return lines.join(`\n${' '.repeat(indent)}`)
}

/**
 * The report as text: a header naming the agent, one block per finding (severity, what it is
 * about, what was found, and `->` what to do), and a last line counting problems and warnings.
 *
 * @example
 * formatReport(report)
 * // rxsem doctor: http://127.0.0.1:8500, Consul 1.8.7, server agent, datacenter dc1, node a
 * // ok       agent              a Consul agent answers at http://127.0.0.1:8500
 * // ...
 * // no problems, no warnings.
 */
export function formatReport(report: DoctorReport): string {
  const agent = report.agent
  const header = [
    `rxsem doctor: ${report.address}`,
    ...(agent === null
      ? []
      : [
          `Consul ${agent.version}`,
          ...(agent.server === null ? [] : [agent.server ? 'server agent' : 'client agent']),
          ...(agent.datacenter === null ? [] : [`datacenter ${agent.datacenter}`]),
          ...(agent.node === null ? [] : [`node ${agent.node}`]),
        ]),
    ...(report.prefix === null ? [] : [`prefix ${report.prefix}`]),
  ].join(', ')
  const indent = SEVERITY_WIDTH + 1 + CHECK_WIDTH + 1
  const width = 100
  const blocks = report.findings.map((f) => {
    const head = `${f.severity.padEnd(SEVERITY_WIDTH)} ${f.check.padEnd(CHECK_WIDTH)} `
    const found = head + wrap(f.found, width - indent, indent)
    return f.action === ''
      ? found
      : `${found}\n${' '.repeat(indent)}-> ${wrap(f.action, width - indent - 3, indent + 3)}`
  })
  const count = (n: number, one: string, many: string): string =>
    n === 0 ? `no ${many}` : `${n} ${n === 1 ? one : many}`
  const summary = `${count(report.problems, 'problem', 'problems')}, ${count(report.warnings, 'warning', 'warnings')}.`
  return `${[wrap(header, width, 2), ...blocks, summary].join('\n')}\n`
}
