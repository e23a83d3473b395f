/**
 * Waits until one perspective has processed the events a caller cares about, so the caller can read its own
 * writes from that perspective.
 *
 * - {@link PerspectiveSyncAwaiterShape.wait}: the events chosen by a `SyncFilter` — from the current
 *   scope (`ScopedEventTracker`), the perspective's pending events in the process-wide `SyncEventTracker` and
 *   the events the database still has pending that the filter matches outside the scope: of each stream it
 *   names (and that stream's events still in dead letters), or of every stream for event types alone and `all`
 *   (so the filter holds on an instance that did not append).
 * - {@link PerspectiveSyncAwaiterShape.waitForStream}: cross-scope — one explicit event id (the incoming
 *   event of a receptor) or the stream's pending events of some types (without `eventId`, a read of the stream:
 *   also its events still in dead letters).
 * - {@link PerspectiveSyncAwaiterShape.isCaughtUp}: the same question without waiting.
 *
 * Every wait first checks once — the in-process tracker and, with `PgSyncInquiry.layer`, one database query — so a
 * wait whose events are already applied answers at once. Events still pending are re-checked on the port's
 * change signal (NOTIFY from the completion and failure transactions) and on a slow safety-net poll. Untracked
 * is never "done" unless the database agrees, and an event processed on another instance ends the wait too. An
 * awaited event that was dead-lettered ends the wait at once with `DeadLettered`, naming it; one held by a
 * failing event (its stream's head in retry backoff) with `Failing`, naming the failing event, its error, its
 * attempts and its next attempt.
 *
 * **Gotchas**
 * - Bad arguments fail at the call with {@link SyncArgumentError} (an id that is not a UUID; with the database
 *   port, a perspective the service does not run or a filter that can match none of its event types; a filter
 *   that selects only the current scope's events outside a scope: `NoScope`).
 * - Refused with {@link InlineStageSyncError} inside an inline lifecycle stage (it would deadlock).
 * - Cancel by interrupting the fiber; the tracker registration is removed.
 *
 * @since 0.1.0
 */
import { Receptor } from "@whizbang/core"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { InlineLifecycleStage } from "./InlineLifecycleStage.js"
import * as FilterTerms from "./internal/filterTerms.js"
import * as ReceptorRules from "./internal/receptorRules.js"
import * as WaitArguments from "./internal/waitArguments.js"
import * as WaitEngine from "./internal/waitEngine.js"
import * as ScopedEventTracker from "./ScopedEventTracker.js"
import { InlineStageSyncError, SyncArgumentError, type SyncFilterError } from "./SyncError.js"
import { SyncEventTracker, type SyncEventTrackerShape } from "./SyncEventTracker.js"
import * as SyncFilter from "./SyncFilter.js"
import { SyncInquiryPort, type SyncInquiryPortShape } from "./SyncInquiryPort.js"
import type * as SyncResult from "./SyncResult.js"

/**
 * Options shared by the waits that take no filter.
 *
 * @category models
 * @since 0.2.0
 */
export interface WaitOptions {
  /** Default 5 s. */
  readonly timeout?: Duration.Input | undefined
  /** Default true. */
  readonly debuggerAwareTimeout?: boolean | undefined
  /** Return the awaited ids known processed in the result's `processedEventIds`. Default false. */
  readonly includeProcessedEventIds?: boolean | undefined
}

/**
 * Options of {@link PerspectiveSyncAwaiterShape.waitForStream}.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamWaitOptions extends WaitOptions {
  /** Wait for the stream's pending events of these types only (none: every type). */
  readonly eventTypes?: ReadonlyArray<string> | undefined
  /** Wait for exactly this event (the incoming event of a receptor). */
  readonly eventId?: string | undefined
  /** With `eventId`: also wait for the stream's other pending events (of `eventTypes`, or every type). */
  readonly andStreamPending?: boolean | undefined
}

/**
 * Errors raised at the call, before any waiting.
 *
 * @category models
 * @since 0.2.0
 */
export type WaitError = SyncArgumentError | InlineStageSyncError

