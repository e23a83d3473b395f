/**
 * The event store port: atomic appends with optimistic concurrency, and ordered reads of a stream.
 *
 * Layers: `layerMemory` here (for unit tests), `PgEventStore.layer` in `@whizbang/postgres`. Both pass the same
 * contract suite (`@whizbang/testing`'s `EventStoreContract`).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import * as AppendRequest from "./AppendRequest.js"
import type { Envelope } from "./Envelope.js"
import * as EventId from "./EventId.js"
import { type EventRegistry, type InvalidEventDefinition, validate as validateRegistry } from "./EventRegistry.js"
import {
  type AppendError,
  DuplicateEventId,
  InvalidRequest,
  InvalidStreamId,
  type ReadError,
  WrongExpectedVersion
} from "./EventStoreError.js"

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
export class EventStore extends Context.Service<
  EventStore,
  {
    /**
     * Appends events to one stream in one transaction: all are stored or none. The store gives each event an id
     * above every id of the stream, in version order; an event may bring its own UUIDv7 instead (imports), stored
     * as is (`DuplicateEventId` when it is already used, `InvalidEventId` when it is not a UUIDv7).
     */
    readonly append: (
      streamId: string,
      events: ReadonlyArray<AppendRequest.AppendEvent>,
      options?: AppendRequest.AppendOptions
    ) => Effect.Effect<AppendResult, AppendError>
    /** Reads a stream in version order, payloads decoded. */
    readonly readStream: (streamId: string, options?: ReadOptions) => Effect.Effect<ReadonlyArray<Envelope>, ReadError>
    /** The stream's current version (0 when it has no events). */
    readonly streamVersion: (streamId: string) => Effect.Effect<number, ReadError>
  }
>()("@whizbang/core/EventStore") {}

/**
 * Appends events to one stream with the {@link EventStore} in context: `yield* EventStore.append(id, [...])`.
 *
 * @category accessors
 * @since 0.1.0
 */
export const append = (
  streamId: string,
  events: ReadonlyArray<AppendRequest.AppendEvent>,
  options?: AppendRequest.AppendOptions
): Effect.Effect<AppendResult, AppendError, EventStore> => Effect.flatMap(EventStore, (store) => store.append(streamId, events, options))

/**
 * Validates read options; shared by the layers.
 *
 * @category constructors
 * @since 0.1.0
 */
export const checkRead = (
  streamId: string,
  options: ReadOptions = {}
): Effect.Effect<{ afterVersion: number; limit: number | undefined }, InvalidStreamId | InvalidRequest> => {
  if (!EventId.isUuid(streamId)) return Effect.fail(new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" }))
  const afterVersion = options.afterVersion ?? 0
  if (!Number.isSafeInteger(afterVersion) || afterVersion < 0)
    return Effect.fail(new InvalidRequest({ detail: `afterVersion must be a non-negative integer, got ${afterVersion}` }))
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
  Effect.map(validateRegistry(registry), () => {
    interface Stream {
      readonly events: Array<Envelope>
      highest: string | undefined
    }
    const streams = new Map<string, Stream>()
    const stored = new Set<string>()
    // Everything from the version check to the write runs synchronously, so it is atomic like the Postgres
    // store's stream lock: ids are assigned against the stream as it is when the events are written.
    const write = (prepared: AppendRequest.PreparedAppend): Effect.Effect<AppendResult, WrongExpectedVersion | DuplicateEventId> =>
      Effect.suspend((): Effect.Effect<AppendResult, WrongExpectedVersion | DuplicateEventId> => {
        const { streamId } = prepared
        const stream = streams.get(streamId) ?? { events: [], highest: undefined }
        const actual = stream.events.length
        if (!AppendRequest.versionMatches(prepared.expectedVersion, actual)) {
          const expected = prepared.expectedVersion === "noStream" ? "noStream" : (prepared.expectedVersion as number)
          return Effect.fail(new WrongExpectedVersion({ streamId, expected, actual }))
        }
        const taken = prepared.events.filter((e) => e.supplied && stored.has(e.eventId)).map((e) => e.eventId)
        if (taken.length > 0) return Effect.fail(new DuplicateEventId({ eventIds: taken }))
        const ids = AppendRequest.assignIds(prepared, stream.highest)
        const envelopes = AppendRequest.envelopes(prepared, ids, actual)
        for (const [i, envelope] of envelopes.entries()) {
          stream.events.push({ ...envelope, payload: prepared.events[i]!.encodedPayload })
          stored.add(envelope.eventId)
          if (stream.highest === undefined || envelope.eventId > stream.highest) stream.highest = envelope.eventId
        }
        streams.set(streamId, stream)
        return Effect.succeed({ streamId, nextExpectedVersion: actual + envelopes.length, events: envelopes })
      })
    return EventStore.of({
      append: (streamId, events, options) => AppendRequest.prepare(registry, streamId, events, options).pipe(Effect.flatMap(write)),
      readStream: (streamId, options) =>
        Effect.gen(function* () {
          const { afterVersion, limit } = yield* checkRead(streamId, options)
          const all = streams.get(streamId)?.events ?? []
          const slice = all.filter((e) => e.streamVersion > afterVersion).slice(0, limit)
          return yield* Effect.forEach(slice, (e) =>
            registry.decode(e.eventType, e.payload, e.eventId).pipe(Effect.map((payload) => ({ ...e, payload })))
          )
        }),
      streamVersion: (streamId) =>
        EventId.isUuid(streamId)
          ? Effect.sync(() => streams.get(streamId)?.events.length ?? 0)
          : Effect.fail(new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" }))
    })
  })

/**
 * The in-memory event store as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory = (registry: EventRegistry): Layer.Layer<EventStore, InvalidEventDefinition> =>
  Layer.effect(EventStore, makeMemory(registry))
