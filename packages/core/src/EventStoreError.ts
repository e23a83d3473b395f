/**
 * Typed errors of the event store. Each one means nothing of the append was written.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * The stream was not at the version the caller expected (optimistic concurrency).
 *
 * @category errors
 * @since 0.1.0
 */
export class WrongExpectedVersion extends Data.TaggedError("WrongExpectedVersion")<{
  readonly streamId: string
  readonly expected: number | "noStream"
  readonly actual: number
}> {
  override get message(): string {
    return `stream ${this.streamId} is at version ${this.actual}, expected ${this.expected === "noStream" ? "no stream" : this.expected}`
  }
}

/**
 * No definition is registered for an event type.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownEventType extends Data.TaggedError("UnknownEventType")<{ readonly eventType: string }> {
  override get message(): string {
    return `unknown event type ${JSON.stringify(this.eventType.slice(0, 200))}: register its EventDefinition`
  }
}

/**
 * A payload does not match its event's schema, cannot be stored as JSON, or is larger than allowed.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidEventPayload extends Data.TaggedError("InvalidEventPayload")<{
  readonly eventType: string
  readonly eventId?: string | undefined
  readonly detail: string
}> {
  override get message(): string {
    return `invalid payload for ${this.eventType}${this.eventId ? ` (event ${this.eventId})` : ""}: ${this.detail}`
  }
}

/**
 * A stream id that is not a UUID, or an event whose own stream id differs from the stream it is appended to.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidStreamId extends Data.TaggedError("InvalidStreamId")<{ readonly streamId: string; readonly detail: string }> {
  override get message(): string {
    return `invalid stream id ${JSON.stringify(String(this.streamId).slice(0, 100))}: ${this.detail}`
  }
}

/**
 * Options or metadata of an append or read that are not valid (for example a negative expected version or a non-UUID causation id).
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidRequest extends Data.TaggedError("InvalidRequest")<{ readonly detail: string }> {
  override get message(): string {
    return `invalid request: ${this.detail}`
  }
}

/**
 * An event id supplied by the caller that is not a UUIDv7.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidEventId extends Data.TaggedError("InvalidEventId")<{ readonly eventId: string; readonly detail: string }> {
  override get message(): string {
    return `invalid event id ${JSON.stringify(String(this.eventId).slice(0, 100))}: ${this.detail}`
  }
}

/**
 * Event ids supplied by the caller that are already stored, or given twice in one append.
 *
 * @category errors
 * @since 0.1.0
 */
export class DuplicateEventId extends Data.TaggedError("DuplicateEventId")<{ readonly eventIds: ReadonlyArray<string> }> {
  override get message(): string {
    const shown = this.eventIds.slice(0, 5).join(", ")
    return `event id${this.eventIds.length === 1 ? "" : "s"} already used: ${shown}${this.eventIds.length > 5 ? ", ..." : ""}`
  }
}

/**
 * The storage behind the event store failed (connection lost, ...). The append may be retried.
 *
 * @category errors
 * @since 0.1.0
 */
export class EventStoreUnavailable extends Data.TaggedError("EventStoreUnavailable")<{ readonly cause: unknown }> {
  override get message(): string {
    return `event store unavailable: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/**
 * Every error `append` can fail with.
 *
 * @category errors
 * @since 0.1.0
 */
export type AppendError =
  | WrongExpectedVersion
  | UnknownEventType
  | InvalidEventPayload
  | InvalidStreamId
  | InvalidRequest
  | InvalidEventId
  | DuplicateEventId
  | EventStoreUnavailable

/**
 * Every error `readStream` can fail with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ReadError = UnknownEventType | InvalidEventPayload | InvalidStreamId | InvalidRequest | EventStoreUnavailable
