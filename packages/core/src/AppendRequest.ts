/**
 * Validation and encoding of an append, shared by every EventStore layer so they accept and refuse exactly the
 * same input. Store implementers call {@link prepare}, then {@link assignIds} under the stream's lock (or do the
 * same in the database), then {@link envelopes}; application code calls `EventStore.append`.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { Envelope, EventMetadata, EventScope } from "./Envelope.js"
import type { NewEvent } from "./EventDefinition.js"
import * as EventId from "./EventId.js"
import type { EventRegistry } from "./EventRegistry.js"
import {
  DuplicateEventId,
  InvalidEventId,
  InvalidEventPayload,
  InvalidRequest,
  InvalidStreamId,
  type UnknownEventType
} from "./EventStoreError.js"
import { storageProblem } from "./internal/jsonbStorable.js"

/**
 * The version a stream must be at for an append to succeed.
 * A number is the exact current version (0 = the stream has no events); `"noStream"` is the same as 0;
 * `"any"` (the default) skips the check.
 *
 * @category models
 * @since 0.1.0
 */
export type ExpectedVersion = number | "any" | "noStream"

/**
 * Options of one append.
 *
 * @category models
 * @since 0.1.0
 */
export interface AppendOptions {
  readonly expectedVersion?: ExpectedVersion
  /** Defaults to the id of the first appended event. */
  readonly correlationId?: string
  readonly causationId?: string | null
  readonly scope?: EventScope
}

/**
 * An event to append, optionally with its own id. Give an id only for an event that already has one elsewhere
 * (imported from another service, an inbox, a migration): it must be a UUIDv7 not stored yet, and it is stored
 * as is. Such an id may be lower than ids already processed, which makes a late arrival that the perspectives
 * rewind for. Without an id the store makes one above every id of the stream.
 *
 * @category models
 * @since 0.1.0
 */
export interface AppendEvent<Type extends string = string, Payload = unknown> extends NewEvent<Type, Payload> {
  readonly eventId?: string | undefined
}

/**
 * One event ready to store: payload encoded to JSON, id supplied or proposed.
 *
 * @category models
 * @since 0.1.0
 */
export interface PreparedEvent {
  /** The caller's id when `supplied`, else the generator's proposal, which {@link assignIds} may raise. */
  readonly eventId: string
  /** True when the caller gave the id: it is stored as is. */
  readonly supplied: boolean
  readonly eventType: string
  /** The decoded payload as given by the caller. */
  readonly payload: unknown
  /** The schema-encoded JSON value to store. */
  readonly encodedPayload: unknown
}

/**
 * A validated append.
 *
 * @category models
 * @since 0.1.0
 */
export interface PreparedAppend {
  readonly streamId: string
  readonly expectedVersion: ExpectedVersion
  readonly events: ReadonlyArray<PreparedEvent>
  /** The caller's correlation id; `undefined` means the id the first event gets. */
  readonly correlationId: string | undefined
  readonly causationId: string | null
  readonly timestamp: string
  readonly scope: EventScope
}

const checkScope = (scope: EventScope): string | undefined => {
  const shortString = (v: unknown) => typeof v === "string" && v.length <= 500 && storageProblem(v) === undefined
  const rule = "of at most 500 characters, without NUL or unpaired surrogates"
  if (scope.userId !== undefined && !shortString(scope.userId)) return `scope.userId must be a string ${rule}`
  if (scope.tenantId !== undefined && !shortString(scope.tenantId)) return `scope.tenantId must be a string ${rule}`
  if (scope.roles !== undefined && (!Array.isArray(scope.roles) || scope.roles.length > 200 || !scope.roles.every(shortString))) {
    return `scope.roles must be at most 200 strings ${rule}`
  }
  return undefined
}

/**
 * Validates and encodes an append, and proposes ids (from `EventId.Generator`) for the events that bring none.
 * Fails before anything is written.
 *
 * @category constructors
 * @since 0.1.0
 */
export const prepare = (
  registry: EventRegistry,
  streamId: string,
  events: ReadonlyArray<AppendEvent>,
  options: AppendOptions = {}
): Effect.Effect<
  PreparedAppend,
  InvalidRequest | InvalidStreamId | InvalidEventPayload | UnknownEventType | InvalidEventId | DuplicateEventId
