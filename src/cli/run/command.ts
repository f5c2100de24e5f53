/**
 * `rxsem run`: hold a slot while a command runs. The flow, and the exit status of each way out:
 *
 * ```
 * check options ─► check Consul ─► contend ──held──► start command ──ends──► release ─► its status
 *      │ 1              │ 1           │ 1 error              ├─ slot lost ─► stop group ─► 75
 *                                   │                      ├─ revoke asked ─► stop group ─► release ─► 75
 *                                   │ 124 timeout          ├─ SIGINT/TERM/HUP ─► stop group ─► 130/143/129
 *                                   └ 130/143/129 signal   └─ watchdog killed ─► stop group ─► 71
 * ```
 *
 * A watchdog (`watchdog.ts`, a bash script) runs beside rxsem from the start, and guards the
 * command's group from its start to its end against rxsem itself: rxsem killed, or frozen past the
 * lease deadline.
 */
import * as E from 'fp-ts/lib/Either.js'
import { firstValueFrom, from, map, merge, type Observable } from 'rxjs'
import { createConsulClient } from '../../consul/client.js'
import type { ConsulHttpClient } from '../../consul/client.js'
import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { rememberLock } from '../../effects/coordinator/prefix-coordinator.js'
import { prepareChildGroup, exitStatusOf, type ChildExit, type ChildGroup } from './child-group.js'
import { createContender, type CliContender, type Lease } from './contender.js'
import type { SemaphoreState } from '../../recipes/semaphore.js'
import {
  createReporter,
  describeError,
  ExitCode,
  signalExitCode,
  type Reporter,
} from '../report.js'
import { planRun, type RunPlan } from './plan.js'
import { StopSignals } from './phases.js'
import { revokeRequested, states, slotLost, waitForSlot } from './phases.js'
import { describeTransition } from './transitions.js'
import { runUsage } from '../args/usage.js'
import { describeAddress, startHealthServer, type HealthServer } from './health-server.js'
import { WatchdogError, startWatchdog, type Watchdog, type WatchdogEnd } from './watchdog.js'

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
      // Only a network failure is "unreachable"; a 403, a TLS mismatch or a refused certificate
      // says what it is.
      const what =
        unreachable._tag === 'Unreachable' || unreachable._tag === 'Timeout'
          ? 'Consul is unreachable'
          : unreachable._tag === 'NotConsul'
            ? 'no Consul agent at the address'
            : unreachable._tag === 'TlsRejected'
              ? 'the TLS settings do not fit the agent'
              : 'Consul refused the start-up check'
      report.error(`${what}, nothing was started: ${describeError(unreachable, plan.prefix)}`)
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
  // A terminal that hung up (SIGHUP) refuses writes (EIO), and so does a closed pipe (EPIPE): the
  // messages are lost then, but rxsem must still stop its command and release its slot.
  const ignore = (): void => {}
  process.stderr.on('error', ignore)
  const signals = new StopSignals()
  // Started before contending: a watchdog that cannot run then costs no slot, no session; and
  // it is ready long before a slot is held, so it costs the hand-off no time.
  const watchdog = startWatchdog()
  try {
    type Start = { readonly why: string | undefined } | { readonly signal: NodeJS.Signals }
    const start = await firstValueFrom(
      merge(
        from(watchdog.ready).pipe(map((why): Start => ({ why }))),
        signals.received.pipe(map((signal): Start => ({ signal }))),
      ),
    )
    if ('signal' in start) {
      report.info(`${start.signal} before a slot was held; started nothing`)
      return signalExitCode(start.signal)
    }
    if (start.why !== undefined) {
      report.error(`${start.why}; started nothing`)
      return ExitCode.Error
    }
    return await contendAndRun(plan, client, report, signals, watchdog)
  } finally {
    signals.dispose()
    await watchdog.finish()
    process.stderr.off('error', ignore)
  }
}

async function contendAndRun(
  plan: RunPlan,
  client: ConsulHttpClient,
  report: Reporter,
  signals: StopSignals,
  watchdog: Watchdog,
): Promise<number> {
  // Listening before contending: an address it cannot have costs no slot, no session.
  let health: HealthServer | undefined
  if (plan.healthAddr !== undefined) {
    try {
      health = await startHealthServer(plan.healthAddr)
    } catch (error) {
      report.error(
        `--health-addr: cannot listen on ${describeAddress(plan.healthAddr)} (${(error as Error).message}); started nothing`,
      )
      return ExitCode.Error
    }
    report.info(`health endpoint on http://${health.address} (/ready: holding, /live: running)`)
  }
  try {
    return await runGuarded(plan, client, report, signals, watchdog, health)
  } finally {
    await health?.close()
  }
}

