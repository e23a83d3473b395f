/**
 * The `awaitPerspectiveSync` rules and waits (see `ReceptorSync`), free of the awaiter service so the awaiter's
 * layer can build the worker's sync gate from them.
 *
 * @internal
 */
import type { Envelope, Receptor } from "@whizbang/core"
import { Duration, Effect, Option } from "effect"
import type { PerspectiveSyncAwaiterShape } from "../PerspectiveSyncAwaiter.js"
import * as SyncContext from "../SyncContext.js"
import {
  type InlineStageSyncError,
  PerspectiveSyncDeadLetteredError,
  PerspectiveSyncFailingError,
  PerspectiveSyncTimeoutError,
  type SyncArgumentError
} from "../SyncError.js"

/**
 * The global default timeout of `awaitPerspectiveSync`: 5 seconds.
 *
 * @category constants
 * @since 0.2.0
 */
export const defaultTimeout: Duration.Duration = Duration.seconds(5)

/**
 * The timeout a declaration waits: its own when given (zero included), the default when absent.
 *
 * @category rules
 * @since 0.2.0
 */
export const effectiveTimeout = (
  declaration: Receptor.AwaitPerspectiveSync,
  fallback: Duration.Input = defaultTimeout
): Duration.Duration => Duration.fromInputUnsafe(declaration.timeout ?? fallback)

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
 * The context the handler sees with several declarations: the least successful first (a dead letter, then a
 * failing event, then a timeout), else the first one.
 *
 * @category rules
 * @since 0.1.0
 */
export const worst = (contexts: ReadonlyArray<SyncContext.SyncContext>): Option.Option<SyncContext.SyncContext> =>
  Option.orElse(
    Option.fromUndefinedOr(
      contexts.find(SyncContext.isDeadLettered) ?? contexts.find(SyncContext.isFailing) ?? contexts.find(SyncContext.isTimedOut)
    ),
    () => Option.fromUndefinedOr(contexts[0])
  )

/**
 * Errors of a receptor's sync waits.
 *
 * @category models
 * @since 0.2.0
 */
export type ReceptorSyncError =
  | PerspectiveSyncTimeoutError
  | PerspectiveSyncDeadLetteredError
  | PerspectiveSyncFailingError
  | InlineStageSyncError
  | SyncArgumentError

/**
 * Runs every declaration of `receptor` for an incoming event, in order; the contexts for its handler.
 *
 * @internal
 */
export const awaitWith = (
  awaiter: PerspectiveSyncAwaiterShape,
  receptor: Receptor.Receptor,
  envelope: Envelope.Envelope,
  defaultTimeoutInput: Duration.Input = defaultTimeout
): Effect.Effect<ReadonlyArray<SyncContext.SyncContext>, ReceptorSyncError> =>
  Effect.gen(function* () {
    if (receptor.awaitPerspectiveSync.length === 0) return []
    const contexts: Array<SyncContext.SyncContext> = []
    for (const declaration of receptor.awaitPerspectiveSync) {
      const timeout = effectiveTimeout(declaration, defaultTimeoutInput)
      const result = yield* awaiter.waitForStream(declaration.perspective, envelope.streamId, {
        eventId: awaitsIncomingEvent(declaration, envelope.eventType) ? envelope.eventId : undefined,
        andStreamPending: true,
        eventTypes: declaration.eventTypes,
        timeout
      })
      if (fireBehavior(declaration) === "FireOnSuccess") {
        if (result._tag === "TimedOut") {
          return yield* new PerspectiveSyncTimeoutError({
            receptor: receptor.name,
            perspectiveName: declaration.perspective,
            streamId: envelope.streamId,
            eventsAwaited: result.eventsAwaited,
            timeout,
            pending: result.pending
          })
        }
        if (result._tag === "DeadLettered") {
          return yield* new PerspectiveSyncDeadLetteredError({
            receptor: receptor.name,
            perspectiveName: declaration.perspective,
            deadLettered: result.deadLettered
          })
        }
        // Like a dead letter: the read model lacks an awaited event (until a retry succeeds), so the handler waits.
        if (result._tag === "Failing") {
          return yield* new PerspectiveSyncFailingError({
            receptor: receptor.name,
            perspectiveName: declaration.perspective,
            failing: result.failing,
            pending: result.pending
          })
        }
      }
      contexts.push(SyncContext.fromResult(result, { perspectiveName: declaration.perspective, streamId: envelope.streamId }))
    }
    return contexts
  })

/**
 * The gate the perspective worker runs its receptors through: the waits, then the handler with its sync context.
 *
 * @internal
 */
export const gate = (
  awaiter: PerspectiveSyncAwaiterShape,
  defaultTimeoutInput: Duration.Input = defaultTimeout
): Receptor.SyncGateShape => ({
  run: (receptor, envelope, handler) =>
    Effect.flatMap(awaitWith(awaiter, receptor, envelope, defaultTimeoutInput), (contexts) =>
      handler.pipe(Effect.provideService(SyncContext.Current, worst(contexts)), Effect.provideService(SyncContext.All, contexts))
    )
})
