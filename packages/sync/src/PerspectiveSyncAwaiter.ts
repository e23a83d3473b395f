/**
 * Waits until one perspective has processed the events a caller cares about, so the caller can read its own
 * writes from that perspective.
 *
 * - {@link PerspectiveSyncAwaiterShape.waitAsync}: the events chosen by a `SyncFilter` — from the current
 *   scope (`ScopedEventTracker`) and the perspective's pending events in the process-wide `SyncEventTracker`.
 * - {@link PerspectiveSyncAwaiterShape.waitForStreamAsync}: cross-scope — one explicit event id (the incoming
 *   event of a receptor) or the stream's pending events of some types.
 * - {@link PerspectiveSyncAwaiterShape.isCaughtUp}: the same question without waiting.
 *
 * Events the process does not track are put to the {@link SyncInquiryPort} (the database, with
 * `PgSyncInquiry.layer`) and re-checked on each of its change signals (NOTIFY from the completion transaction)
 * and on a slow safety-net poll, until it reports them processed: untracked is not "done" unless it agrees.
 * With the database port, events tracked here are re-checked there too, so an event processed on another
 * instance, or dead-lettered (named in the result's `deadLettered`), ends the wait.
 *
 * **Gotchas**
 * - Refused with {@link InlineStageSyncError} inside an inline lifecycle stage (it would deadlock).
 * - Cancel by interrupting the fiber; the tracker registration is removed.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import * as DebuggerAwareTimeout from "./DebuggerAwareTimeout.js"
import { InlineLifecycleStage } from "./InlineLifecycleStage.js"
import * as Settle from "./internal/settle.js"
import * as ScopedEventTracker from "./ScopedEventTracker.js"
import { InlineStageSyncError, type SyncFilterError } from "./SyncError.js"
import { SyncEventTracker } from "./SyncEventTracker.js"
import * as SyncFilter from "./SyncFilter.js"
import { SyncInquiryPort } from "./SyncInquiryPort.js"
import * as SyncResult from "./SyncResult.js"

/**
 * Options of {@link PerspectiveSyncAwaiterShape.waitForStreamAsync}.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamWaitOptions {
  /** Wait for the stream's pending events of these types only (none: every type). */
  readonly eventTypes?: ReadonlyArray<string> | undefined
  /** Wait for exactly this event (the incoming event of a receptor). */
  readonly eventId?: string | undefined
  /** With `eventId`: also wait for the stream's other pending events (of `eventTypes`, or every type). */
  readonly andStreamPending?: boolean | undefined
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
  /** Default true. */
  readonly debuggerAwareTimeout?: boolean | undefined
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveSyncAwaiterShape {
  readonly waitAsync: (
    perspectiveName: string,
    options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder
  ) => Effect.Effect<SyncResult.SyncResult, SyncFilterError | InlineStageSyncError>
  readonly waitForStreamAsync: (
    perspectiveName: string,
    streamId: string,
    options?: StreamWaitOptions
  ) => Effect.Effect<SyncResult.SyncResult, InlineStageSyncError>
  /** Explicit event ids (e.g. returned by an append). */
  readonly waitForEvents: (
    perspectiveName: string,
    eventIds: ReadonlyArray<string>,
    options?: { readonly timeout?: Duration.Input | undefined; readonly debuggerAwareTimeout?: boolean | undefined }
  ) => Effect.Effect<SyncResult.SyncResult, InlineStageSyncError>
  /** True when nothing matching the filter is pending for the perspective. */
  readonly isCaughtUp: (
    perspectiveName: string,
    options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder
  ) => Effect.Effect<boolean, SyncFilterError>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveSyncAwaiter extends Context.Service<PerspectiveSyncAwaiter, PerspectiveSyncAwaiterShape>()(
  "@whizbang/sync/PerspectiveSyncAwaiter"
) {}

/**
 * Layer options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /**
   * How often the {@link SyncInquiryPort} is re-asked about events still awaited. Default 100 ms; 1 s (a safety
   * net) when the port signals changes (NOTIFY), which wake the awaiter at once.
   */
  readonly pollInterval?: Duration.Input | undefined
}

const toOptions = (options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder) =>
  SyncFilter.isBuilder(options) ? options.build() : Effect.succeed(options)

const refuseInline = (perspectiveName: string) =>
  Effect.flatMap(InlineLifecycleStage, (inline) => inline ? Effect.fail(new InlineStageSyncError({ perspectiveName })) : Effect.void)

