/**
 * What one contender reports: its metrics and its two kinds of span, derived from what the member
 * already knows (each state the core gives it, the input that led there, how its release went).
 * Every report is guarded: a failing SDK or exporter never reaches the contender.
 *
 * ```
 * state:  idle ─► joining ─► waiting ─► acquiring ─► holding ──────────────► retired
 * wait:   [───────────── rxsem.wait, wait.duration ─────────]
 * tenure:                                           [─ rxsem.tenure, hold.duration ─]
 * ```
 */
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api'
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../consul/client-api.js'
import type { ContenderInput } from '../core/contender/contender-input.js'
import type { ContenderPhase, ContenderState } from '../core/contender/contender-state-model.js'
import {
  metricInstruments,
  libraryTracer,
  type MetricInstruments,
  type PhaseCounts,
} from './instruments.js'
import { ATTRIBUTES, SPANS } from './metric-names.js'
import { otelApi, otelGlobalsRegistered, type OtelApiModule } from './otel-api.cjs'
import type { TelemetryOptions } from './telemetry-options.js'

/** Why a contender stopped: closed by its user, refused (try-once), or the kind of its failure. */
export type ContenderEnd = 'closed' | 'refused' | { readonly failed: string }

/** The reports of one contender, called by its member. */
export interface ContenderTelemetry {
  /** After each step of the core: the state it led to, the input that led there, the clock (ms). */
  readonly stepped: (state: ContenderState, input: ContenderInput, now: number) => void
  /** A release finished (its outcome: a semaphore's says whether the slot was handed off). */
  readonly released: (result: E.Either<unknown, unknown>) => void
  /** The contender is done: nothing more will be reported. */
  readonly ended: (why: ContenderEnd, now: number) => void
}

/** Reports nothing: `telemetry: false`, or no `@opentelemetry/api` installed. */
export const NO_TELEMETRY: ContenderTelemetry = {
  stepped: () => undefined,
  released: () => undefined,
  ended: () => undefined,
}

/** What a contender is, for its attributes and its Consul client. */
export interface ContenderFacts {
  readonly prefix: string
  readonly limit: number
  readonly protocol: 'semaphore' | 'lock'
  readonly client: ConsulClient
  /** The contender's clock now (ms): its wait starts here. */
  readonly now: number
}

/**
 * The telemetry of a new contender: nothing when `option` is false, when it would report only to
 * the global providers and nothing has registered one (they are the API's no-ops then), or when
 * the API is not installed; else reports to the given providers or the global ones. The API is
 * loaded only in the last case: loading it to measure nothing took a process tens of
 * milliseconds of CPU at its first contender.
 *
 * @param option - The contender's `telemetry` option.
 * @param facts - Its prefix, limit, protocol, client and clock.
 * @returns Its reports.
 */
export function contenderTelemetry(
  option: false | TelemetryOptions | undefined,
  facts: ContenderFacts,
): ContenderTelemetry {
  if (option === false) return NO_TELEMETRY
  const ownProvider = option?.meterProvider !== undefined || option?.tracerProvider !== undefined
  if (!ownProvider && !otelGlobalsRegistered()) return NO_TELEMETRY
  const api = otelApi()
  if (api === undefined) return NO_TELEMETRY
  try {
    return new ContenderReports(api, option ?? {}, facts)
  } catch {
    return NO_TELEMETRY
  }
}

/** The phases in which a contender not holding is waiting for a slot. */
const CONTENDING: ReadonlySet<ContenderPhase> = new Set(['joining', 'waiting', 'acquiring'])

class ContenderReports implements ContenderTelemetry {
  private readonly metrics: MetricInstruments
  private readonly phases: PhaseCounts
  private readonly attributes: Attributes
  private readonly parent: Context
  private readonly tracer: Tracer
  private phase: ContenderPhase | undefined = 'idle'
  private holding = false
  private waitSince: number | undefined
  private waitSpan: Span | undefined
  private holdSince: number | undefined
  private tenureSpan: Span | undefined

