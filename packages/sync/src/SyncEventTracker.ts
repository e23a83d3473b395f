/**
 * The process-wide sync tracker: which emitted events each perspective has still to apply, and the fibers
 * waiting for them.
 *
 * Emitting code tracks one entry per `(eventId, perspectiveName)`; the perspective worker, after its commit,
 * calls {@link SyncEventTrackerShape.markProcessedByPerspective} (or `markPerspectiveStreamProcessed`), which
 * wakes the waiters. Waits return `true` when everything they wait for is processed (or was never tracked),
 * `false` at the timeout, when their awaiter is unregistered, or when a stale entry they needed was dropped.
 *
 * **When to use**: through `PerspectiveSyncAwaiter` (one perspective) and `EventCompletionAwaiter` (all
 * perspectives); directly in workers and tests.
 *
 * **Gotchas**
 * - This is the in-process fast path: "untracked" here only means this process does not know the event. The
 *   awaiters consult the `SyncInquiryPort` (the database) before treating such events as done.
 * - The check and the waiter registration happen in one synchronous step, so a mark that lands between them
 *   cannot be lost; interrupting a waiting fiber removes its registration.
 * - Events applied by a worker in another process are marked too when `PgSyncInquiry` runs with this tracker in
 *   context (its `NOTIFY` listener marks what each completion names), so a write-side process does not hold its
 *   appends until they go stale. A layer fiber drops entries older than `staleAfter` every `cleanupInterval`, so
 *   a lost mark (a crashed worker, a dead-lettered event) cannot leak memory or hold a waiter forever; the
 *   cleanup walks the oldest events only, up to the first one tracked after its cutoff.
 *
 * @since 0.1.0
 */
import { EventId } from "@whizbang/core"
import { Clock, Context, Deferred, Duration, Effect, Layer, Option } from "effect"
import * as DebuggerAwareTimeout from "./DebuggerAwareTimeout.js"
import { type Entry, TrackerState } from "./internal/trackerState.js"

/**
 * A tracked `(eventId, perspectiveName)` entry.
 *
 * @category models
 * @since 0.1.0
 */
export type TrackedSyncEvent = Entry

/**
 * Options of a wait. `timeout` defaults to 5 s and is a plain timeout unless `debuggerAwareTimeout` is true.
 * Give an `awaiterId` to cancel the wait later with `unregisterAwaiter`.
 *
 * @category models
 * @since 0.1.0
 */
export interface WaitOptions {
  readonly timeout?: Duration.Input | undefined
  readonly awaiterId?: string | undefined
  readonly debuggerAwareTimeout?: boolean | undefined
}

/**
 * The tracker's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncEventTrackerShape {
  readonly trackEvent: (event: Omit<TrackedSyncEvent, "trackedAt">) => Effect.Effect<void>
  /** Pending entries of a (stream, perspective); no or empty `eventTypes` means every type. */
  readonly getPendingEvents: (
    streamId: string,
    perspectiveName: string,
    eventTypes?: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<TrackedSyncEvent>>
  readonly getPendingForPerspective: (perspectiveName: string) => Effect.Effect<ReadonlyArray<TrackedSyncEvent>>
  readonly getAllTrackedEventIds: Effect.Effect<ReadonlyArray<string>>
  /** True while `(eventId, perspectiveName)` is tracked (any perspective when the name is omitted). */
  readonly isPending: (eventId: string, perspectiveName?: string) => Effect.Effect<boolean>
  /** Removes the events for every perspective. Unknown ids are ignored. */
  readonly markProcessed: (eventIds: Iterable<string>) => Effect.Effect<void>
  /** Removes the events for one perspective only. Unknown ids or perspectives are ignored. */
  readonly markProcessedByPerspective: (eventIds: Iterable<string>, perspectiveName: string) => Effect.Effect<void>
  /** Removes every tracked event of the (perspective, stream) and wakes their waiters; nothing else changes. */
  readonly markPerspectiveStreamProcessed: (perspectiveName: string, streamId: string) => Effect.Effect<void>
  /** Until no perspective has the events any more (after `markProcessed`, or every perspective marked). */
  readonly waitForEvents: (eventIds: ReadonlyArray<string> | undefined, options?: WaitOptions) => Effect.Effect<boolean>
  readonly waitForPerspectiveEvents: (
    eventIds: ReadonlyArray<string> | undefined,
    perspectiveName: string,
    options?: WaitOptions
  ) => Effect.Effect<boolean>
  /** Until every perspective tracking the events has applied them, whatever the order. */
  readonly waitForAllPerspectives: (eventIds: ReadonlyArray<string> | undefined, options?: WaitOptions) => Effect.Effect<boolean>
  /** Ends this awaiter's waits with false; other awaiters are untouched. Returns how many waits ended. */
  readonly unregisterAwaiter: (awaiterId: string) => Effect.Effect<number>
  /** Drops entries older than `maxAge` (default: the layer's `staleAfter`); returns how many. */
  readonly cleanupStaleEvents: (maxAge?: Duration.Input) => Effect.Effect<number>
  /** Counters for diagnostics and tests. `signalled` counts completed waits (each once). */
  readonly stats: Effect.Effect<{ readonly tracked: number; readonly waiters: number; readonly signalled: number }>
}

