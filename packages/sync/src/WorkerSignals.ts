/**
 * Signals the in-process `SyncEventTracker` from the perspective worker: after each commit, the worker's
 * `onPerspectiveEventProcessed(group)` hook marks the group's events processed for its perspective, which wakes
 * the awaiters of this process at once (no database round trip).
 *
 * ```ts
 * const WorkerLive = Layer.unwrap(Effect.map(
 *   WorkerSignals.hooks({ onWorkProcessingIdle: () => Effect.log("idle") }),
 *   (hooks) => PgPerspectivePipeline.layer({ events, perspectives, hooks })
 * )).pipe(Layer.provideMerge(SyncEventTracker.layer))
 * ```
 *
 * **Gotchas**: the hook runs after the completion transaction committed, so the mark never runs ahead of the
 * database. Dead letters are not signalled here (the hook does not say a failure was final): with
 * `PgSyncInquiry`, its `NOTIFY` ends those waits.
 *
 * @since 0.1.0
 */
import type { PerspectiveWorker } from "@whizbang/core"
import { Effect } from "effect"
import { SyncEventTracker, type SyncEventTrackerShape } from "./SyncEventTracker.js"

/**
 * Worker hooks that signal `tracker`; the hooks of `base` are kept (its `onPerspectiveEventProcessed` runs first).
 *
 * @category constructors
 * @since 0.1.0
 */
export const hooksFor = (tracker: SyncEventTrackerShape, base?: PerspectiveWorker.Hooks): PerspectiveWorker.Hooks => ({
  ...base,
  onPerspectiveEventProcessed: (group) =>
    Effect.andThen(
      base?.onPerspectiveEventProcessed?.(group) ?? Effect.void,
      tracker.markProcessedByPerspective(group.eventIds, group.perspectiveName)
    )
})

/**
 * {@link hooksFor} the `SyncEventTracker` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const hooks = (base?: PerspectiveWorker.Hooks): Effect.Effect<PerspectiveWorker.Hooks, never, SyncEventTracker> =>
  Effect.map(SyncEventTracker, (tracker) => hooksFor(tracker, base))
