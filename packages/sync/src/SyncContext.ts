/**
 * What a handler learns about the perspective sync that ran before it: the outcome, how many events were
 * awaited and how long it took. With "fire always" receptors the handler runs after a timeout too, and this is
 * how it knows its read may be stale.
 *
 * The dispatcher provides the context of a receptor's sync to its handler through the {@link Current}
 * reference (the Effect analogue of a sync-context accessor): `yield* SyncContext.Current` inside the handler.
 *
 * @since 0.1.0
 */
import { Context, Duration, Option } from "effect"
import { describeFailing, type FailingEvent, type SyncOutcome, type SyncResult } from "./SyncResult.js"

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
  /** Set on a timeout, a dead letter or a failing event, absent on success. */
  readonly failureReason?: string | undefined
  /** Awaited events that were dead-lettered instead of applied (the read model lacks them). Default empty. */
  readonly deadLettered: ReadonlyArray<string>
  /** With `Failing`: the failing events holding awaited ones (in retry backoff). Default empty. */
  readonly failing: ReadonlyArray<FailingEvent>
}

/**
 * Makes a context; `eventsAwaited` and `elapsed` default to zero.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  fields: Omit<SyncContext, "eventsAwaited" | "elapsed" | "deadLettered" | "failing"> & {
    readonly eventsAwaited?: number | undefined
    readonly elapsed?: Duration.Duration | undefined
    readonly deadLettered?: ReadonlyArray<string> | undefined
    readonly failing?: ReadonlyArray<FailingEvent> | undefined
  }
): SyncContext => ({
  ...fields,
  eventsAwaited: fields.eventsAwaited ?? 0,
  elapsed: fields.elapsed ?? Duration.zero,
  deadLettered: fields.deadLettered ?? [],
  failing: fields.failing ?? []
})

/**
 * The context of a finished wait. A timeout gets a failure reason naming the perspective and the time waited; a
 * dead letter, the events; a failing event, the event, its attempts, its next attempt and its error.
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
    deadLettered: result.deadLettered,
    ...(result._tag === "TimedOut"
      ? {
          failureReason: `perspective ${target.perspectiveName} did not process ${result.eventsAwaited} event(s) within ${Duration.toMillis(
            result.elapsed
          )} ms`
        }
      : result._tag === "DeadLettered"
        ? { failureReason: `perspective ${target.perspectiveName} dead-lettered ${result.deadLettered.join(", ")}` }
        : result._tag === "Failing"
          ? {
              failing: result.failing,
              failureReason: `perspective ${target.perspectiveName} is failing: ${result.failing.map(describeFailing).join("; ")}`
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

/**
 * True only for `DeadLettered` (the read model lacks an awaited event).
 *
 * @category predicates
 * @since 0.2.0
 */
export const isDeadLettered = (self: SyncContext): boolean => self.outcome === "DeadLettered"

/**
 * True only for `Failing` (an awaited event is held by a failing one, in retry backoff).
 *
 * @category predicates
 * @since 0.4.0
 */
export const isFailing = (self: SyncContext): boolean => self.outcome === "Failing"

/**
 * The sync context of the running receptor handler: `Some` inside a handler the dispatcher ran after an
 * `awaitPerspectiveSync` wait, `None` elsewhere. With several declarations it is the least successful one
 * (a dead letter, then a failing event, then a timeout); {@link All} has every one.
 *
 * @category references
 * @since 0.1.0
 */
export const Current: Context.Reference<Option.Option<SyncContext>> = Context.Reference("@whizbang/sync/SyncContext", {
  defaultValue: () => Option.none()
})

/**
 * Every sync context of the running handler, one per `awaitPerspectiveSync` declaration, in declaration order.
 *
 * @category references
 * @since 0.1.0
 */
export const All: Context.Reference<ReadonlyArray<SyncContext>> = Context.Reference<ReadonlyArray<SyncContext>>(
  "@whizbang/sync/SyncContext/All",
  {
    defaultValue: () => []
  }
)
