/**
 * The typed errors of `@whizbang/sync`. Each error carries a `reason` union, so callers (and tests) branch on
 * `error.reason._tag` rather than on message text.
 *
 * @since 0.1.0
 */
import { Data, Duration } from "effect"
import { describeFailing, type FailingEvent } from "./SyncResult.js"

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
  /** An `and` of conditions no event meets at once (two different streams, event types with none in common). */
  | { readonly _tag: "MatchesNothing"; readonly filter: string }

/**
 * A sync filter was built from bad input: a stream id that is not a UUID, no event types, an empty event type,
 * a negative timeout, or conditions joined so that no event can match (`forStream(a).andStream(b)`,
 * `forEventTypes("A").andEventTypes("B")`). Raised by `build`, naming the first problem.
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
      case "MatchesNothing":
        return `the filter ${reason.filter} can match no event: it joins with AND two different streams, or event types with none in common`
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

/**
 * A receptor declared `awaitPerspectiveSync` with fire behaviour `FireOnSuccess` (the default), and the
 * perspective did not process the awaited events in time: the handler was not run. With `perspectiveName`
 * undefined, a dispatch's wait for all perspectives timed out (the handler did run).
 *
 * @category errors
 * @since 0.1.0
 */
export class PerspectiveSyncTimeoutError extends Data.TaggedError("PerspectiveSyncTimeoutError")<{
  readonly receptor: string
  readonly perspectiveName: string | undefined
  readonly streamId: string | undefined
  readonly eventsAwaited: number
  readonly timeout: Duration.Duration
  /** The awaited events still pending at the timeout. */
  readonly pending: ReadonlyArray<string>
}> {
  override get message(): string {
    const what = this.perspectiveName === undefined ? "all perspectives" : `perspective ${show(this.perspectiveName)}`
    return `receptor ${show(this.receptor)}: ${what} did not process ${this.eventsAwaited} event(s) within ${Duration.toMillis(
      this.timeout
    )} ms (still pending: ${this.pending.slice(0, 10).join(", ") || "none known"})`
  }
}

/**
 * A receptor's `awaitPerspectiveSync` (fire behaviour `FireOnSuccess`), or a dispatch's wait for all
 * perspectives, ended because an awaited event was dead-lettered: the read model will not have it, so the
 * handler did not run (or, for `waitForPerspectives`, its result is not returned as complete).
 *
 * @category errors
 * @since 0.2.0
 */
export class PerspectiveSyncDeadLetteredError extends Data.TaggedError("PerspectiveSyncDeadLetteredError")<{
  readonly receptor: string
  readonly perspectiveName: string | undefined
  readonly deadLettered: ReadonlyArray<string>
}> {
  override get message(): string {
    const what = this.perspectiveName === undefined ? "a perspective" : `perspective ${show(this.perspectiveName)}`
    return `receptor ${show(this.receptor)}: ${what} dead-lettered event(s) ${this.deadLettered.join(", ")}; the read model lacks them`
  }
}

/**
 * A receptor's `awaitPerspectiveSync` (fire behaviour `FireOnSuccess`), or a dispatch's wait for all
 * perspectives, ended because a perspective is failing at an awaited event or at an earlier event of its stream
 * (in retry backoff): the read model lacks the awaited events until a retry succeeds, so the handler did not run
 * (or, for `waitForPerspectives`, its result is not returned as complete).
 *
 * @category errors
 * @since 0.4.0
 */
export class PerspectiveSyncFailingError extends Data.TaggedError("PerspectiveSyncFailingError")<{
  readonly receptor: string
  readonly perspectiveName: string | undefined
  readonly failing: ReadonlyArray<FailingEvent>
  /** The awaited events still pending (held). */
  readonly pending: ReadonlyArray<string>
}> {
  override get message(): string {
    const what = this.perspectiveName === undefined ? "a perspective" : `perspective ${show(this.perspectiveName)}`
    return `receptor ${show(this.receptor)}: ${what} is failing (${this.failing.map(describeFailing).join("; ")}); the read model lacks ${
      this.pending.length
    } awaited event(s) until a retry succeeds`
  }
}

