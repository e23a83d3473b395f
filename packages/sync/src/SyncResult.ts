/**
 * The outcome of a perspective sync wait:
 *
 * - `Synced`: every awaited event was processed by the perspective.
 * - `TimedOut`: the timeout passed first (the read model may be stale).
 * - `NoPendingEvents`: nothing matched the filter, or everything matching was already processed.
 * - `DeadLettered`: an awaited event was moved to dead letters instead of applied. The wait ends at once (the
 *   event will never be applied unless retried), and `deadLettered` names it: the read model lacks it.
 * - `Failing`: the perspective is failing at an event the wait covers — the awaited event itself or an earlier
 *   event of its stream (the worker stops a stream at its failing event) — and retries it with backoff. The wait
 *   ends as soon as the database shows the failure; `failing` names the event, its error, its attempts and the
 *   next attempt. The read model lacks the events still `pending`, at least until a retry succeeds.
 *
 * Only `Synced` and `NoPendingEvents` mean "the read model has everything awaited" ({@link isFresh}).
 * Each outcome carries the elapsed time, how many events were awaited, the dead-lettered events and, when the
 * wait was asked for them (`includeProcessedEventIds`), the ids known processed.
 *
 * @since 0.1.0
 */
import { Data, type Duration } from "effect"

/**
 * The fields every outcome carries.
 *
 * @category models
 * @since 0.1.0
 */
export interface Fields {
  readonly elapsed: Duration.Duration
  readonly eventsAwaited: number
  /** Awaited events a perspective moved to dead letters instead of applying: the read model lacks them. */
  readonly deadLettered: ReadonlyArray<string>
  /** Awaited events still pending when the wait ended (empty unless `TimedOut` or `DeadLettered`). */
  readonly pending: ReadonlyArray<string>
  /** With `includeProcessedEventIds`: the awaited events known processed when the wait ended. */
  readonly processedEventIds?: ReadonlyArray<string> | undefined
}

/**
 * An event a perspective failed to apply and retries with backoff: the first unprocessed event of its stream in the
 * perspective's queue, which holds the stream's later events.
 *
 * @category models
 * @since 0.4.0
 */
export interface FailingEvent {
  /** The failing event (the stream's head in the perspective's queue; an awaited event or one before it). */
  readonly eventId: string
  readonly streamId: string
  /** The perspective (version key) that fails it. */
  readonly perspectiveName: string
  /** The error of its last attempt. */
  readonly error: string
  /** Failed attempts so far (a failure that was not the event's own, e.g. a stored model that no longer decodes, does not count). */
  readonly attempts: number
  /** When the worker may try it again (in the past: a retry is due or running); undefined when unknown. */
  readonly nextAttemptAt: Date | undefined
}

/**
 * The fields of `Failing`: the common ones and the failing events (at least one).
 *
 * @category models
 * @since 0.4.0
 */
export interface FailingFields extends Fields {
  readonly failing: ReadonlyArray<FailingEvent>
}

/**
 * The outcome union.
 *
 * @category models
 * @since 0.1.0
 */
export type SyncResult = Data.TaggedEnum<{
  Synced: Fields
  TimedOut: Fields
  NoPendingEvents: Fields
  DeadLettered: Fields
  Failing: FailingFields
}>

/**
 * The outcome's tag.
 *
 * @category models
 * @since 0.1.0
 */
export type SyncOutcome = SyncResult["_tag"]

const ctors = Data.taggedEnum<SyncResult>()

/**
 * @category constructors
 * @since 0.1.0
 */
export const Synced = ctors.Synced

/**
 * @category constructors
 * @since 0.1.0
 */
export const TimedOut = ctors.TimedOut

/**
 * @category constructors
 * @since 0.1.0
 */
export const NoPendingEvents = ctors.NoPendingEvents

/**
 * @category constructors
 * @since 0.2.0
 */
export const DeadLettered = ctors.DeadLettered

/**
 * @category constructors
 * @since 0.4.0
 */
export const Failing = ctors.Failing

/**
 * True when the read model has every awaited event: `Synced` or `NoPendingEvents`. `TimedOut` (may be stale),
 * `DeadLettered` (lacks an event) and `Failing` (lacks the events its failing event holds) are not fresh.
 *
 * @category predicates
 * @since 0.2.0
 */
export const isFresh = (self: SyncResult): boolean => self._tag === "Synced" || self._tag === "NoPendingEvents"

/**
 * One failing event in words: its id and stream, the perspective, the attempts, the next attempt and the error.
 *
 * @category formatting
 * @since 0.4.0
 */
export const describeFailing = (failing: FailingEvent): string =>
  `event ${failing.eventId} of stream ${failing.streamId} in ${failing.perspectiveName}: ${failing.attempts} failed attempt(s)${
    failing.nextAttemptAt === undefined ? "" : `, next at ${failing.nextAttemptAt.toISOString()}`
  }: ${failing.error}`

/**
 * Type guard by tag: `SyncResult.$is("Synced")(result)`.
 *
 * @category guards
 * @since 0.1.0
 */
export const $is = ctors.$is

/**
 * Exhaustive match on the outcome.
 *
 * @category pattern matching
 * @since 0.1.0
 */
export const $match = ctors.$match
