/**
 * Waits until every perspective has processed the given events — RPC-style completion, for callers that must
 * not answer before all side effects on read models are done. (For reading one perspective, use
 * `PerspectiveSyncAwaiter`.)
 *
 * Returns `true` at once for no events or events no perspective tracks; `false` at the timeout.
 * Cancel by interrupting the fiber.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer } from "effect"
import { SyncEventTracker } from "./SyncEventTracker.js"

/**
 * Options of a wait.
 *
 * @category models
 * @since 0.1.0
 */
export interface WaitOptions {
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
  /** Default true. */
  readonly debuggerAwareTimeout?: boolean | undefined
  /** To cancel the wait with `SyncEventTracker.unregisterAwaiter`. */
  readonly awaiterId?: string | undefined
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventCompletionAwaiterShape {
  readonly waitForEvents: (eventIds: ReadonlyArray<string> | undefined, options?: WaitOptions) => Effect.Effect<boolean>
  /** True only when no perspective still has any of the events. */
  readonly areEventsFullyProcessed: (eventIds: ReadonlyArray<string>) => Effect.Effect<boolean>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.1.0
 */
export class EventCompletionAwaiter extends Context.Service<EventCompletionAwaiter, EventCompletionAwaiterShape>()(
  "@whizbang/sync/EventCompletionAwaiter"
) {}

/**
 * Makes the awaiter from the tracker in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.map(SyncEventTracker, (tracker) =>
  EventCompletionAwaiter.of({
    waitForEvents: (eventIds, options) =>
      tracker.waitForAllPerspectives(eventIds, {
        timeout: options?.timeout ?? Duration.seconds(5),
        debuggerAwareTimeout: options?.debuggerAwareTimeout ?? true,
        awaiterId: options?.awaiterId
      }),
    areEventsFullyProcessed: (eventIds) =>
      Effect.map(Effect.forEach(eventIds, (id) => tracker.isPending(id)), (pending) => !pending.includes(true))
  }))

/**
 * The awaiter; needs a `SyncEventTracker`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<EventCompletionAwaiter, never, SyncEventTracker> = Layer.effect(EventCompletionAwaiter, make)
