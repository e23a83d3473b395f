/**
 * The port through which awaiters ask the database which events are still pending for a perspective — the
 * cross-instance path: an event this process does not track may be in flight on another instance.
 *
 * The default (no layer provided) knows nothing beyond this process and reports nothing pending, so the
 * in-process `SyncEventTracker` decides alone. `PgSyncInquiry.layer` provides the real port: answers from the
 * database, and a change signal fired by the completion transactions' `NOTIFY`.
 *
 * A perspective name given to the port is a base name or any version's key; `PgSyncInquiry` answers both for
 * every serving version of the base (see its "Perspective versions").
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import type { FailingEvent } from "./SyncResult.js"

/**
 * A pending event held by a failing one: itself, or an earlier event of its stream (the worker stops a stream at
 * its failing event until a retry succeeds).
 *
 * @category models
 * @since 0.4.0
 */
export interface HeldEvent {
  /** The pending event asked about. */
  readonly eventId: string
  readonly failing: FailingEvent
}

/**
 * The answer to "which of these events are still pending for the perspective?".
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingAnswer {
  /** Not yet processed (or not known to be): keep waiting for these. */
  readonly pendingEventIds: ReadonlyArray<string>
  /** Moved to dead letters instead of applied: not pending, but the read model lacks them. */
  readonly deadLetteredEventIds?: ReadonlyArray<string> | undefined
  /** Of the pending events, those held by a failing event (in retry backoff): they wait for a retry to succeed. */
  readonly failing?: ReadonlyArray<HeldEvent> | undefined
}

/**
 * Options of {@link SyncInquiryPortShape.pendingForStream}.
 *
 * @category models
 * @since 0.4.0
 */
export interface DiscoveryOptions {
  /**
   * With a stream: also its events of the perspective that are still in dead letters (neither retried nor
   * discarded), which the read model lacks. Default false.
   */
  readonly deadLettered?: boolean | undefined
}

/**
 * The port's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyncInquiryPortShape {
  /** Of `eventIds`, those the perspective has not processed yet (and those dead-lettered). */
  readonly pendingEventIds: (perspectiveName: string, eventIds: ReadonlyArray<string>) => Effect.Effect<PendingAnswer>
  /**
   * True when the port sees every committed event (a database). The awaiter then also re-checks events it
   * tracks in-process, so an event processed on another instance, or dead-lettered, ends the wait.
   * Default false: the port is consulted only about events the process does not track.
   */
  readonly authoritative?: boolean | undefined
  /**
   * The perspectives the service runs and the event types each handles. When present, a wait names an unknown
   * perspective or an impossible filter with a typed error at the call, and `EventCompletionAwaiter` asks about
   * every perspective. Absent (the default port): no such checks.
   */
  readonly perspectives?: ReadonlyMap<string, ReadonlySet<string>> | undefined
  /**
   * With an authoritative port: whether the in-process tracker's "processed" mark for `perspectiveName` may end a
   * wait without the database agreeing, once the wait had its first database answer. The mark is one version's
   * (the key this process runs) while a wait is for every serving version of the base name, so `PgSyncInquiry`
   * answers false for a base it ever saw served by versions. Absent: true.
   */
  readonly trustsTrackerMarks?: ((perspectiveName: string) => boolean) | undefined
  /**
   * Cross-scope discovery: the stream's events (of `eventTypes`; none or empty: every type) still pending for the
   * perspective; `streamId` undefined: of every stream. With `deadLettered`, also the stream's dead-lettered ones.
   */
  readonly pendingForStream?:
    | ((
        perspectiveName: string,
        streamId: string | undefined,
        eventTypes?: ReadonlyArray<string>,
        options?: DiscoveryOptions
      ) => Effect.Effect<ReadonlyArray<string>>)
    | undefined
  /**
   * A counter of "something may have been processed" signals (NOTIFY). Read it before a check, then
   * `awaitChangeAfter(counter)` returns as soon as a later signal arrived — a signal between the check and the
   * wait is not lost. Absent: the awaiter only polls.
   */
  readonly changes?:
    | {
        readonly current: Effect.Effect<number>
        readonly awaitChangeAfter: (generation: number) => Effect.Effect<void>
      }
    | undefined
  /**
   * Parks until a change signal after `generation` (a value of `changes.current`) has settled at least one of
   * `eventIds` for the perspective — processed, dead-lettered or held by a failing event, by the same verdicts as
   * `pendingEventIds` — and returns the answer for `eventIds`. Waits it does not settle are not woken, so a signal
   * costs one check for all parked waits instead of one per wait. `unanswered`: of `eventIds`, those the wait has
   * had no database answer about yet (a port that cannot tell whether a payload's key alone serves the perspective
   * asks before settling them; `PgSyncInquiry` can tell). Absent: the awaiter wakes on every change and asks
   * `pendingEventIds` itself.
   */
  readonly awaitSettled?:
    | ((
        perspectiveName: string,
        eventIds: ReadonlyArray<string>,
        generation: number,
        unanswered?: ReadonlyArray<string>
      ) => Effect.Effect<SettledAnswer>)
    | undefined
}

/**
 * What {@link SyncInquiryPortShape.awaitSettled} returns: the answer for the parked ids, and the change counter
 * the answer is as fresh as (park again with it).
 *
 * @category models
 * @since 0.1.0
 */
export interface SettledAnswer {
  readonly pendingEventIds: ReadonlyArray<string>
  readonly deadLetteredEventIds: ReadonlyArray<string>
  /** Of the pending ids, those held by a failing event. */
  readonly failing?: ReadonlyArray<HeldEvent> | undefined
  readonly generation: number
}

/**
 * The port, with a no-op default: nothing pending beyond what the in-process tracker knows.
 *
 * @category references
 * @since 0.1.0
 */
export const SyncInquiryPort: Context.Reference<SyncInquiryPortShape> = Context.Reference("@whizbang/sync/SyncInquiryPort", {
  defaultValue: (): SyncInquiryPortShape => ({ pendingEventIds: () => Effect.succeed({ pendingEventIds: [] }) })
})