async function runGuarded(
  plan: RunPlan,
  client: ConsulHttpClient,
  report: Reporter,
  signals: StopSignals,
  watchdog: Watchdog,
  health: HealthServer | undefined,
): Promise<number> {
  const contender = createContender({ ...plan, consul: client })
  const state$ = states(contender)
  health?.follow(state$)
  // The watchdog learns every new lease deadline of the held session while the command runs.
  let lease: Lease | undefined
  let guarding = false
  let previous: Parameters<typeof describeTransition>[0]
  const leases = contender.lease$.subscribe((next) => {
    lease = next
    if (guarding && next !== undefined && previous?.holding && next.session === previous.session) {
      watchdog.extend(next.deadlineMs)
    }
  })
  // The command's process is made now, while the slot is awaited (child-group.ts): starting it
  // once the slot is held is then one write to it, not a fork of this process.
  const prepared = prepareChildGroup({
    command: plan.command,
    shell: plan.shell,
    env: { ...process.env, CONSUL_LOCK_HELD: 'true', RXSEM_PREFIX: plan.prefix },
  })
  /** The command, once started: in the emission of the first held state, right after it is told. */
  let launched: ChildGroup | undefined
  const start = (state: SemaphoreState): void => {
    const initial = lease?.session === state.session ? lease : undefined
    // Without a lease deadline the command could not be guarded: the 'held' case says so.
    if (initial === undefined) return
    launched = prepared.start(
      {
        RXSEM_SESSION: state.session ?? '',
        RXSEM_FENCING_TOKEN: state.fencingToken?.toString() ?? '',
        RXSEM_LEASE_DEADLINE_MS: String(Math.floor(initial.deadlineMs)),
      },
      (pgid) => {
        watchdog.guard(pgid, (lease ?? initial).deadlineMs)
        guarding = true
      },
    )
  }
  // Subscribed before the wait for a slot: "holding slot" is told before the command can print.
  const narrator = state$.subscribe({
    next: (state) => {
      for (const line of describeTransition(previous, state, plan.timeoutMs !== 0)) {
        report[line.level](line.message)
      }
      previous = state
    },
    // Errors are reported by the phase that sees them.
    error: () => {},
  })
  try {
    const waited = await waitForSlot(
      state$,
      signals.received,
      plan,
      watchdogTrouble(watchdog),
      start,
    )
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

    const child = launched
    if (child === undefined) {
      report.error(
        `no lease deadline is known for session ${waited.state.session ?? '(none)'}, so the command cannot be guarded; started nothing. Please report this.`,
      )
      await release(contender, report)
      return ExitCode.Error
    }
    report.detail(
      `started ${JSON.stringify(plan.command.join(' '))} as process group ${child.pid}, guarded by watchdog ${watchdog.pid}`,
    )

    type Running =
      | { readonly type: 'exited'; readonly exit: ChildExit }
      | { readonly type: 'lost'; readonly why: string }
      | { readonly type: 'revoked'; readonly why: string }
      | { readonly type: 'signal'; readonly signal: NodeJS.Signals }
      | { readonly type: 'watchdog'; readonly end: WatchdogEnd }
    const running: Observable<Running> = merge(
      from(child.exited).pipe(map((exit): Running => ({ type: 'exited', exit }))),
      slotLost(state$).pipe(map((why): Running => ({ type: 'lost', why }))),
      revokeRequested(state$).pipe(map((why): Running => ({ type: 'revoked', why }))),
      signals.received.pipe(map((signal): Running => ({ type: 'signal', signal }))),
      from(watchdog.ended).pipe(map((end): Running => ({ type: 'watchdog', end }))),
    )
    const outcome = await firstValueFrom(running)
    if (outcome.type !== 'signal') guarding = false

    // While the command is being stopped, a second signal means: stop it now.
    const impatience = signals.received.subscribe((signal) => {
      report.info(`second ${signal}: SIGKILL to the command's process group now`)
      child.signal('SIGKILL')
    })
    try {
      switch (outcome.type) {
        case 'exited': {
          // The leader ended; what it left running in its group must not outlive the slot.
          if (child.signal(0)) {
            report.detail(
              `processes of the command's group outlived it; stopping them: SIGTERM, SIGKILL after ${plan.graceMs} ms`,
            )
            await child.stop('SIGTERM', plan.graceMs)
          }
          // The group is gone, so nothing of the command runs any more: the slot goes back first
          // (the next holder waits for it), and the watchdog is let go meanwhile. Did it stop the
          // command (rxsem was frozen past the deadline)? It says so before it signals, so its
          // answer is in once it has exited.
          const released = startRelease(contender, report)
          const end = await watchdog.finish()
          if (end.fired !== undefined) {
            report.info(`lost slot (${describeFired(end)}); the watchdog stopped the command`)
            await released()
            return ExitCode.SlotLost
          }
          if (outcome.exit.type === 'failed') {
            report.error(
              `cannot start ${JSON.stringify(plan.command[0])}: ${outcome.exit.error.message}; ` +
                'check the command name and PATH, or use --shell for a shell command line.',
            )
          } else {
            report.detail(`command ended (${describeExit(outcome.exit)}); releasing the slot`)
          }
          await released()
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
          await watchdog.finish()
          report.detail(`command ended (${describeExit(exit)}) after the slot was lost`)
          return ExitCode.SlotLost
        }
        case 'revoked': {
          // Still held: the command stops first, then the slot goes back, as after a signal.
          report.info(
            `${outcome.why}; stopping the command: SIGTERM to its process group, SIGKILL after ` +
              `${plan.graceMs} ms, then giving the slot back`,
          )
          const exit = await child.stop('SIGTERM', plan.graceMs)
          guarding = false
          await watchdog.finish()
          report.detail(`command ended (${describeExit(exit)}); giving the slot back`)
          await release(contender, report)
          return ExitCode.SlotLost
        }
        case 'signal': {
          // SIGHUP only says the terminal went away; the command, which may read SIGHUP as
          // "reload", is asked to stop.
          const passed = outcome.signal === 'SIGHUP' ? 'SIGTERM' : outcome.signal
          report.info(
            `${outcome.signal} received: ${passed} to the command's process group, SIGKILL after ${plan.graceMs} ms`,
          )
          const exit = await child.stop(passed, plan.graceMs)
          guarding = false
          await watchdog.finish()
          report.detail(`command ended (${describeExit(exit)}); releasing the slot`)
          await release(contender, report)
          return signalExitCode(outcome.signal)
        }
        case 'watchdog': {
          if (outcome.end.fired !== undefined) {
            report.info(
              `lost slot (${describeFired(outcome.end)}); the watchdog stopped the command`,
            )
            const [exit] = await Promise.all([
              child.stop('SIGTERM', plan.graceMs),
              release(contender, report),
            ])
            report.detail(`command ended (${describeExit(exit)}) after the slot was lost`)
            return ExitCode.SlotLost
          }
          report.error(
            `the watchdog (pid ${watchdog.pid}) that guards the command ended unexpectedly ` +
              `(${describeWatchdogEnd(outcome.end)}); stopping the command, which would run unguarded ` +
              `should rxsem end: SIGTERM to its process group, SIGKILL after ${plan.graceMs} ms. ` +
              'Check what killed it (the kernel log for the OOM killer), then run the command again.',
          )
          const exit = await child.stop('SIGTERM', plan.graceMs)
          report.detail(`command ended (${describeExit(exit)}); releasing the slot`)
          await release(contender, report)
          return ExitCode.WatchdogLost
        }
      }
    } finally {
      impatience.unsubscribe()
    }
  } finally {
    prepared.discard()
    guarding = false
    leases.unsubscribe()
    narrator.unsubscribe()
  }
}