> =>
  Effect.gen(function* () {
    if (!EventId.isUuid(streamId)) return yield* new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" })
    const expectedVersion = options.expectedVersion ?? "any"
    if (typeof expectedVersion === "number" && (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0)) {
      return yield* new InvalidRequest({
        detail: `expectedVersion must be a non-negative integer, "any" or "noStream", got ${expectedVersion}`
      })
    }
    if (typeof expectedVersion === "string" && expectedVersion !== "any" && expectedVersion !== "noStream") {
      return yield* new InvalidRequest({
        detail: `expectedVersion must be a non-negative integer, "any" or "noStream", got ${JSON.stringify(expectedVersion)}`
      })
    }
    if (!Array.isArray(events) || events.length === 0) return yield* new InvalidRequest({ detail: "append needs at least one event" })
    for (const [name, id] of [
      ["correlationId", options.correlationId],
      ["causationId", options.causationId]
    ] as const) {
      if (id !== undefined && id !== null && !EventId.isUuid(id)) return yield* new InvalidRequest({ detail: `${name} must be a UUID` })
    }
    const scope = options.scope ?? {}
    const scopeProblem = checkScope(scope)
    if (scopeProblem !== undefined) return yield* new InvalidRequest({ detail: scopeProblem })

    const supplied = new Set<string>()
    const repeated = new Set<string>()
    for (const event of events) {
      if (event.eventId === undefined) continue
      if (!EventId.isV7(event.eventId)) {
        return yield* new InvalidEventId({ eventId: String(event.eventId), detail: "a supplied event id must be a UUIDv7" })
      }
      const id = event.eventId.toLowerCase()
      if (supplied.has(id)) repeated.add(id)
      supplied.add(id)
    }
    if (repeated.size > 0) return yield* new DuplicateEventId({ eventIds: [...repeated] })

    const generate = yield* EventId.Generator
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    const prepared: Array<PreparedEvent> = []
    for (const event of events) {
      const definition = yield* registry.get(event.type)
      const encodedPayload = yield* registry.encode(event.type, event.payload)
      const problem = storageProblem(encodedPayload)
      if (problem !== undefined) return yield* new InvalidEventPayload({ eventType: event.type, detail: problem })
      const own = yield* Effect.try({
        try: () => definition.streamId(event.payload),
        catch: (error) => new InvalidEventPayload({ eventType: event.type, detail: `its streamId function threw: ${String(error)}` })
      })
      if (own !== streamId) {
        return yield* new InvalidStreamId({
          streamId,
          detail: `a ${event.type} event belongs to stream ${JSON.stringify(String(own).slice(0, 100))}`
        })
      }
      const eventId = event.eventId === undefined ? yield* generate : event.eventId.toLowerCase()
      if (!EventId.isV7(eventId)) return yield* Effect.die(new Error(`EventId.Generator made ${JSON.stringify(eventId)}, not a UUIDv7`))
      prepared.push({
        eventId: eventId.toLowerCase(),
        supplied: event.eventId !== undefined,
        eventType: event.type,
        payload: event.payload,
        encodedPayload
      })
    }
    return {
      streamId,
      expectedVersion,
      events: prepared,
      correlationId: options.correlationId,
      causationId: options.causationId ?? null,
      timestamp,
      scope
    }
  })

/**
 * The ids an append stores, given the stream's highest stored event id: a supplied id as is; a proposed id when it
 * is above every id before it in the stream (stored or earlier in the batch), else `EventId.successor` of the
 * highest. Run under the stream's lock, so stream order and id order agree for every id the store makes. The
 * Postgres store applies the same rule in SQL.
 *
 * @category constructors
 * @since 0.1.0
 */
export const assignIds = (prepared: PreparedAppend, highestStored: string | undefined): ReadonlyArray<string> => {
  let highest = highestStored
  return prepared.events.map((event) => {
    const id = event.supplied || highest === undefined || event.eventId > highest ? event.eventId : EventId.successor(highest)
    if (highest === undefined || id > highest) highest = id
    return id
  })
}

/**
 * The metadata every event of an append is stored with, once its ids are known.
 *
 * @category constructors
 * @since 0.1.0
 */
export const metadata = (prepared: PreparedAppend, ids: ReadonlyArray<string>): EventMetadata => ({
  correlationId: prepared.correlationId ?? ids[0]!,
  causationId: prepared.causationId,
  timestamp: prepared.timestamp
})

/**
 * The envelopes of a stored append (payloads as the caller gave them), from its ids and the version before it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const envelopes = (prepared: PreparedAppend, ids: ReadonlyArray<string>, versionBefore: number): Array<Envelope> => {
  const meta = metadata(prepared, ids)
  return prepared.events.map(
    (event, i): Envelope => ({
      eventId: ids[i]!,
      streamId: prepared.streamId,
      streamVersion: versionBefore + i + 1,
      eventType: event.eventType,
      payload: event.payload,
      metadata: meta,
      scope: prepared.scope
    })
  )
}

/**
 * Checks an expected version against a stream's current version.
 *
 * @category guards
 * @since 0.1.0
 */
export const versionMatches = (expected: ExpectedVersion, actual: number): boolean =>
  expected === "any" || (expected === "noStream" ? actual === 0 : expected === actual)
