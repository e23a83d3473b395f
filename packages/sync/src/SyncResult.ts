/**
 * The outcome of a perspective sync wait:
 *
 * - `Synced`: every awaited event was processed by the perspective.
 * - `TimedOut`: the timeout passed first (the read model may be stale).
 * - `NoPendingEvents`: nothing matched the filter, or everything matching was already processed.
 * - `DeadLettered`: an awaited event was moved to dead letters instead of applied. The wait ends at once (the
 *   event will never be applied unless retried), and `deadLettered` names it: the read model lacks it.
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
 * True when the read model has every awaited event: `Synced` or `NoPendingEvents`. `TimedOut` (may be stale)
 * and `DeadLettered` (lacks an event) are not fresh.
 *
 * @category predicates
 * @since 0.2.0
 */
export const isFresh = (self: SyncResult): boolean => self._tag === "Synced" || self._tag === "NoPendingEvents"

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