/**
 * The start-up check: one read of `<prefix>/.lock`. The library retries transient Consul failures
 * up to its start-up timeout (right for a service whose agent may start a little later), but a
 * command line started against a wrong address should say so at once. The read proves the address
 * (an agent, and not another server), the TLS settings and the token's read permission; and what
 * it read lets the contender join the queue in one transaction (`rememberLock`).
 *
 * @returns Nothing when Consul answered (whatever the key holds), else the error to report: any
 *   failure at start is fatal, the transient ones included.
 */
async function checkReachable(
  client: ConsulClient,
  prefix: string,
): Promise<ConsulError | undefined> {
  const answer = await client.kv.get(lockKey(prefix))()
  if (E.isLeft(answer)) return answer.left
  rememberLock(client, prefix, answer.right)
  return undefined
}

/** The watchdog ended while the slot is awaited: no command could be guarded. */
function watchdogTrouble(watchdog: Watchdog): Observable<Error> {
  return from(watchdog.ended).pipe(
    map(
      (end) =>
        new WatchdogError(
          `the watchdog (pid ${watchdog.pid}) ended while the slot was awaited (${describeWatchdogEnd(end)}); started nothing. Check what killed it, then run again.`,
        ),
    ),
  )
}

function describeFired(end: WatchdogEnd): string {
  return end.fired === 'lease-expired'
    ? 'lease-expired: its deadline passed before rxsem renewed it; was rxsem stopped?'
    : 'rxsem ended'
}

function describeWatchdogEnd(end: WatchdogEnd): string {
  if (end.error !== undefined) return end.error.message
  return end.signal !== null ? `killed by ${end.signal}` : `exit status ${end.code}`
}

/** Releases the slot (or the place in the queue); a failure is reported, not fatal. */
async function release(contender: CliContender, report: Reporter): Promise<void> {
  await startRelease(contender, report)()
}

/**
 * Starts the release at once, and returns what reports its outcome once it is in (a failure is
 * reported, not fatal): the messages that must come before that report can still be decided while
 * the release runs.
 */
function startRelease(contender: CliContender, report: Reporter): () => Promise<void> {
  const closed = contender.close().then(
    () => ({ failed: false as const }),
    (error: unknown) => ({ failed: true as const, error }),
  )
  return async () => {
    const outcome = await closed
    if (outcome.failed) report.error(describeError(outcome.error))
    else report.detail('released: contender key and session removed from Consul')
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
