/**
 * The typed errors of `@whizbang/sync`. Each error carries a `reason` union, so callers (and tests) branch on
 * `error.reason._tag` rather than on message text.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

const show = (value: unknown): string => JSON.stringify(String(value).slice(0, 100))

/**
 * Why a {@link SyncFilterError} was raised.
 *
 * @category models
 * @since 0.1.0
 */
export type SyncFilterIssue =
  | { readonly _tag: "InvalidStreamId"; readonly streamId: unknown }
  | { readonly _tag: "MissingEventTypes" }
  | { readonly _tag: "InvalidEventType"; readonly eventType: unknown }
  | { readonly _tag: "InvalidTimeout"; readonly timeout: unknown }

/**
 * A sync filter was built from bad input: a stream id that is not a UUID, no event types, an empty event type,
 * or a negative timeout. Raised by `build`, naming the first problem.
 *
 * @category errors
 * @since 0.1.0
 */
export class SyncFilterError extends Data.TaggedError("SyncFilterError")<{ readonly reason: SyncFilterIssue }> {
  override get message(): string {
    const reason = this.reason
    switch (reason._tag) {
      case "InvalidStreamId":
        return `stream id ${show(reason.streamId)} is not a UUID`
      case "MissingEventTypes":
        return "forEventTypes / andEventTypes / orEventTypes need at least one event type"
      case "InvalidEventType":
        return `event type ${show(reason.eventType)} must be a non-empty string`
      case "InvalidTimeout":
        return `timeout ${show(reason.timeout)} must be zero or positive`
    }
  }
}

/**
 * Why a {@link TrackedEventTypeRegistryError} was raised.
 *
 * @category models
 * @since 0.1.0
 */
export type TrackedEventTypeIssue =
  | { readonly _tag: "InvalidEventType"; readonly eventType: unknown }
  | { readonly _tag: "InvalidPerspectiveName"; readonly eventType: string; readonly perspectiveName: unknown }

/**
 * A tracked event-type mapping with an empty or non-string event type or perspective name.
 *
 * @category errors
 * @since 0.1.0
 */
export class TrackedEventTypeRegistryError extends Data.TaggedError("TrackedEventTypeRegistryError")<{
  readonly reason: TrackedEventTypeIssue
}> {
  override get message(): string {
    const reason = this.reason
    return reason._tag === "InvalidEventType"
      ? `event type ${show(reason.eventType)} must be a non-empty string`
      : `perspective name ${show(reason.perspectiveName)} for ${show(reason.eventType)} must be a non-empty string`
  }
}

/**
 * A perspective sync wait was started inside an inline lifecycle stage. The worker that would process the
 * awaited events is the one running the stage, so the wait could only time out (a deadlock bounded by the
 * timeout). Fire the receptor at a detached stage instead.
 *
 * @category errors
 * @since 0.1.0
 */
export class InlineStageSyncError extends Data.TaggedError("InlineStageSyncError")<{
  readonly perspectiveName: string
}> {
  override get message(): string {
    return `cannot wait for perspective ${show(this.perspectiveName)} inside an inline lifecycle stage (it would deadlock); use a detached stage`
  }
}
