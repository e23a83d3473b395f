/**
 * OpenTelemetry for Whizbang: the names of its spans and metrics, and an OTLP exporter layer (off unless you
 * provide it). Everything is recorded with Effect's own tracing (`Effect.withSpan`) and metrics (`Metric`), so
 * any Effect tracer sees the spans; `layerOtlp` ships them, the metrics and the logs over OTLP/HTTP (JSON) with
 * `effect/observability`, which needs no OpenTelemetry SDK.
 *
 * ```ts
 * // On: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318) and provide layerConfig.
 * const main = program.pipe(Effect.provide(Telemetry.layerConfig({ serviceName: "orders" })))
 * ```
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { Otlp } from "effect/observability"

/**
 * Span names. `claim`, `fetch`, `apply` and `flush` are recorded by the worker cycle and the Postgres work
 * coordinator; `rewind` by rewinds and rebuilds. `apply` (one per stream and perspective of a cycle) is built only
 * when a tracer other than Effect's native one is installed (`layerOtlp`, or any `Tracer` layer): with the native
 * tracer nothing could observe it. A cycle right after its streams' claim takes the events that claim
 * fetched in the same statement: its `fetch` span then sends nothing (attribute `whizbang.prefetched`: the streams
 * whose events came with the claim).
 *
 * @category constants
 * @since 0.1.0
 */
export const spans = {
  claim: "whizbang.claim",
  fetch: "whizbang.fetch",
  apply: "whizbang.apply",
  flush: "whizbang.flush",
  rewind: "whizbang.rewind"
} as const

/**
 * Metric names (counters unless noted).
 *
 * @category constants
 * @since 0.1.0
 */
export const metrics = {
  eventsApplied: "whizbang_events_applied",
  /** Histogram: pending events fetched per cycle. */
  batchSize: "whizbang_batch_size",
  /** Histogram: appends one append statement answered, refusals included (more than 1: appends that waited for a slot, together). */
  appendsPerStatement: "whizbang_appends_per_statement",
  dedupHits: "whizbang_dedup_hits",
  failures: "whizbang_apply_failures",
  deadLetters: "whizbang_dead_letters",
  /** Gauge per perspective, set by `PgStatus` / `PgHealth` / `PgWatchdog`. */
  lagEvents: "whizbang_lag_events",
  /** Gauge per perspective. */
  lagSeconds: "whizbang_lag_seconds",
  /** Gauge: pairs waiting on a held stream lock. */
  lockWaits: "whizbang_lock_waits",
  /** Gauge: pairs pending without progress. */
  stuck: "whizbang_stuck_streams"
} as const

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The collector's OTLP/HTTP base URL, e.g. `http://localhost:4318` (`/v1/traces` etc. are appended). */
  readonly url: string
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  readonly headers?: Record<string, string> | undefined
}

/**
 * Exports traces, metrics and logs over OTLP/HTTP with JSON bodies.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOtlp = (options: Options): Layer.Layer<never> =>
  Otlp.layerJson({
    baseUrl: options.url,
    resource: { serviceName: options.serviceName, serviceVersion: options.serviceVersion },
    ...(options.headers ? { headers: options.headers } : {})
  }).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * `layerOtlp` when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, nothing otherwise (telemetry is off by default).
 * `OTEL_SERVICE_NAME` overrides `serviceName`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (options: { readonly serviceName: string }): Layer.Layer<never, Config.ConfigError> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const url = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
      const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault(options.serviceName))
      return Option.match(url, { onNone: () => Layer.empty, onSome: (url) => layerOtlp({ url, serviceName }) })
    })
  )
