/**
 * The event store port: atomic appends with optimistic concurrency, and ordered reads of a stream.
 *
 * Layers: `layerMemory` here (for unit tests), `PgEventStore.layer` in `@whizbang/postgres`. Both pass the same
 * contract suite (`@whizbang/testing`'s `EventStoreContract`).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Ref } from "effect"
import * as AppendRequest from "./AppendRequest.js"
import type { Envelope } from "./Envelope.js"
import type { NewEvent } from "./EventDefinition.js"
import * as EventId from "./EventId.js"
import { type EventRegistry, type InvalidEventDefinition, validate as validateRegistry } from "./EventRegistry.js"
import { type AppendError, InvalidRequest, InvalidStreamId, type ReadError, WrongExpectedVersion } from "./EventStoreError.js"

/**
 * What an append stored.
 *
 * @category models
 * @since 0.1.0
 */
export interface AppendResult {
  readonly streamId: string
  /** The stream's version after the append: pass it as the next `expectedVersion`. */
  readonly nextExpectedVersion: number
  readonly events: ReadonlyArray<Envelope>
}

/**
 * Options of `readStream`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReadOptions {
  /** Only events with a greater stream version. Default 0 (from the start). */
  readonly afterVersion?: number
  /** At most this many events. Default: all. */
  readonly limit?: number
}

/**
 * The event store service.
 *
 * @category services
 * @since 0.1.0
 */
export class EventStore extends Context.Service<EventStore, {
  /** Appends events to one stream in one transaction: all are stored or none. */
  readonly append: (streamId: string, events: ReadonlyArray<NewEvent>, options?: AppendRequest.AppendOptions) => Effect.Effect<AppendResult, AppendError>
  /** Reads a stream in version order, payloads decoded. */
  readonly readStream: (streamId: string, options?: ReadOptions) => Effect.Effect<ReadonlyArray<Envelope>, ReadError>
  /** The stream's current version (0 when it has no events). */
  readonly streamVersion: (streamId: string) => Effect.Effect<number, ReadError>
}>()("@whizbang/core/EventStore") {}

/**
 * Appends events to one stream with the {@link EventStore} in context: `yield* EventStore.append(id, [...])`.
 *
 * @category accessors
 * @since 0.1.0
 */
export const append = (
  streamId: string,
  events: ReadonlyArray<NewEvent>,
  options?: AppendRequest.AppendOptions
): Effect.Effect<AppendResult, AppendError, EventStore> => Effect.flatMap(EventStore, (store) => store.append(streamId, events, options))

/**
 * Validates read options; shared by the layers.
 *
 * @category constructors
 * @since 0.1.0
 */
export const checkRead = (streamId: string, options: ReadOptions = {}): Effect.Effect<{ afterVersion: number; limit: number | undefined }, InvalidStreamId | InvalidRequest> => {
  if (!EventId.isUuid(streamId)) return Effect.fail(new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" }))
  const afterVersion = options.afterVersion ?? 0
  if (!Number.isSafeInteger(afterVersion) || afterVersion < 0) return Effect.fail(new InvalidRequest({ detail: `afterVersion must be a non-negative integer, got ${afterVersion}` }))
  if (options.limit !== undefined && (!Number.isSafeInteger(options.limit) || options.limit <= 0)) {
    return Effect.fail(new InvalidRequest({ detail: `limit must be a positive integer, got ${options.limit}` }))
  }
  return Effect.succeed({ afterVersion, limit: options.limit })
}

/**
 * An in-memory event store with the same contract as the Postgres one, for unit tests.
 *
 * @category layers
 * @since 0.1.0
 */
export const makeMemory = (registry: EventRegistry): Effect.Effect<EventStore["Service"], InvalidEventDefinition> =>
  Effect.gen(function* () {
    yield* validateRegistry(registry)
    const streams = yield* Ref.make(new Map<string, ReadonlyArray<Envelope>>())
    return EventStore.of({
      append: (streamId, events, options) =>
        Effect.gen(function* () {
          const prepared = yield* AppendRequest.prepare(registry, streamId, events, options)
          return yield* Ref.modify(streams, (current): [Effect.Effect<AppendResult, WrongExpectedVersion>, Map<string, ReadonlyArray<Envelope>>] => {
            const existing = current.get(streamId) ?? []
            if (!AppendRequest.versionMatches(prepared.expectedVersion, existing.length)) {
              const expected = prepared.expectedVersion === "noStream" ? "noStream" : (prepared.expectedVersion as number)
              return [Effect.fail(new WrongExpectedVersion({ streamId, expected, actual: existing.length })), current]
            }
            const stored = prepared.events.map((event, index): Envelope => ({
              eventId: event.eventId,
              streamId,
              streamVersion: existing.length + index + 1,
              eventType: event.eventType,
              payload: event.encodedPayload,
              metadata: event.metadata,
              scope: event.scope
            }))
            const next = new Map(current).set(streamId, [...existing, ...stored])
            return [Effect.succeed({ streamId, nextExpectedVersion: existing.length + stored.length, events: stored.map((e, i) => ({ ...e, payload: prepared.events[i]!.payload })) }), next]
          }).pipe(Effect.flatten)
        }),
      readStream: (streamId, options) =>
        Effect.gen(function* () {
          const { afterVersion, limit } = yield* checkRead(streamId, options)
          const all = (yield* Ref.get(streams)).get(streamId) ?? []
          const slice = all.filter((e) => e.streamVersion > afterVersion).slice(0, limit)
          return yield* Effect.forEach(slice, (e) => registry.decode(e.eventType, e.payload, e.eventId).pipe(Effect.map((payload) => ({ ...e, payload }))))
        }),
      streamVersion: (streamId) =>
        EventId.isUuid(streamId)
          ? Ref.get(streams).pipe(Effect.map((s) => s.get(streamId)?.length ?? 0))
          : Effect.fail(new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" }))
    })
  })

/**
 * The in-memory event store as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory = (registry: EventRegistry): Layer.Layer<EventStore, InvalidEventDefinition> => Layer.effect(EventStore, makeMemory(registry))