/**
 * Makes the awaiter from the tracker and the inquiry port in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(options?: Options) {
  const tracker = yield* SyncEventTracker
  const port = yield* SyncInquiryPort
  const pollInterval = options?.pollInterval ?? (port.changes === undefined ? Duration.millis(100) : Duration.seconds(1))

  const awaitIds = (perspectiveName: string, ids: ReadonlyArray<string>, timeout: Duration.Input, debuggerAware: boolean) =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const elapsed = Effect.map(Clock.currentTimeMillis, (now) => Duration.millis(now - start))
      const state = Settle.makeState(ids)
      const local = yield* Settle.check(tracker, port, perspectiveName, state, false)
      const eventsAwaited = state.remaining.size + state.deadLettered.size
      const fields = () => Effect.map(elapsed, (e) => ({ elapsed: e, eventsAwaited, deadLettered: [...state.deadLettered] }))
      if (state.remaining.size === 0) return SyncResult.NoPendingEvents(yield* fields())
      const body = Settle.settle(tracker, port, perspectiveName, state, local, pollInterval)
      const done = yield* DebuggerAwareTimeout.timeoutOption(body, timeout, { debuggerAware })
      return Option.getOrElse(done, () => false) ? SyncResult.Synced(yield* fields()) : SyncResult.TimedOut(yield* fields())
    })

  const matchingIds = (perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
    Effect.gen(function*() {
      const scoped = yield* ScopedEventTracker.getEmittedEvents()
      const inScope = new Set(scoped.map((e) => e.eventId))
      const pending = yield* tracker.getPendingForPerspective(perspectiveName)
      return [...scoped, ...pending]
        .filter((e) => SyncFilter.matches(filter, { ...e, inCurrentScope: inScope.has(e.eventId) }))
        .map((e) => e.eventId)
    })

  const streamPending = (perspectiveName: string, streamId: string, eventTypes: ReadonlyArray<string> | undefined) =>
    Effect.gen(function*() {
      const tracked = (yield* tracker.getPendingEvents(streamId, perspectiveName, eventTypes)).map((e) => e.eventId)
      const stored = port.pendingForStream === undefined ? [] : yield* port.pendingForStream(perspectiveName, streamId, eventTypes)
      return [...tracked, ...stored]
    })

  const idsForStream = (perspectiveName: string, streamId: string, options: StreamWaitOptions | undefined) =>
    options?.eventId !== undefined && options.andStreamPending !== true
      ? Effect.succeed([options.eventId])
      : Effect.map(
        streamPending(perspectiveName, streamId, options?.eventTypes),
        (found) => [...new Set([...(options?.eventId === undefined ? [] : [options.eventId]), ...found])]
      )

  return PerspectiveSyncAwaiter.of({
    waitAsync: (perspectiveName, options) =>
      Effect.gen(function*() {
        yield* refuseInline(perspectiveName)
        const sync = yield* toOptions(options)
        const ids = yield* matchingIds(perspectiveName, sync.filter)
        return yield* awaitIds(perspectiveName, ids, sync.timeout, sync.debuggerAwareTimeout)
      }),
    waitForStreamAsync: (perspectiveName, streamId, options) =>
      Effect.gen(function*() {
        yield* refuseInline(perspectiveName)
        return yield* awaitIds(
          perspectiveName,
          yield* idsForStream(perspectiveName, streamId, options),
          options?.timeout ?? SyncFilter.defaultTimeout,
          options?.debuggerAwareTimeout ?? true
        )
      }),
    waitForEvents: (perspectiveName, eventIds, options) =>
      Effect.gen(function*() {
        yield* refuseInline(perspectiveName)
        return yield* awaitIds(perspectiveName, eventIds, options?.timeout ?? SyncFilter.defaultTimeout, options?.debuggerAwareTimeout ?? true)
      }),
    isCaughtUp: (perspectiveName, options) =>
      Effect.gen(function*() {
        const sync = yield* toOptions(options)
        const state = Settle.makeState(yield* matchingIds(perspectiveName, sync.filter))
        yield* Settle.check(tracker, port, perspectiveName, state, false)
        return state.remaining.size === 0
      })
  })
})

/**
 * The awaiter (default poll interval); needs a `SyncEventTracker`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<PerspectiveSyncAwaiter, never, SyncEventTracker> = Layer.effect(PerspectiveSyncAwaiter, make())

/**
 * The awaiter with explicit options.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = (options: Options): Layer.Layer<PerspectiveSyncAwaiter, never, SyncEventTracker> =>
  Layer.effect(PerspectiveSyncAwaiter, make(options))
