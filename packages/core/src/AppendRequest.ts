/**
 * Validation and encoding of an append, shared by every EventStore layer so they accept and refuse exactly the
 * same input. Store implementers call {@link prepare}; application code calls `EventStore.append`.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { EventMetadata, EventScope } from "./Envelope.js"
import type { NewEvent } from "./EventDefinition.js"
import * as EventId from "./EventId.js"
import type { EventRegistry } from "./EventRegistry.js"
import { InvalidRequest, InvalidEventPayload, InvalidStreamId, type UnknownEventType } from "./EventStoreError.js"

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
 * One event ready to store: id made, payload encoded to JSON.
 *
 * @category models
 * @since 0.1.0
 */
export interface PreparedEvent {
  readonly eventId: string
  readonly eventType: string
  /** The decoded payload as given by the caller. */
  readonly payload: unknown
  /** The schema-encoded JSON value to store. */
  readonly encodedPayload: unknown
  readonly metadata: EventMetadata
  readonly scope: EventScope
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
}

const checkScope = (scope: EventScope): string | undefined => {
  const shortString = (v: unknown) => typeof v === "string" && v.length <= 500 && !v.includes("\u0000")
  if (scope.userId !== undefined && !shortString(scope.userId)) return "scope.userId must be a string of at most 500 characters"
  if (scope.tenantId !== undefined && !shortString(scope.tenantId)) return "scope.tenantId must be a string of at most 500 characters"
  if (scope.roles !== undefined && (!Array.isArray(scope.roles) || scope.roles.length > 200 || !scope.roles.every(shortString))) {
    return "scope.roles must be at most 200 strings of at most 500 characters"
  }
  return undefined
}

/**
 * Validates and encodes an append. Fails before anything is written.
 *
 * @category constructors
 * @since 0.1.0
 */
export const prepare = (
  registry: EventRegistry,
  streamId: string,
  events: ReadonlyArray<NewEvent>,
  options: AppendOptions = {}
): Effect.Effect<PreparedAppend, InvalidRequest | InvalidStreamId | InvalidEventPayload | UnknownEventType> =>
  Effect.gen(function* () {
    if (!EventId.isUuid(streamId)) return yield* new InvalidStreamId({ streamId, detail: "stream ids are UUIDs" })
    const expectedVersion = options.expectedVersion ?? "any"
    if (typeof expectedVersion === "number" && (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0)) {
      return yield* new InvalidRequest({ detail: `expectedVersion must be a non-negative integer, "any" or "noStream", got ${expectedVersion}` })
    }
    if (typeof expectedVersion === "string" && expectedVersion !== "any" && expectedVersion !== "noStream") {
      return yield* new InvalidRequest({ detail: `expectedVersion must be a non-negative integer, "any" or "noStream", got ${JSON.stringify(expectedVersion)}` })
    }
    if (!Array.isArray(events) || events.length === 0) return yield* new InvalidRequest({ detail: "append needs at least one event" })
    for (const [name, id] of [["correlationId", options.correlationId], ["causationId", options.causationId]] as const) {
      if (id !== undefined && id !== null && !EventId.isUuid(id)) return yield* new InvalidRequest({ detail: `${name} must be a UUID` })
    }
    const scope = options.scope ?? {}
    const scopeProblem = checkScope(scope)
    if (scopeProblem !== undefined) return yield* new InvalidRequest({ detail: scopeProblem })

    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    const prepared: Array<PreparedEvent> = []
    for (const event of events) {
      const definition = yield* registry.get(event.type)
      const encodedPayload = yield* registry.encode(event.type, event.payload)
      const own = yield* Effect.try({
        try: () => definition.streamId(event.payload),
        catch: (error) => new InvalidEventPayload({ eventType: event.type, detail: `its streamId function threw: ${String(error)}` })
      })
      if (own !== streamId) {
        return yield* new InvalidStreamId({ streamId, detail: `a ${event.type} event belongs to stream ${JSON.stringify(String(own).slice(0, 100))}` })
      }
      const eventId = yield* EventId.make
      prepared.push({
        eventId,
        eventType: event.type,
        payload: event.payload,
        encodedPayload,
        metadata: { correlationId: options.correlationId ?? prepared[0]?.eventId ?? eventId, causationId: options.causationId ?? null, timestamp },
        scope
      })
    }
    return { streamId, expectedVersion, events: prepared }
  })

/**
 * Checks an expected version against a stream's current version.
 *
 * @category guards
 * @since 0.1.0
 */
export const versionMatches = (expected: ExpectedVersion, actual: number): boolean =>
  expected === "any" || (expected === "noStream" ? actual === 0 : expected === actual)
