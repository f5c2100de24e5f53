/**
 * `rxsem run`: hold a slot while a command runs. The flow, and the exit status of each way out:
 *
 * ```
 * check options ─► check Consul ─► contend ──held──► start command ──ends──► release ─► its status
 *      │ 1              │ 1           │ 1 error              ├─ slot lost ─► stop group ─► 75
 *                                   │ 124 timeout          └─ SIGINT/TERM ─► pass on ─► 130/143
 *                                   └ 130/143 signal
 * ```
 */
import { firstValueFrom, from, map, merge, type Observable } from 'rxjs'
import { createConsulClient } from '../consul/client.js'
import type { ConsulHttpClient } from '../consul/client.js'
import { startChildGroup, exitStatusOf, type ChildExit } from './child-group.js'
import { createContender, type CliContender } from './contender.js'
import { describeError } from './describe-error.js'
import { ExitCode, signalExitCode } from './exit-codes.js'
import { checkReachable } from './reachability.js'
import { createReporter, type Reporter } from './reporter.js'
import { planRun, type RunPlan } from './run-plan.js'
import { StopSignals } from './stop-signals.js'
import { states, slotLost, waitForSlot } from './run-phases.js'
import { describeTransition } from './transitions.js'
import { runUsage } from './usage.js'

/**
 * Runs `rxsem run` with the arguments after `run`.
 *
 * @returns The exit status. Throws UsageError, SemaphoreError or ConsulConfigError for problems
 *   found before anything was sent to Consul.
 */
export async function runCommand(argv: readonly string[]): Promise<number> {
  const plan = planRun(argv)
  if (plan.help) {
    process.stdout.write(runUsage)
    return ExitCode.Ok
  }
  const report = createReporter(plan.verbosity)
  const client = createConsulClient(plan.consul)
  try {
    const unreachable = await checkReachable(client, plan.prefix)
    if (unreachable !== undefined) {
      // Only a network failure is "unreachable"; a 403 or a refused certificate says what it is.
      const what =
        unreachable._tag === 'Unreachable' || unreachable._tag === 'Timeout'
          ? 'Consul is unreachable'
          : 'Consul refused the start-up check'
      report.error(`${what}, nothing was started: ${describeError(unreachable)}`)
      return ExitCode.Error
    }
    return await holdWhileRunning(plan, client, report)
  } finally {
    await client.close()
  }
}

async function holdWhileRunning(
  plan: RunPlan,
  client: ConsulHttpClient,
  report: Reporter,
): Promise<number> {
  const contender = createContender({ ...plan, consul: client })
  const signals = new StopSignals()
  const state$ = states(contender)
  let previous: Parameters<typeof describeTransition>[0]
  const narrator = state$.subscribe({
    next: (state) => {
      for (const line of describeTransition(previous, state)) report[line.level](line.message)
      previous = state
    },
    // Errors are reported by the phase that sees them.
    error: () => {},
  })
  try {
    const waited = await waitForSlot(state$, signals.received, plan)
    switch (waited.type) {
      case 'failed':
        report.error(describeError(waited.error))
        await release(contender, report)
        return ExitCode.Error
      case 'timeout':
        report.info(`${waited.why}; started nothing`)
        await release(contender, report)
        return ExitCode.Timeout
      case 'signal':
        report.info(`${waited.signal} before a slot was held; started nothing`)
        await release(contender, report)
        return signalExitCode(waited.signal)
      case 'held':
        break
    }

    const { state } = waited
    const child = startChildGroup({
      command: plan.command,
      shell: plan.shell,
      env: {
        ...process.env,
        CONSUL_LOCK_HELD: 'true',
        RXSEM_SESSION: state.session ?? '',
        RXSEM_FENCING_TOKEN: state.fencingToken?.toString() ?? '',
      },
    })
    report.detail(`started ${JSON.stringify(plan.command.join(' '))} as process group ${child.pid}`)

    type Running =
      | { readonly type: 'exited'; readonly exit: ChildExit }
      | { readonly type: 'lost'; readonly why: string }
      | { readonly type: 'signal'; readonly signal: NodeJS.Signals }
    const running: Observable<Running> = merge(
      from(child.exited).pipe(map((exit): Running => ({ type: 'exited', exit }))),
      slotLost(state$).pipe(map((why): Running => ({ type: 'lost', why }))),
      signals.received.pipe(map((signal): Running => ({ type: 'signal', signal }))),
    )
    const outcome = await firstValueFrom(running)

    // While the command is being stopped, a second signal means: stop it now.
    const impatience = signals.received.subscribe(() => child.signal('SIGKILL'))
    try {
      switch (outcome.type) {
        case 'exited': {
          if (outcome.exit.type === 'failed') {
            report.error(
              `cannot start ${JSON.stringify(plan.command[0])}: ${outcome.exit.error.message}; ` +
                'check the command name and PATH, or use --shell for a shell command line.',
            )
          } else {
            report.detail(`command ended (${describeExit(outcome.exit)}); releasing the slot`)
          }
          await release(contender, report)
          return exitStatusOf(outcome.exit, ExitCode.CannotStart)
        }
        case 'lost': {
          report.info(
            `lost slot (${outcome.why}); stopping the command: SIGTERM to its process group, ` +
              `SIGKILL after ${plan.graceMs} ms`,
          )
          // Nothing is held any more: give the slot's remains back while the command stops.
          const [exit] = await Promise.all([
            child.stop('SIGTERM', plan.graceMs),
            release(contender, report),
          ])
          report.detail(`command ended (${describeExit(exit)}) after the slot was lost`)
          return ExitCode.SlotLost
        }
        case 'signal': {
          report.info(
            `${outcome.signal} received: passed to the command's process group, SIGKILL after ${plan.graceMs} ms`,
          )
          const exit = await child.stop(outcome.signal, plan.graceMs)
          report.detail(`command ended (${describeExit(exit)}); releasing the slot`)
          await release(contender, report)
          return signalExitCode(outcome.signal)
        }
      }
    } finally {
      impatience.unsubscribe()
    }
  } finally {
    narrator.unsubscribe()
    signals.dispose()
  }
}

/** Releases the slot (or the place in the queue); a failure is reported, not fatal. */
async function release(contender: CliContender, report: Reporter): Promise<void> {
  try {
    await contender.close()
    report.detail('released: contender key and session removed from Consul')
  } catch (error) {
    report.error(describeError(error))
  }
}

function describeExit(exit: ChildExit): string {
  switch (exit.type) {
    case 'exited':
      return `exit status ${exit.code}`
    case 'signalled':
      return `killed by ${exit.signal}`
    case 'failed':
      return `not started: ${exit.error.message}`
  }
}
