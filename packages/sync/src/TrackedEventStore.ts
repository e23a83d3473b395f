/**
 * An `EventStore` decorator that records every appended event for sync: in the current scope (for
 * `SyncFilter.currentScope()`) and in the process-wide `SyncEventTracker` for each perspective that handles its
 * type (from the `TrackedEventTypeRegistry`; build it with `TrackedEventTypeRegistry.layerFromPerspectives`).
 *
 * ```ts
 * const Store = TrackedEventStore.layer.pipe(
 *   Layer.provide(PgEventStore.layer({ ... })),           // or any EventStore layer
 *   Layer.provide(TrackedEventTypeRegistry.layerFromPerspectives(perspectives)),
 *   Layer.provide(tracker)
 * )
 * ```
 *
 * Recording happens after the append committed, on the appending fiber (so the fiber-local scope is the
 * caller's). A failed append records nothing.
 *
 * @since 0.1.0
 */
import { EventStore } from "@whizbang/core"
import { Effect, Layer } from "effect"
import * as EmittedEvents from "./EmittedEvents.js"
import { SyncEventTracker } from "./SyncEventTracker.js"
import { TrackedEventTypeRegistry } from "./TrackedEventTypeRegistry.js"

/**
 * Wraps `store`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<
  EventStore.EventStore["Service"],
  never,
  EventStore.EventStore | SyncEventTracker | TrackedEventTypeRegistry
> = Effect.gen(function* () {
  const store = yield* EventStore.EventStore
  const tracker = yield* SyncEventTracker
  const registry = yield* TrackedEventTypeRegistry
  const record = (events: Parameters<typeof EmittedEvents.record>[0]) =>
    EmittedEvents.record(events).pipe(
      Effect.provideService(SyncEventTracker, tracker),
      Effect.provideService(TrackedEventTypeRegistry, registry)
    )
  return EventStore.EventStore.of({
    ...store,
    append: (streamId, events, options) => Effect.tap(store.append(streamId, events, options), (result) => record(result.events))
  })
})

/**
 * The decorated store; needs the store to decorate, a tracker and a registry.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<EventStore.EventStore, never, EventStore.EventStore | SyncEventTracker | TrackedEventTypeRegistry> =
  Layer.effect(EventStore.EventStore, make)
