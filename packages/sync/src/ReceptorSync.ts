/**
 * The `awaitPerspectiveSync` rules of a receptor, as the dispatcher applies them before the handler runs.
 *
 * - Only events trigger sync: a command (or any non-event message) skips it, since perspectives only process
 *   events and the wait could only time out.
 * - Timeout: `timeout` absent means the global default (5 s unless configured); any explicit value wins,
 *   zero included (then only what is already processed counts).
 * - What is awaited (cross-scope: the event was emitted in another scope): the incoming event itself, when the
 *   declaration lists no event types or lists its type, plus the stream's pending events of the listed types
 *   (all types when none are listed), from this process's tracker and, with `PgSyncInquiry`, the database.
 * - Where: the dispatcher applies them before it runs a handler; the perspective worker does too for the
 *   receptors it fires at lifecycle stages, through the sync gate that `PerspectiveSyncAwaiter.layer` provides
 *   (core's `Receptor.SyncGate`). A worker stage that runs inline cannot wait (it would wait on the worker
 *   running it): `Receptor.make` refuses that combination.
 * - Fire behaviour: `FireOnSuccess` (default) fails with `PerspectiveSyncTimeoutError` on a timeout,
 *   `PerspectiveSyncDeadLetteredError` when an awaited event was dead-lettered, or `PerspectiveSyncFailingError`
 *   when the perspective is failing at an awaited event or an earlier one of its stream (in retry backoff), and
 *   the handler does not run; `FireAlways` runs it, with the outcome in `SyncContext.Current`.
 *
 * @since 0.1.0
 */
import type { Envelope, Receptor } from "@whizbang/core"
import { type Duration, Effect } from "effect"
import * as Rules from "./internal/receptorRules.js"
import { PerspectiveSyncAwaiter } from "./PerspectiveSyncAwaiter.js"
import type * as SyncContext from "./SyncContext.js"

/**
 * The global default timeout of `awaitPerspectiveSync`: 5 seconds.
 *
 * @category constants
 * @since 0.2.0
 */
export const defaultTimeout: Duration.Duration = Rules.defaultTimeout

/**
 * The timeout a declaration waits: its own when given (zero included), the default when absent.
 *
 * @category rules
 * @since 0.2.0
 */
export const effectiveTimeout: (declaration: Receptor.AwaitPerspectiveSync, fallback?: Duration.Input) => Duration.Duration =
  Rules.effectiveTimeout

/**
 * `"FireOnSuccess"` unless declared otherwise.
 *
 * @category rules
 * @since 0.1.0
 */
export const fireBehavior: (declaration: Receptor.AwaitPerspectiveSync) => "FireOnSuccess" | "FireAlways" = Rules.fireBehavior

/**
 * Whether the incoming event itself is awaited: when no event types are listed, or its type is listed.
 *
 * @category rules
 * @since 0.1.0
 */
export const awaitsIncomingEvent: (declaration: Receptor.AwaitPerspectiveSync, eventType: string) => boolean = Rules.awaitsIncomingEvent

/**
 * The context the handler sees with several declarations: the least successful first (a dead letter, then a
 * failing event, then a timeout), else the first one.
 *
 * @category rules
 * @since 0.1.0
 */
export const worst = Rules.worst

/**
 * Errors of a receptor's sync waits.
 *
 * @category models
 * @since 0.2.0
 */
export type ReceptorSyncError = Rules.ReceptorSyncError

/**
 * Runs every declaration of `receptor` for an incoming event, in order; the contexts for its handler.
 *
 * @category waiting
 * @since 0.1.0
 */
export const awaitFor = (
  receptor: Receptor.Receptor,
  envelope: Envelope.Envelope,
  defaultTimeoutInput: Duration.Input = defaultTimeout
): Effect.Effect<ReadonlyArray<SyncContext.SyncContext>, ReceptorSyncError, PerspectiveSyncAwaiter> =>
  Effect.flatMap(PerspectiveSyncAwaiter, (awaiter) => Rules.awaitWith(awaiter, receptor, envelope, defaultTimeoutInput))
