/**
 * `rxsem watch`: a live view of a prefix from one blocking query (`watchPrefix`), redrawn on every
 * change, and once a second on a terminal so that the clock and the "for" column move.
 */
import * as E from 'fp-ts/lib/Either.js'
import { Subscription } from 'rxjs'
import { createConsulClient } from '../../consul/client.js'
import type { KVSnapshot, WatchEvent } from '../../consul/types.js'
import { problemError } from '../../errors.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { describeError, ExitCode } from '../report.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { prefixStatus } from '../status/prefix-status.js'
import { learnSessionNames, sessionsOf, withNames } from '../status/session-names.js'
import { filteredWarning, unreadableKeys } from '../status/listing-access.js'
import { openScreen } from './terminal.js'
import { watchUsage } from '../args/usage.js'
import { renderFrame, type Connection, type WatchView } from './frame.js'

/**
 * Runs `rxsem watch` with the arguments after `watch`, until q, Ctrl-C, SIGINT or SIGTERM.
 *
 * @returns 0 when the user quit, 1 after a permanent Consul error (reported on stderr).
 */
export async function watchCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, {}, 'watch')
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
  }
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
      if (error !== undefined) process.stderr.write(`rxsem: ${describeError(error)}\n`)
      void client.close().finally(() => resolve(code))
    }
    const quit = (): void => finish(ExitCode.Ok)
    const draw = (): void => screen.draw(renderFrame(view, Date.now(), screen.width))
    const screen = openScreen(quit, draw)
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
          problem: describeError(problemError(read.left)),
        }
        draw()
        return
      }
      const now = Date.now()
      const firstSeen = new Map<string, number>()
      for (const holder of read.right.holders) {
        if (holder.alive) firstSeen.set(holder.session, view.firstSeen.get(holder.session) ?? now)
      }
      view = {
        ...view,
        connection,
        problem: undefined,
        status: withNames(read.right, names),
        firstSeen,
      }
      draw()
      const unnamed = sessionsOf(read.right).filter((session) => !names.has(session))
      if (unnamed.length > 0) {
        void learnSessionNames(client, unnamed, names).then(() => {
          if (finished || view.status === undefined) return
          view = { ...view, status: withNames(view.status, names) }
          draw()
        })
      }
    }

    const onEvent = (event: WatchEvent): void => {
      if (event.type === 'snapshot') return onSnapshot(event.snapshot)
      view = {
        ...view,
        connection: {
          type: 'disconnected',
          attempt: event.attempt,
          retryInMs: event.retryInMs,
          message: event.error.message,
        },
      }
      draw()
    }

    draw()
    void unreadableKeys(client, prefix).then((denied) => {
      if (finished || denied.length === 0) return
      view = { ...view, warning: filteredWarning(prefix, denied) }
      draw()
    })
    subscription.add(
      client.watchPrefix(`${prefix}/`).subscribe({
        next: onEvent,
        error: (error: unknown) => finish(ExitCode.Error, error),
      }),
    )
  })
}
