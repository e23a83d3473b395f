/**
 * The `awaitPerspectiveSync` rules of a receptor, as the dispatcher applies them before the handler runs.
 *
 * - Only events trigger sync: a command (or any non-event message) skips it, since perspectives only process
 *   events and the wait could only time out.
 * - Timeout: `timeoutMilliseconds` absent or -1 means the global default (5000 ms unless configured);
 *   any explicit value wins, 0 included (then only what is already processed counts).
 * - What is awaited (cross-scope: the event was emitted in another scope): the incoming event itself, when the
 *   declaration lists no event types or lists its type, plus the stream's pending events of the listed types
 *   (all types when none are listed), from this process's tracker and, with `PgSyncInquiry`, the database.
 * - Fire behaviour: `FireOnSuccess` (default) fails with `PerspectiveSyncTimeoutError` on a timeout and the
 *   handler does not run; `FireAlways` runs it, with the outcome in `SyncContext.Current`.
 *
 * @since 0.1.0
 */
import type { Envelope, Receptor } from "@whizbang/core"
import { Effect, Option } from "effect"
import { PerspectiveSyncAwaiter } from "./PerspectiveSyncAwaiter.js"
import * as SyncContext from "./SyncContext.js"
import { type InlineStageSyncError, PerspectiveSyncTimeoutError } from "./SyncError.js"

/**
 * The global default timeout of `awaitPerspectiveSync`: 5000 ms.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultTimeoutMilliseconds = 5000

/**
 * The timeout a declaration waits: its own when given (0 included), the default for absent or -1.
 *
 * @category rules
 * @since 0.1.0
 */
export const effectiveTimeoutMilliseconds = (
  declaration: Receptor.AwaitPerspectiveSync,
  defaultMilliseconds: number = defaultTimeoutMilliseconds
): number =>
  declaration.timeoutMilliseconds === undefined || declaration.timeoutMilliseconds === -1
    ? defaultMilliseconds
    : declaration.timeoutMilliseconds

/**
 * `"FireOnSuccess"` unless declared otherwise.
 *
 * @category rules
 * @since 0.1.0
 */
export const fireBehavior = (declaration: Receptor.AwaitPerspectiveSync): "FireOnSuccess" | "FireAlways" =>
  declaration.fireBehavior ?? "FireOnSuccess"

/**
 * Whether the incoming event itself is awaited: when no event types are listed, or its type is listed.
 *
 * @category rules
 * @since 0.1.0
 */
export const awaitsIncomingEvent = (declaration: Receptor.AwaitPerspectiveSync, eventType: string): boolean =>
  declaration.eventTypes === undefined || declaration.eventTypes.length === 0 || declaration.eventTypes.includes(eventType)

/**
 * The context the handler sees with several declarations: a timeout first, then the first one.
 *
 * @category rules
 * @since 0.1.0
 */
export const worst = (contexts: ReadonlyArray<SyncContext.SyncContext>): Option.Option<SyncContext.SyncContext> =>
  Option.orElse(Option.fromUndefinedOr(contexts.find(SyncContext.isTimedOut)), () => Option.fromUndefinedOr(contexts[0]))

/**
 * Runs every declaration of `receptor` for an incoming event, in order; the contexts for its handler.
 *
 * @category waiting
 * @since 0.1.0
 */
export const awaitFor = (
  receptor: Receptor.Receptor,
  envelope: Envelope.Envelope,
  defaultMilliseconds: number
): Effect.Effect<ReadonlyArray<SyncContext.SyncContext>, PerspectiveSyncTimeoutError | InlineStageSyncError, PerspectiveSyncAwaiter> =>
  Effect.gen(function*() {
    if (receptor.awaitPerspectiveSync.length === 0) return []
    const awaiter = yield* PerspectiveSyncAwaiter
    const contexts: Array<SyncContext.SyncContext> = []
    for (const declaration of receptor.awaitPerspectiveSync) {
      const timeout = effectiveTimeoutMilliseconds(declaration, defaultMilliseconds)
      const result = yield* awaiter.waitForStreamAsync(declaration.perspective, envelope.streamId, {
        eventId: awaitsIncomingEvent(declaration, envelope.eventType) ? envelope.eventId : undefined,
        andStreamPending: true,
        eventTypes: declaration.eventTypes,
        timeout
      })
      if (result._tag === "TimedOut" && fireBehavior(declaration) === "FireOnSuccess") {
        return yield* new PerspectiveSyncTimeoutError({
          receptor: receptor.name,
          perspectiveName: declaration.perspective,
          streamId: envelope.streamId,
          eventsAwaited: result.eventsAwaited,
          timeoutMilliseconds: timeout
        })
      }
      contexts.push(SyncContext.fromResult(result, { perspectiveName: declaration.perspective, streamId: envelope.streamId }))
    }
    return contexts
  })