/**
 * The process-wide tracker service.
 *
 * @category services
 * @since 0.1.0
 */
export class SyncEventTracker extends Context.Service<SyncEventTracker, SyncEventTrackerShape>()("@whizbang/sync/SyncEventTracker") {}

/**
 * Layer options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Entries older than this are dropped by the cleanup fiber. Default 5 minutes. */
  readonly staleAfter?: Duration.Input | undefined
  /** How often the cleanup fiber runs. Default 30 seconds. */
  readonly cleanupInterval?: Duration.Input | undefined
}

/**
 * Makes a tracker and starts its cleanup fiber in the current scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function* (options?: Options) {
  const state = new TrackerState()
  const staleAfter = options?.staleAfter ?? Duration.minutes(5)
  const wait = (ids: ReadonlyArray<string> | undefined, perspectiveName: string | undefined, options?: WaitOptions) =>
    Effect.suspend(() => {
      const deferred = Deferred.makeUnsafe<boolean>()
      const waiter = state.register(ids ?? [], perspectiveName, options?.awaiterId ?? EventId.unsafeMake(), deferred)
      if (waiter === undefined) return Effect.succeed(true)
      return DebuggerAwareTimeout.timeoutOption(Deferred.await(deferred), options?.timeout ?? Duration.seconds(5), {
        debuggerAware: options?.debuggerAwareTimeout ?? false
      }).pipe(
        // At the timeout, a final check: a mark that raced the timer still counts.
        Effect.map(Option.getOrElse(() => (ids ?? []).every((id) => state.isDone(id, perspectiveName)))),
        Effect.ensuring(Effect.sync(() => state.unregister(waiter)))
      )
    })
  const cleanupStaleEvents = (maxAge?: Duration.Input) =>
    Effect.map(Clock.currentTimeMillis, (now) => state.removeStale(now - Duration.toMillis(maxAge ?? staleAfter)))

  yield* Effect.sleep(options?.cleanupInterval ?? Duration.seconds(30)).pipe(
    Effect.andThen(cleanupStaleEvents()),
    Effect.forever,
    Effect.forkScoped
  )

  return SyncEventTracker.of({
    trackEvent: (event) => Effect.map(Clock.currentTimeMillis, (trackedAt) => state.track({ ...event, trackedAt })),
    getPendingEvents: (streamId, perspectiveName, eventTypes) =>
      Effect.sync(() =>
        state
          .entriesOf(perspectiveName)
          .filter(
            (e) => e.streamId === streamId && (eventTypes === undefined || eventTypes.length === 0 || eventTypes.includes(e.eventType))
          )
      ),
    getPendingForPerspective: (perspectiveName) => Effect.sync(() => state.entriesOf(perspectiveName)),
    getAllTrackedEventIds: Effect.sync(() => [...new Set(state.entries().map((e) => e.eventId))]),
    isPending: (eventId, perspectiveName) => Effect.sync(() => !state.isDone(eventId, perspectiveName)),
    markProcessed: (eventIds) =>
      Effect.sync(() => {
        for (const id of eventIds) state.remove(id, undefined)
      }),
    markProcessedByPerspective: (eventIds, perspectiveName) =>
      Effect.sync(() => {
        for (const id of eventIds) state.remove(id, perspectiveName)
      }),
    markPerspectiveStreamProcessed: (perspectiveName, streamId) =>
      Effect.sync(() => {
        for (const e of state.entriesOf(perspectiveName)) {
          if (e.streamId === streamId) state.remove(e.eventId, perspectiveName)
        }
      }),
    waitForEvents: (ids, options) => wait(ids, undefined, options),
    waitForPerspectiveEvents: (ids, perspectiveName, options) => wait(ids, perspectiveName, options),
    waitForAllPerspectives: (ids, options) => wait(ids, undefined, options),
    unregisterAwaiter: (awaiterId) => Effect.sync(() => state.cancelAwaiter(awaiterId)),
    cleanupStaleEvents,
    stats: Effect.sync(() => ({ tracked: state.size, waiters: state.waiterCount(), signalled: state.signalled }))
  })
})

/**
 * The tracker with default options (stale after 5 minutes, cleaned every 30 seconds).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<SyncEventTracker> = Layer.effect(SyncEventTracker, make())

/**
 * The tracker with explicit options.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = (options: Options): Layer.Layer<SyncEventTracker> => Layer.effect(SyncEventTracker, make(options))
