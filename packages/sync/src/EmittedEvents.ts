/**
 * What emitting code calls right after an append commits: records each event in the current scope (for
 * `SyncFilter.currentScope()`) and, for every perspective that tracks its type, in the process-wide
 * `SyncEventTracker` (for waits from any scope).
 *
 * @since 0.1.0
 */
import type { Envelope } from "@whizbang/core"
import { Effect } from "effect"
import * as ScopedEventTracker from "./ScopedEventTracker.js"
import { SyncEventTracker } from "./SyncEventTracker.js"
import { TrackedEventTypeRegistry } from "./TrackedEventTypeRegistry.js"

/**
 * The part of an envelope that sync needs.
 *
 * @category models
 * @since 0.1.0
 */
export type EmittedEvent = Pick<Envelope.Envelope, "eventId" | "streamId" | "eventType">

/**
 * Records appended events for sync.
 *
 * @category tracking
 * @since 0.1.0
 */
export const record = (events: Iterable<EmittedEvent>): Effect.Effect<void, never, SyncEventTracker | TrackedEventTypeRegistry> =>
  Effect.gen(function* () {
    const tracker = yield* SyncEventTracker
    const registry = yield* TrackedEventTypeRegistry
    for (const { eventId, eventType, streamId } of events) {
      yield* ScopedEventTracker.trackEmittedEvent({ eventId, eventType, streamId })
      for (const perspectiveName of yield* registry.getPerspectiveNames(eventType)) {
        yield* tracker.trackEvent({ eventId, eventType, streamId, perspectiveName })
      }
    }
  })
