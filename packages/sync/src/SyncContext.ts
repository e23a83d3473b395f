/**
 * What a handler learns about the perspective sync that ran before it: the outcome, how many events were
 * awaited and how long it took. With "fire always" receptors the handler runs after a timeout too, and this is
 * how it knows its read may be stale.
 *
 * @since 0.1.0
 */
import { Duration } from "effect"
import type { SyncOutcome, SyncResult } from "./SyncResult.js"

/**
 * The sync context.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncContext {
  readonly perspectiveName: string
  readonly streamId?: string | undefined
  readonly outcome: SyncOutcome
  /** Default 0. */
  readonly eventsAwaited: number
  /** Default zero. */
  readonly elapsed: Duration.Duration
  /** Set on timeout, absent on success. */
  readonly failureReason?: string | undefined
}

/**
 * Makes a context; `eventsAwaited` and `elapsed` default to zero.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  fields: Omit<SyncContext, "eventsAwaited" | "elapsed"> & {
    readonly eventsAwaited?: number | undefined
    readonly elapsed?: Duration.Duration | undefined
  }
): SyncContext => ({ ...fields, eventsAwaited: fields.eventsAwaited ?? 0, elapsed: fields.elapsed ?? Duration.zero })

/**
 * The context of a finished wait. A timeout gets a failure reason naming the perspective and the time waited.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromResult = (
  result: SyncResult,
  target: { readonly perspectiveName: string; readonly streamId?: string | undefined }
): SyncContext =>
  make({
    ...target,
    outcome: result._tag,
    eventsAwaited: result.eventsAwaited,
    elapsed: result.elapsed,
    ...(result._tag === "TimedOut"
      ? {
        failureReason: `perspective ${target.perspectiveName} did not process ${result.eventsAwaited} event(s) within ${
          Duration.toMillis(result.elapsed)
        } ms`
      }
      : {})
  })

/**
 * True only for `Synced`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isSuccess = (self: SyncContext): boolean => self.outcome === "Synced"

/**
 * True only for `TimedOut`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isTimedOut = (self: SyncContext): boolean => self.outcome === "TimedOut"
