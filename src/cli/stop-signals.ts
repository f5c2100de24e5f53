/**
 * SIGINT, SIGTERM and SIGHUP as a stream, for as long as `rxsem run` lives. The handlers are
 * installed once, up front: a signal between two phases must never fall back to Node's default (die
 * at once, leaving the command to the watchdog and the slot to the TTL). SIGHUP comes when the
 * terminal or ssh connection of `rxsem run` goes away.
 */
import { Subject, type Observable } from 'rxjs'

export class StopSignals {
  private readonly subject = new Subject<NodeJS.Signals>()
  private readonly handler = (signal: NodeJS.Signals): void => this.subject.next(signal)

  constructor(private readonly names: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    for (const name of names) process.on(name, this.handler)
  }

  /** Each signal as it arrives (hot: only signals after subscribing). */
  get received(): Observable<NodeJS.Signals> {
    return this.subject.asObservable()
  }

  /** Removes the handlers. */
  dispose(): void {
    for (const name of this.names) process.off(name, this.handler)
    this.subject.complete()
  }
}