/**
 * The awaiter's operations.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveSyncAwaiterShape {
  /**
   * The events the filter matches: the current scope's, the perspective's tracked pending events and, for each
   * stream the filter names, the stream's pending events in the database (with `PgSyncInquiry`).
   */
  readonly wait: (
    perspectiveName: string,
    options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder
  ) => Effect.Effect<SyncResult.SyncResult, SyncFilterError | WaitError>
  /** Cross-scope: one explicit event and/or the stream's pending events (tracked here or found in the database). */
  readonly waitForStream: (
    perspectiveName: string,
    streamId: string,
    options?: StreamWaitOptions
  ) => Effect.Effect<SyncResult.SyncResult, WaitError>
  /** Explicit event ids (e.g. returned by an append). */
  readonly waitForEvents: (
    perspectiveName: string,
    eventIds: ReadonlyArray<string>,
    options?: WaitOptions
  ) => Effect.Effect<SyncResult.SyncResult, WaitError>
  /** True when nothing matching the filter is pending for the perspective (one check, no wait). */
  readonly isCaughtUp: (
    perspectiveName: string,
    options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder
  ) => Effect.Effect<boolean, SyncFilterError | SyncArgumentError>
}

/**
 * The awaiter service.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveSyncAwaiter extends Context.Service<PerspectiveSyncAwaiter, PerspectiveSyncAwaiterShape>()(
  "@whizbang/sync/PerspectiveSyncAwaiter"
) {}

/**
 * Layer options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /**
   * How often the {@link SyncInquiryPort} is re-asked about events still awaited. Default 100 ms; 1 s (a safety
   * net) when the port signals changes (NOTIFY), which wake the awaiter at once.
   */
  readonly pollInterval?: Duration.Input | undefined
}

const toOptions = (options: SyncFilter.SyncOptions | SyncFilter.SyncFilterBuilder) =>
  SyncFilter.isBuilder(options) ? options.build() : Effect.as(SyncFilter.check(options.filter), options)