/**
 * Why a {@link SyncArgumentError} was raised.
 *
 * @category models
 * @since 0.2.0
 */
export type SyncArgumentIssue =
  | { readonly _tag: "InvalidEventId"; readonly eventId: unknown }
  | { readonly _tag: "InvalidStreamId"; readonly streamId: unknown }
  | { readonly _tag: "UnknownPerspective"; readonly perspectiveName: unknown; readonly known: ReadonlyArray<string> }
  | { readonly _tag: "ImpossibleFilter"; readonly perspectiveName: string; readonly eventTypes: ReadonlyArray<string> }
  | { readonly _tag: "InvalidTimeout"; readonly timeout: unknown }
  /** The filter selects only events of the current scope (`currentScope()`, `andCurrentScope()`), and none is open. */
  | { readonly _tag: "NoScope"; readonly perspectiveName: string }

/**
 * A wait was asked with arguments that can never be satisfied: an event or stream id that is not a UUID, a
 * perspective the service does not run, a filter that can match no event the perspective handles, a negative
 * timeout, or a filter that selects only the current scope's events outside a scope (it would match nothing and
 * answer `NoPendingEvents` over a row that may lack the caller's write). Raised at the call, before any waiting.
 *
 * @category errors
 * @since 0.2.0
 */
export class SyncArgumentError extends Data.TaggedError("SyncArgumentError")<{ readonly reason: SyncArgumentIssue }> {
  override get message(): string {
    const reason = this.reason
    switch (reason._tag) {
      case "InvalidEventId":
        return `event id ${show(reason.eventId)} is not a UUID`
      case "InvalidStreamId":
        return `stream id ${show(reason.streamId)} is not a UUID`
      case "UnknownPerspective":
        return `no perspective named ${show(reason.perspectiveName)} (known: ${reason.known.join(", ") || "none"})`
      case "ImpossibleFilter":
        return `the filter can match no event perspective ${show(reason.perspectiveName)} handles (it names only ${reason.eventTypes.join(
          ", "
        )})`
      case "InvalidTimeout":
        return `timeout ${show(reason.timeout)} must be a zero or positive duration`
      case "NoScope":
        return `the wait for perspective ${show(
          reason.perspectiveName
        )} selects only the current scope's events, and no scope is open: run the code that appends and waits inside ScopedEventTracker.withScope(...), or wait with SyncFilter.forStream(id)`
    }
  }
}

/**
 * Why a {@link DispatchError} was raised.
 *
 * @category models
 * @since 0.1.0
 */
export type DispatchIssue =
  | { readonly _tag: "NoReceptor"; readonly messageType: string }
  | { readonly _tag: "AmbiguousReceptor"; readonly messageType: string; readonly receptors: ReadonlyArray<string> }

/**
 * No receptor handles the message type, or (for `localInvoke`, which returns one result) several do.
 *
 * @category errors
 * @since 0.1.0
 */
export class DispatchError extends Data.TaggedError("DispatchError")<{ readonly reason: DispatchIssue }> {
  override get message(): string {
    const reason = this.reason
    return reason._tag === "NoReceptor"
      ? `no receptor handles ${show(reason.messageType)}`
      : `${reason.receptors.length} receptors handle ${show(reason.messageType)} (${reason.receptors.join(", ")}); localInvoke needs exactly one`
  }
}

/**
 * A receptor's handler failed; `cause` is its error.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReceptorFailed extends Data.TaggedError("ReceptorFailed")<{ readonly receptor: string; readonly cause: unknown }> {
  override get message(): string {
    return `receptor ${show(this.receptor)} failed: ${this.cause instanceof Error ? this.cause.message : show(this.cause)}`
  }
}
