/**
 * The outcome of a perspective sync wait:
 *
 * - `Synced`: every awaited event was processed by the perspective.
 * - `TimedOut`: the timeout passed first (the read model may be stale).
 * - `NoPendingEvents`: nothing matched the filter, or everything matching was already processed.
 *
 * Each carries the elapsed time, how many events were awaited, and the awaited events that were dead-lettered
 * instead of applied. A dead-lettered event ends the wait (it will never be applied), so a `Synced` result can
 * still name events the read model lacks: check `deadLettered` when that matters.
 *
 * @since 0.1.0
 */
import { Data, Duration } from "effect"

/**
 * The fields every outcome carries.
 *
 * @category models
 * @since 0.1.0
 */
export interface Fields {
  readonly elapsed: Duration.Duration
  readonly eventsAwaited: number
  /** Awaited events the perspective moved to dead letters instead of applying: the read model lacks them. */
  readonly deadLettered: ReadonlyArray<string>
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