/** A filter that selects only the current scope's events matches nothing outside a scope: refused, never "fresh". */
const requireScope = (perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
  SyncFilter.needsScope(filter)
    ? Effect.flatMap(ScopedEventTracker.Current, (current) =>
        Option.isSome(current) ? Effect.void : Effect.fail(new SyncArgumentError({ reason: { _tag: "NoScope", perspectiveName } }))
      )
    : Effect.void

const refuseInline = (perspectiveName: string) =>
  Effect.flatMap(InlineLifecycleStage, (inline) => (inline ? Effect.fail(new InlineStageSyncError({ perspectiveName })) : Effect.void))

/** Whether the filter can match some event of a perspective handling `handled` (stream and scope nodes can). */
const possible = (node: SyncFilter.SyncFilterNode, handled: ReadonlySet<string>): boolean => {
  switch (node._tag) {
    case "EventTypes":
      return node.eventTypes.some((t) => handled.has(t))
    case "And":
      return possible(node.left, handled) && possible(node.right, handled)
    case "Or":
      return possible(node.left, handled) || possible(node.right, handled)
    default:
      return true
  }
}

const typesOf = (node: SyncFilter.SyncFilterNode): ReadonlyArray<string> =>
  node._tag === "EventTypes"
    ? node.eventTypes
    : node._tag === "And" || node._tag === "Or"
      ? [...typesOf(node.left), ...typesOf(node.right)]
      : []

const checkFilter = (port: SyncInquiryPortShape, perspectiveName: string, filter: SyncFilter.SyncFilterNode) => {
  const handled = WaitArguments.handledBy(port, perspectiveName)
  return handled === undefined || possible(filter, handled)
    ? Effect.void
    : Effect.fail(
        new SyncArgumentError({ reason: { _tag: "ImpossibleFilter", perspectiveName, eventTypes: [...new Set(typesOf(filter))] } })
      )
}

/**
 * The events a `PerspectiveSyncAwaiter` wait awaits: those of the current scope, this process's tracked pending
 * events and the events the database still has pending (with `PgSyncInquiry`), chosen by a filter or by a stream.
 *
 * @internal
 */
/** Where the awaited events are found. @internal */
interface Sources {
  readonly tracker: SyncEventTrackerShape
  readonly port: SyncInquiryPortShape
}

/**
 * The database's events the filter matches outside this scope: one discovery query per term of the filter (a
 * stream it names, or every stream, of the types under which it matches); a stream's also brings the stream's
 * events still in dead letters, which the read model lacks.
 */
const storedMatching = ({ port }: Sources, perspectiveName: string, filter: SyncFilter.SyncFilterNode) => {
  const discover = port.pendingForStream
  if (discover === undefined) return Effect.succeed([] as ReadonlyArray<string>)
  return Effect.map(
    Effect.forEach(
      FilterTerms.discovery(filter, WaitArguments.handledBy(port, perspectiveName)),
      (q) => discover(perspectiveName, q.streamId, q.eventTypes, { deadLettered: q.streamId !== undefined }),
      { concurrency: "unbounded" }
    ),
    (found) => found.flat()
  )
}

/**
 * The ids the filter matches, and which of them were discovered (not emitted in this scope): this process's
 * tracked pending events and the events the database still has pending that the filter matches outside the scope
 * (and, for a stream it names, the stream's dead letters), so a filter is truthful on an instance that did not
 * append (the read went elsewhere).
 *
 * @internal
 */
const matching = (sources: Sources, perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
  Effect.gen(function* () {
    const { tracker, port } = sources
    const scoped = yield* ScopedEventTracker.getEmittedEvents()
    const inScope = new Set(scoped.map((e) => e.eventId))
    // Any version this service runs counts: the wait is for every serving version of the base name.
    const pending = (yield* Effect.forEach(WaitArguments.trackerKeys(port, perspectiveName), (key) =>
      tracker.getPendingForPerspective(key)
    )).flat()
    const ids = [...scoped, ...pending]
      .filter((e) => SyncFilter.matches(filter, { ...e, inCurrentScope: inScope.has(e.eventId) }))
      .map((e) => e.eventId)
    const stored = yield* storedMatching(sources, perspectiveName, filter)
    const all = [...new Set([...ids, ...stored])]
    return { ids: all, discovered: new Set(all.filter((id) => !inScope.has(id))) }
  })

/** The ids the filter matches (see {@link matching}). @internal */
const matchingIds = (sources: Sources, perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
  Effect.map(matching(sources, perspectiveName, filter), (m) => m.ids)

const streamPending = (
  { tracker, port }: Sources,
  perspectiveName: string,
  streamId: string,
  eventTypes: ReadonlyArray<string> | undefined,
  deadLettered: boolean
) =>
  Effect.gen(function* () {
    const tracked = (yield* Effect.forEach(WaitArguments.trackerKeys(port, perspectiveName), (key) =>
      tracker.getPendingEvents(streamId, key, eventTypes)
    ))
      .flat()
      .map((e) => e.eventId)
    const stored =
      port.pendingForStream === undefined ? [] : yield* port.pendingForStream(perspectiveName, streamId, eventTypes, { deadLettered })
    return [...tracked, ...stored]
  })

/**
 * The ids a `waitForStream` awaits: the explicit event and/or the stream's pending events. A read of the stream (no
 * explicit event) also reports the stream's dead letters; a receptor's wait (its incoming event, and the events in
 * flight before it) does not: an old dead letter would otherwise stop every later receptor.
 *
 * @internal
 */
const idsForStream = (sources: Sources, perspectiveName: string, streamId: string, options: StreamWaitOptions | undefined) =>
  options?.eventId !== undefined && options.andStreamPending !== true
    ? Effect.succeed([options.eventId])
    : Effect.map(streamPending(sources, perspectiveName, streamId, options?.eventTypes, options?.eventId === undefined), (found) => [
        ...new Set([...(options?.eventId === undefined ? [] : [options.eventId]), ...found])
      ])

/**
 * Makes the awaiter from the tracker and the inquiry port in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function* (options?: Options) {
  const tracker = yield* SyncEventTracker
  const port = yield* SyncInquiryPort
  const pollInterval = options?.pollInterval ?? (port.changes === undefined ? Duration.millis(100) : Duration.seconds(1))
  const engine = WaitEngine.make(tracker, port, pollInterval)

  const sources: Sources = { tracker, port }

  const precheck = (perspectiveName: string) =>
    Effect.andThen(refuseInline(perspectiveName), WaitArguments.checkPerspective(port, perspectiveName))

  return PerspectiveSyncAwaiter.of({
    wait: (perspectiveName, options) =>
      Effect.gen(function* () {
        yield* precheck(perspectiveName)
        const sync = yield* toOptions(options)
        yield* checkFilter(port, perspectiveName, sync.filter)
        yield* requireScope(perspectiveName, sync.filter)
        const { discovered, ids } = yield* matching(sources, perspectiveName, sync.filter)
        return yield* engine.awaitIds({
          perspectiveName,
          eventIds: ids,
          discovered,
          timeout: sync.timeout,
          debuggerAware: sync.debuggerAwareTimeout,
          includeProcessedEventIds: false
        })
      }),
    waitForStream: (perspectiveName, streamId, options) =>
      Effect.gen(function* () {
        yield* precheck(perspectiveName)
        yield* WaitArguments.checkStreamId(streamId)
        if (options?.eventId !== undefined) yield* WaitArguments.checkEventIds([options.eventId])
        if (options?.eventTypes !== undefined && options.eventTypes.length > 0) {
          yield* checkFilter(port, perspectiveName, { _tag: "EventTypes", eventTypes: options.eventTypes })
        }
        const timeout = yield* WaitArguments.timeoutOf(options?.timeout, SyncFilter.defaultTimeout)
        const ids = yield* idsForStream(sources, perspectiveName, streamId, options)
        return yield* engine.awaitIds({
          perspectiveName,
          eventIds: ids,
          discovered: new Set(ids.filter((id) => id !== options?.eventId)),
          timeout,
          debuggerAware: options?.debuggerAwareTimeout ?? true,
          includeProcessedEventIds: options?.includeProcessedEventIds ?? false
        })
      }),
    waitForEvents: (perspectiveName, eventIds, options) =>
      Effect.gen(function* () {
        yield* precheck(perspectiveName)
        yield* WaitArguments.checkEventIds(eventIds)
        const timeout = yield* WaitArguments.timeoutOf(options?.timeout, SyncFilter.defaultTimeout)
        return yield* engine.awaitIds({
          perspectiveName,
          eventIds,
          timeout,
          debuggerAware: options?.debuggerAwareTimeout ?? true,
          includeProcessedEventIds: options?.includeProcessedEventIds ?? false
        })
      }),
    isCaughtUp: (perspectiveName, options) =>
      Effect.gen(function* () {
        yield* WaitArguments.checkPerspective(port, perspectiveName)
        const sync = yield* toOptions(options)
        yield* checkFilter(port, perspectiveName, sync.filter)
        yield* requireScope(perspectiveName, sync.filter)
        return yield* engine.isCaughtUp(perspectiveName, yield* matchingIds(sources, perspectiveName, sync.filter))
      })
  })
})

/**
 * The awaiter with explicit options. It also provides core's `Receptor.SyncGate`, so a perspective worker built
 * on top of it runs its receptors' `awaitPerspectiveSync` waits before their handlers.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = (options: Options): Layer.Layer<PerspectiveSyncAwaiter, never, SyncEventTracker> =>
  Layer.effectContext(
    Effect.map(make(options), (awaiter) =>
      Context.make(PerspectiveSyncAwaiter, awaiter).pipe(Context.add(Receptor.SyncGate, Option.some(ReceptorRules.gate(awaiter))))
    )
  ) as Layer.Layer<PerspectiveSyncAwaiter, never, SyncEventTracker>

/**
 * The awaiter (default poll interval) and the worker's sync gate; needs a `SyncEventTracker`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<PerspectiveSyncAwaiter, never, SyncEventTracker> = layerWith({})
