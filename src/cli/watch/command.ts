/**
 * `rxsem watch`: a live view of a prefix from one blocking query (`watchPrefix`), redrawn on every
 * change, and once a second on a terminal so that the clock and the "for" column move. The watch
 * is the first request sent and its first answer is drawn at once; the ACL probe and the session
 * names come after it.
 */
import * as E from 'fp-ts/lib/Either.js'
import { Subscription } from 'rxjs'
import { createConsulClient } from '../../consul/client.js'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import { problemError } from '../../base/semaphore-error.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { cliWording, describeError, ExitCode } from '../report.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { prefixStatus } from '../status/prefix-status.js'
import { learnSessionNames, sessionsOf, withNames } from '../status/session-names.js'
import { filteredWarning, unreadableKeys } from '../status/listing-access.js'
import { openScreen } from './terminal.js'
import { watchUsage } from '../args/usage.js'
import { renderFrame, type Connection, type HeldSince, type WatchView } from './frame.js'
import { NO_HAND_OVERS, noteHandOvers, resumeHandOvers } from '../../core/semaphore/hand-overs.js'

/**
 * Runs `rxsem watch` with the arguments after `watch`, until q, Ctrl-C, SIGINT or SIGTERM.
 *
 * @returns 0 when the user quit, 1 after a permanent Consul error (reported on stderr).
 */
export async function watchCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, 'watch')
  if (args.help) {
    process.stdout.write(watchUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args
  const client = createConsulClient(consulConfigFrom(values))
  const address = client.config.socketPath ?? client.config.origin

  let view: WatchView = {
    prefix,
    address,
    connection: { type: 'connecting' },
    status: undefined,
    problem: undefined,
    firstSeen: new Map(),
    startedAt: Date.now(),
  }
  // Whether the last event was a snapshot: a holder new in the next one was seen taking its slot.
  let continuous = false
  const names = new Map<string, string | null>()

  return new Promise<number>((resolve) => {
    let finished = false
    // Owns the watch: unsubscribing it first makes a later add() unsubscribe at once.
    const subscription = new Subscription()
    const finish = (code: number, error?: unknown): void => {
      if (finished) return
      finished = true
      subscription.unsubscribe()
      clearInterval(ticker)
      process.off('SIGINT', quit)
      process.off('SIGTERM', quit)
      screen.restore()
      if (error !== undefined) process.stderr.write(`rxsem: ${describeError(error, prefix)}\n`)
      void client.close().finally(() => resolve(code))
    }
    const quit = (): void => finish(ExitCode.Ok)
    const draw = (): void =>
      screen.draw(renderFrame(view, Date.now(), screen.width, screen.keyHint))
    const screen = openScreen(quit, draw)
    // A pipe gets one frame per change of state, in order: a frame waits for what it shows to be
    // complete (the names of its sessions; the first also for the ACL probe), and a state already
    // printed is not printed again, so that no index is printed twice.
    let piped: Promise<void> = Promise.resolve()
    let printed: string | undefined
    const show = (complete: Promise<unknown> = Promise.resolve()): void => {
      if (screen.interactive) return draw()
      const shown = view
      piped = piped
        .then(() => complete)
        // A lookup that failed leaves its names out; the frame is printed all the same.
        .catch(() => undefined)
        .then(() => {
          if (finished) return
          const frame: WatchView = {
            ...shown,
            status: shown.status === undefined ? undefined : withNames(shown.status, names),
            warning: view.warning,
          }
          const state = stateKey(frame)
          if (state === printed) return
          printed = state
          screen.draw(renderFrame(frame, Date.now(), screen.width, screen.keyHint))
        })
    }
    let probe: Promise<void> = Promise.resolve()
    process.on('SIGINT', quit)
    process.on('SIGTERM', quit)
    // Only a terminal needs the clock to move; a plain stream gets one frame per change.
    const ticker = setInterval(() => screen.interactive && draw(), 1000)

    const onSnapshot = (snapshot: KVSnapshot): void => {
      const read = prefixStatus(snapshot, prefix, limit)
      const connection: Connection = { type: 'connected', index: snapshot.index }
      if (E.isLeft(read)) {
        view = {
          ...view,
          connection,
          status: undefined,
          problem: describeError(problemError(read.left), prefix),
        }
        show(probe)
        return
      }
      const now = Date.now()
      const firstSeen = new Map<string, HeldSince>()
      for (const holder of read.right.holders) {
        if (!holder.alive) continue
        const seen = view.firstSeen.get(holder.session)
        firstSeen.set(holder.session, seen ?? { at: now, seenTaken: continuous })
      }
      // After a disconnection, the holders that appear may have taken their slots at any time.
      const logged = view.handOvers ?? NO_HAND_OVERS
      const handOvers = noteHandOvers(
        continuous ? logged : resumeHandOvers(logged),
        [...firstSeen.keys()],
        now,
      )
      continuous = true
      view = {
        ...view,
        connection,
        problem: undefined,
        status: withNames(read.right, names),
        firstSeen,
        handOvers,
      }
      const unnamed = sessionsOf(read.right).filter((session) => !names.has(session))
      const named =
        unnamed.length === 0
          ? Promise.resolve()
          : learnSessionNames(client, unnamed, names).then(() => {
              if (finished || view.status === undefined || !screen.interactive) return
              view = { ...view, status: withNames(view.status, names) }
              draw()
            })
      show(Promise.all([named, probe]))
    }

    let probed = false
    const onEvent = (event: WatchEvent): void => {
      if (event.type === 'snapshot') {
        if (!probed) {
          probed = true
          probe = probeAccess()
        }
        onSnapshot(event.snapshot)
        return
      }
      continuous = false
      view = {
        ...view,
        connection: {
          type: 'disconnected',
          attempt: event.attempt,
          retryInMs: event.retryInMs,
          message: cliWording(event.error.message),
        },
      }
      show()
    }

    // After the first answer, so that the watch's own read is the first request out.
    const probeAccess = (): Promise<void> =>
      unreadableKeys(client, prefix).then((denied) => {
        if (finished || denied.length === 0) return
        view = { ...view, warning: filteredWarning(prefix, denied) }
        show()
      })
    subscription.add(
      client.watchPrefix(`${prefix}/`).subscribe({
        next: onEvent,
        error: (error: unknown) => finish(ExitCode.Error, error),
      }),
    )
    // A terminal shows that it is waiting; a pipe gets its first frame from the first answer.
    if (screen.interactive && view.connection.type === 'connecting') draw()
  })
}

/**
 * What a frame shows, without the clock: two frames with the same key show the same state, and
 * a pipe gets only the first of them.
 */
function stateKey(view: WatchView): string {
  const { connection, status, problem, warning } = view
  return JSON.stringify({ connection, status, problem, warning }, (_, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  )
}