  constructor(
    private readonly api: OtelApiModule,
    option: TelemetryOptions,
    facts: ContenderFacts,
  ) {
    this.metrics = metricInstruments(api, option.meterProvider)
    this.attributes = {
      [ATTRIBUTES.prefix]: facts.prefix,
      [ATTRIBUTES.limit]: facts.limit,
      [ATTRIBUTES.protocol]: facts.protocol,
    }
    this.phases = this.metrics.phaseCounts(
      `${facts.protocol} ${facts.limit} ${facts.prefix}`,
      this.attributes,
    )
    this.tracer = libraryTracer(api, option.tracerProvider)
    // The spans belong to whatever the user was doing when the contender started (a request
    // handler's span, say), not to whichever callback later delivers a Consul answer.
    this.parent = api.context.active()
    this.openWait(facts.now)
    this.metrics.countRequestsOf(facts.client)
    // Last: a constructor that threw above leaves no contender counted for ever.
    this.phases.move(undefined, 'idle')
  }

  stepped(state: ContenderState, input: ContenderInput, now: number): void {
    try {
      if (state.phase !== this.phase) {
        this.phases.move(this.phase, state.phase)
        this.phase = state.phase
      }
      if (input.type === 'cas-result' && !input.ok)
        this.metrics.casConflicts.add(1, this.attributes)
      if (state.holding !== this.holding) {
        this.holding = state.holding
        if (state.holding) this.rose(state, now)
        else this.fell(state.reason ?? 'released', now)
      }
      if (
        this.waitSince === undefined &&
        !state.holding &&
        !state.heldInTenure &&
        CONTENDING.has(state.phase)
      ) {
        this.openWait(now)
      }
    } catch {
      // Telemetry never breaks the contender.
    }
  }

  released(result: E.Either<unknown, unknown>): void {
    try {
      const outcome = E.isRight(result)
        ? (result.right as { type?: unknown } | undefined)
        : undefined
      if (outcome?.type === 'HandedOff') this.metrics.handovers.add(1, this.attributes)
    } catch {
      // Telemetry never breaks the contender.
    }
  }

  ended(why: ContenderEnd, now: number): void {
    try {
      const reason = typeof why === 'string' ? why : why.failed
      if (this.holding) {
        this.holding = false
        this.closeTenure(reason === 'closed' ? 'released' : reason, now, reason !== 'closed')
      }
      if (this.waitSpan !== undefined) {
        const outcome = typeof why === 'string' ? why : 'failed'
        this.waitSpan.setAttribute(ATTRIBUTES.outcome, outcome)
        this.waitSpan.setStatus({
          code: this.api.SpanStatusCode.ERROR,
          message:
            why === 'closed'
              ? 'closed before a slot was held'
              : why === 'refused'
                ? 'no slot was free (try-once)'
                : `failed: ${reason}`,
        })
        this.waitSpan.end()
      }
      this.waitSpan = undefined
      this.waitSince = undefined
      this.phases.move(this.phase, undefined)
      this.phase = undefined
    } catch {
      // Telemetry never breaks the contender.
    }
  }

  private openWait(now: number): void {
    this.waitSince = now
    this.waitSpan = this.tracer.startSpan(SPANS.wait, { attributes: this.attributes }, this.parent)
  }

  private rose(state: ContenderState, now: number): void {
    if (this.waitSince !== undefined) {
      this.metrics.waitDuration.record(Math.max(0, now - this.waitSince) / 1000, this.attributes)
      this.waitSpan?.setAttribute(ATTRIBUTES.outcome, 'acquired')
      this.waitSpan?.end()
      this.waitSince = undefined
      this.waitSpan = undefined
    }
    if (state.reason === 'acquired') this.metrics.acquisitions.add(1, this.attributes)
    this.holdSince = now
    this.tenureSpan = this.tracer.startSpan(
      SPANS.tenure,
      { attributes: { ...this.attributes, [ATTRIBUTES.rise]: state.reason ?? 'acquired' } },
      this.parent,
    )
  }

  private fell(reason: string, now: number): void {
    if (reason !== 'released') {
      this.metrics.losses.add(1, { ...this.attributes, [ATTRIBUTES.reason]: reason })
    }
    this.closeTenure(reason, now, reason !== 'released')
  }

  private closeTenure(reason: string, now: number, failed: boolean): void {
    if (this.holdSince !== undefined) {
      this.metrics.holdDuration.record(Math.max(0, now - this.holdSince) / 1000, this.attributes)
    }
    this.holdSince = undefined
    if (this.tenureSpan !== undefined) {
      this.tenureSpan.setAttribute(ATTRIBUTES.reason, reason)
      if (failed)
        this.tenureSpan.setStatus({ code: this.api.SpanStatusCode.ERROR, message: reason })
      this.tenureSpan.end()
    }
    this.tenureSpan = undefined
  }
}
