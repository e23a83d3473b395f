/**
 * The completion strategy port: how a worker reports perspective completions and failures to the coordinator.
 *
 * Two strategies ship with the worker (internal modules, chosen by `completionStrategy`): `BatchedCompletionStrategy` (the default: reports are held in memory and flushed once
 * per cycle, tracked pending -> sent -> acknowledged) and `InstantCompletionStrategy` (each report calls the
 * coordinator at once; nothing is ever pending).
 *
 * Acknowledgement is by item identity, not by count: several flushes may be in flight at once, and a count
 * ("the oldest N") would acknowledge the wrong items when they complete out of order. (The original library
 * counted.)
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type * as Perspective from "./Perspective.js"
import type { PerspectiveStatus } from "./PerspectiveStatus.js"

/**
 * A (stream, perspective) pair advanced: these work rows were applied and the cursor moves to `lastEventId`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveCompletion {
  /** Ids of exactly the work rows applied; only these are deleted. */
  readonly workIds: ReadonlyArray<string>
  readonly streamId: string
  readonly perspectiveName: string
  /** Absent when nothing was applied (only re-delivered duplicates are being cleared): the cursor stays. */
  readonly lastEventId?: string | undefined
  readonly status: PerspectiveStatus
  /**
   * The read-model row after the applied events. The coordinator writes it in the same transaction that
   * advances the cursor and deletes `workIds`, so a crash can never apply an event twice.
   */
  readonly model?: ModelWrite | undefined
  /**
   * The cursor's last event id as the cycle's fetch read it (`PendingEvent.cursorLastEventId`; `null`: no
   * cursor). When present, the coordinator commits only if the cursor is still there and not stream-locked, so
   * a purge, rewind or bootstrap in between wins; absent, only the stream lock is checked.
   */
  readonly cursorAtFetch?: string | null | undefined
}

/**
 * The new state of a (stream, perspective) read-model row.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelWrite {
  /** The encoded model (ignored when `action` is `"delete"` or `"purge"`). */
  readonly data: unknown
  readonly action: Perspective.Action
  /** Metadata of the last applied event (event id, type, correlation, ...). */
  readonly metadata: unknown
  /** Scope of the last applied event. */
  readonly scope: unknown
  /** How many events were applied. */
  readonly eventsApplied: number
}

/**
 * Applying a work row failed.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveFailure {
  readonly workId: string
  readonly streamId: string
  readonly perspectiveName: string
  readonly error: string
  /**
   * `false` when the event is not at fault (the stored model no longer decodes): the pair is marked Failed and
   * waits out the backoff, but the row's attempts do not grow, so it is never dead-lettered for it. Default `true`.
   */
  readonly countsAttempt?: boolean | undefined
}

/**
 * The part of the coordinator a strategy reports to (`WorkCoordinator` satisfies it).
 *
 * @category models
 * @since 0.1.0
 */
export interface CompletionReporter<E = never> {
  readonly reportCompletions: (completions: ReadonlyArray<PerspectiveCompletion>) => Effect.Effect<void, E>
  readonly reportFailures: (failures: ReadonlyArray<PerspectiveFailure>) => Effect.Effect<void, E>
}

/**
 * Where a tracked item is in its delivery.
 *
 * @category models
 * @since 0.1.0
 */
export type TrackedStatus = "pending" | "sent" | "acknowledged"

/**
 * A report held by a strategy. `id` is its identity for `markAsSent` / `markAsAcknowledged`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Tracked<A> {
  readonly id: number
  readonly item: A
  readonly status: TrackedStatus
  /** When it was last sent (epoch ms), absent while pending and never sent. */
  readonly sentAt?: number
  /** How many times it went back from sent to pending. */
  readonly retryCount: number
}

/**
 * The strategy's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly reportCompletion: <E>(completion: PerspectiveCompletion, reporter: CompletionReporter<E>) => Effect.Effect<void, E>
  readonly reportFailure: <E>(failure: PerspectiveFailure, reporter: CompletionReporter<E>) => Effect.Effect<void, E>
  /** Completions waiting to be sent (always empty for the instant strategy). */
  readonly pendingCompletions: Effect.Effect<ReadonlyArray<Tracked<PerspectiveCompletion>>>
  readonly pendingFailures: Effect.Effect<ReadonlyArray<Tracked<PerspectiveFailure>>>
  /** Marks exactly these items as sent, stamped with the current time. */
  readonly markAsSent: (
    completions: ReadonlyArray<Tracked<PerspectiveCompletion>>,
    failures: ReadonlyArray<Tracked<PerspectiveFailure>>
  ) => Effect.Effect<void>
  /** Marks exactly these items as acknowledged (a late acknowledgement of an item reset to pending counts); unknown ids are ignored. */
  readonly markAsAcknowledged: (
    completions: ReadonlyArray<Tracked<PerspectiveCompletion>>,
    failures: ReadonlyArray<Tracked<PerspectiveFailure>>
  ) => Effect.Effect<void>
  /** Forgets acknowledged items; returns how many were cleared. */
  readonly clearAcknowledged: Effect.Effect<number>
  /** Returns sent items whose acknowledgement is overdue to pending (backoff grows per retry); returns how many. */
  readonly resetStale: Effect.Effect<number>
  /**
   * One delivery cycle: send everything pending in one call per kind, acknowledge and clear it on success.
   * On failure the items stay sent and come back through `resetStale`.
   */
  readonly flush: <E>(reporter: CompletionReporter<E>) => Effect.Effect<{ readonly completions: number; readonly failures: number }, E>
}

/**
 * The strategy as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class CompletionStrategy extends Context.Service<CompletionStrategy, Shape>()("@whizbang/core/CompletionStrategy") {}
