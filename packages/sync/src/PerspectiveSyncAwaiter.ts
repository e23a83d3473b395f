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
 * Events the process does not track are put to the {@link SyncInquiryPort} (the database, once the Postgres
 * layer provides it) and polled until it reports them processed: untracked is not "done" unless it agrees.
 *
 * **Gotchas**
 * - Refused with {@link InlineStageSyncError} inside an inline lifecycle stage (it would deadlock).
 * - Cancel by interrupting the fiber; the tracker registration is removed.
 *
 * @since 0.1.0
 */
import { EventId } from "@whizbang/core"
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import * as DebuggerAwareTimeout from "./DebuggerAwareTimeout.js"
import { InlineLifecycleStage } from "./InlineLifecycleStage.js"
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
  /** How often events known only to the {@link SyncInquiryPort} are re-checked. Default 100 ms. */
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
  const pollInterval = options?.pollInterval ?? Duration.millis(100)

  /** Splits the ids into those this process tracks as pending and those only the port knows are pending. */
  const pendingOf = (perspectiveName: string, ids: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const local: Array<string> = []
      const unknown: Array<string> = []
      for (const id of new Set(ids)) ((yield* tracker.isPending(id, perspectiveName)) ? local : unknown).push(id)
      const remote = unknown.length === 0 ? [] : (yield* port.pendingEventIds(perspectiveName, unknown)).pendingEventIds
      return { local, remote }
    })

  const pollRemote = (perspectiveName: string, ids: ReadonlyArray<string>): Effect.Effect<boolean> =>
    ids.length === 0
      ? Effect.succeed(true)
      : Effect.flatMap(port.pendingEventIds(perspectiveName, ids), ({ pendingEventIds }) =>
        pendingEventIds.length === 0
          ? Effect.succeed(true)
          : Effect.andThen(Effect.sleep(pollInterval), Effect.suspend(() => pollRemote(perspectiveName, pendingEventIds))))

  const awaitIds = (perspectiveName: string, ids: ReadonlyArray<string>, timeout: Duration.Input, debuggerAware: boolean) =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const elapsed = Effect.map(Clock.currentTimeMillis, (now) => Duration.millis(now - start))
      const { local, remote } = yield* pendingOf(perspectiveName, ids)
      const eventsAwaited = local.length + remote.length
      if (eventsAwaited === 0) return SyncResult.NoPendingEvents({ elapsed: yield* elapsed, eventsAwaited })
      const body = tracker.waitForPerspectiveEvents(local, perspectiveName, {
        timeout: Duration.infinity,
        awaiterId: EventId.unsafeMake()
      }).pipe(Effect.flatMap((ok) => ok ? pollRemote(perspectiveName, remote) : Effect.succeed(false)))
      const done = yield* DebuggerAwareTimeout.timeoutOption(body, timeout, { debuggerAware })
      const fields = { elapsed: yield* elapsed, eventsAwaited }
      return Option.getOrElse(done, () => false) ? SyncResult.Synced(fields) : SyncResult.TimedOut(fields)
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
        const ids = options?.eventId !== undefined
          ? [options.eventId]
          : (yield* tracker.getPendingEvents(streamId, perspectiveName, options?.eventTypes)).map((e) => e.eventId)
        return yield* awaitIds(
          perspectiveName,
          ids,
          options?.timeout ?? SyncFilter.defaultTimeout,
          options?.debuggerAwareTimeout ?? true
        )
      }),
    isCaughtUp: (perspectiveName, options) =>
      Effect.gen(function*() {
        const sync = yield* toOptions(options)
        const { local, remote } = yield* pendingOf(perspectiveName, yield* matchingIds(perspectiveName, sync.filter))
        return local.length + remote.length === 0
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
