/**
 * The scoped event tracker: what the current request or operation emitted — the Effect analogue of an
 * `AsyncLocal` tracker.
 *
 * {@link withScope} opens a scope: a fresh store carried in the fiber's context by the {@link Current}
 * reference, so it follows every fiber forked inside the scope and nothing outside it. Appends record
 * `(streamId, eventType, eventId)` with {@link trackEmittedEvent}; `SyncFilter.currentScope()` then waits for
 * exactly those events.
 *
 * **Gotchas**
 * - Outside a scope, recording is a no-op and queries return nothing (as an unset `AsyncLocal` would).
 * - A nested `withScope` starts a new, empty scope; its events are not visible to the outer one.
 * - Recording from concurrent fibers loses nothing: JavaScript runs one fiber step at a time and each record is
 *   a single synchronous push.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import * as SyncFilter from "./SyncFilter.js"

/**
 * One emitted event.
 *
 * @category models
 * @since 0.1.0
 */
export interface TrackedEvent {
  readonly streamId: string
  readonly eventType: string
  readonly eventId: string
}

/**
 * The store of one scope.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScopedEventTracker {
  readonly trackEmittedEvent: (event: TrackedEvent) => void
  /** Every event of the scope, or those matching `filter`, in emission order. */
  readonly getEmittedEvents: (filter?: SyncFilter.SyncFilterNode) => ReadonlyArray<TrackedEvent>
  /** True when every event matching `filter` is in `processedEventIds` (so true when nothing matches). */
  readonly areAllProcessed: (filter: SyncFilter.SyncFilterNode, processedEventIds: Iterable<string>) => boolean
}

/**
 * Makes an empty store (normally done by {@link withScope}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe = (): ScopedEventTracker => {
  const events: Array<TrackedEvent> = []
  const getEmittedEvents = (filter?: SyncFilter.SyncFilterNode) =>
    filter === undefined ? events.slice() : events.filter((e) => SyncFilter.matches(filter, { ...e, inCurrentScope: true }))
  return {
    trackEmittedEvent: (event) => {
      events.push({ streamId: event.streamId, eventType: event.eventType, eventId: event.eventId })
    },
    getEmittedEvents,
    areAllProcessed: (filter, processedEventIds) => {
      const processed = processedEventIds instanceof Set ? processedEventIds : new Set(processedEventIds)
      return getEmittedEvents(filter).every((e) => processed.has(e.eventId))
    }
  }
}

/**
 * The current scope's store; `None` outside a scope.
 *
 * @category references
 * @since 0.1.0
 */
export const Current: Context.Reference<Option.Option<ScopedEventTracker>> = Context.Reference("@whizbang/sync/ScopedEventTracker", {
  defaultValue: () => Option.none()
})

/**
 * Runs `effect` in a fresh scope.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withScope = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => Effect.provideService(effect, Current, Option.some(makeUnsafe())))

/**
 * Records an emitted event in the current scope (no-op outside a scope).
 *
 * @category tracking
 * @since 0.1.0
 */
export const trackEmittedEvent = (event: TrackedEvent): Effect.Effect<void> =>
  Effect.flatMap(
    Current,
    Option.match({ onNone: () => Effect.void, onSome: (tracker) => Effect.sync(() => tracker.trackEmittedEvent(event)) })
  )

/**
 * The current scope's events, optionally filtered; empty outside a scope.
 *
 * @category queries
 * @since 0.1.0
 */
export const getEmittedEvents = (filter?: SyncFilter.SyncFilterNode): Effect.Effect<ReadonlyArray<TrackedEvent>> =>
  Effect.map(Current, Option.match({ onNone: () => [], onSome: (tracker) => tracker.getEmittedEvents(filter) }))

/**
 * True when every event of the current scope matching `filter` is processed; true when nothing matches.
 *
 * @category queries
 * @since 0.1.0
 */
export const areAllProcessed = (filter: SyncFilter.SyncFilterNode, processedEventIds: Iterable<string>): Effect.Effect<boolean> =>
  Effect.map(
    Current,
    Option.match({
      onNone: () => true,
      onSome: (tracker) => tracker.areAllProcessed(filter, processedEventIds)
    })
  )
