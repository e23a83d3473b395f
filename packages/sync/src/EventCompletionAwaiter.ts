/**
 * Waits until every perspective has processed the given events — RPC-style completion, for callers that must
 * not answer before all side effects on read models are done. (For reading one perspective, use
 * `PerspectiveSyncAwaiter`.)
 *
 * With `PgSyncInquiry.layer` (the port knows the service's perspectives) this is the same wait as
 * `PerspectiveSyncAwaiter.waitForEvents`, run for every perspective at once: answered from the database
 * whenever the in-process tracker does not know, so it is right whichever instance applies the events; a
 * dead-lettered event ends it at once with `DeadLettered`, naming the event, and an event held by a failing one
 * (in retry backoff, in any perspective) with `Failing`, naming the failing event. Without the database port it
 * asks the in-process tracker alone (events it never tracked count as done: there is nothing else to ask).
 *
 * The answer is a `SyncResult`: `NoPendingEvents` (nothing to wait for), `Synced`, `TimedOut` (with the ids
 * still pending), `DeadLettered`, `Failing`. Ids that are not UUIDs fail at the call with `SyncArgumentError`. Cancel by
 * interrupting the fiber.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import * as WaitEngine from "./internal/waitEngine.js"
import type { SyncArgumentError } from "./SyncError.js"
import { SyncEventTracker } from "./SyncEventTracker.js"
import * as SyncFilter from "./SyncFilter.js"
import { SyncInquiryPort } from "./SyncInquiryPort.js"
import * as SyncResult from "./SyncResult.js"

/**
 * Options of a wait.
 *
 * @category models
 * @since 0.1.0
 */
export interface WaitOptions {
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
  /** Default true. */
  readonly debuggerAwareTimeout?: boolean | undefined
  /** Without the database port: an id to cancel the wait with `SyncEventTracker.unregisterAwaiter`. */
  readonly awaiterId?: string | undefined
}

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventCompletionAwaiterShape {
  readonly waitForEvents: (
    eventIds: ReadonlyArray<string> | undefined,
    options?: WaitOptions
  ) => Effect.Effect<SyncResult.SyncResult, SyncArgumentError>
  /** True only when no perspective still has any of the events pending (one check, no wait). */
  readonly areEventsFullyProcessed: (eventIds: ReadonlyArray<string>) => Effect.Effect<boolean, SyncArgumentError>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.1.0
 */
export class EventCompletionAwaiter extends Context.Service<EventCompletionAwaiter, EventCompletionAwaiterShape>()(
  "@whizbang/sync/EventCompletionAwaiter"
) {}

const merge = (results: ReadonlyArray<SyncResult.SyncResult>, eventsAwaited: number, elapsed: Duration.Duration): SyncResult.SyncResult => {
  const fields: SyncResult.Fields = {
    elapsed,
    eventsAwaited,
    deadLettered: [...new Set(results.flatMap((r) => r.deadLettered))],
    pending: [...new Set(results.flatMap((r) => r.pending))]
  }
  const failing = results.flatMap((r) => (r._tag === "Failing" ? r.failing : []))
  if (failing.length > 0) return SyncResult.Failing({ ...fields, failing })
  if (fields.deadLettered.length > 0) return SyncResult.DeadLettered(fields)
  if (results.some((r) => r._tag === "TimedOut")) return SyncResult.TimedOut(fields)
  return results.every((r) => r._tag === "NoPendingEvents") ? SyncResult.NoPendingEvents(fields) : SyncResult.Synced(fields)
}

/**
 * Makes the awaiter from the tracker and the inquiry port in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.gen(function* () {
  const tracker = yield* SyncEventTracker
  const port = yield* SyncInquiryPort
  const engine = WaitEngine.make(tracker, port, port.changes === undefined ? Duration.millis(100) : Duration.seconds(1))
  const perspectives = port.perspectives === undefined ? undefined : [...port.perspectives.keys()]

  const trackerOnly = (ids: ReadonlyArray<string>, timeout: Duration.Duration, options: WaitOptions | undefined) =>
    Effect.gen(function* () {
      const start = yield* Clock.currentTimeMillis
      const pendingAtStart = yield* Effect.filter(ids, (id) => tracker.isPending(id))
      const done =
        pendingAtStart.length === 0 ||
        (yield* tracker.waitForAllPerspectives(ids, {
          timeout,
          debuggerAwareTimeout: options?.debuggerAwareTimeout ?? true,
          awaiterId: options?.awaiterId
        }))
      const fields: SyncResult.Fields = {
        elapsed: Duration.millis((yield* Clock.currentTimeMillis) - start),
        eventsAwaited: ids.length,
        deadLettered: [],
        pending: done ? [] : yield* Effect.filter(ids, (id) => tracker.isPending(id))
      }
      if (pendingAtStart.length === 0) return SyncResult.NoPendingEvents(fields)
      return done ? SyncResult.Synced(fields) : SyncResult.TimedOut(fields)
    })

  const everyPerspective = (
    names: ReadonlyArray<string>,
    ids: ReadonlyArray<string>,
    timeout: Duration.Duration,
    options: WaitOptions | undefined
  ) =>
    Effect.gen(function* () {
      const start = yield* Clock.currentTimeMillis
      const one = (perspectiveName: string) =>
        Effect.flatMap(
          engine.awaitIds({
            perspectiveName,
            eventIds: ids,
            timeout,
            debuggerAware: options?.debuggerAwareTimeout ?? true,
            includeProcessedEventIds: false
          }),
          // A dead letter or a failing event in one perspective ends every other perspective's wait at once.
          (result) => (result._tag === "DeadLettered" || result._tag === "Failing" ? Effect.fail(result) : Effect.succeed(result))
        )
      const results = yield* Effect.forEach(names, one, { concurrency: "unbounded" }).pipe(Effect.catch((ended) => Effect.succeed([ended])))
      return merge(results, ids.length, Duration.millis((yield* Clock.currentTimeMillis) - start))
    })

  return EventCompletionAwaiter.of({
    waitForEvents: (eventIds, options) =>
      Effect.gen(function* () {
        const ids = [...new Set(eventIds ?? [])]
        yield* WaitEngine.checkEventIds(ids)
        const timeout = yield* WaitEngine.timeoutOf(options?.timeout, SyncFilter.defaultTimeout)
        if (ids.length === 0) {
          return SyncResult.NoPendingEvents({ elapsed: Duration.zero, eventsAwaited: 0, deadLettered: [], pending: [] })
        }
        return perspectives === undefined
          ? yield* trackerOnly(ids, timeout, options)
          : yield* everyPerspective(perspectives, ids, timeout, options)
      }),
    areEventsFullyProcessed: (eventIds) =>
      Effect.gen(function* () {
        yield* WaitEngine.checkEventIds(eventIds)
        if (perspectives === undefined) {
          return (yield* Effect.filter(eventIds, (id) => tracker.isPending(id))).length === 0
        }
        const results = yield* Effect.forEach(
          perspectives,
          (perspectiveName) =>
            engine.awaitIds({ perspectiveName, eventIds, timeout: Duration.zero, debuggerAware: false, includeProcessedEventIds: false }),
          { concurrency: "unbounded" }
        )
        return results.every((r) => r.pending.length === 0 && r.deadLettered.length === 0)
      })
  })
})

/**
 * The awaiter; needs a `SyncEventTracker` (and, for the cross-instance answer, `PgSyncInquiry.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<EventCompletionAwaiter, never, SyncEventTracker> = Layer.effect(EventCompletionAwaiter, make)
