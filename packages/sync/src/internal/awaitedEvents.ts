/**
 * The events a `PerspectiveSyncAwaiter` wait awaits: those of the current scope, this process's tracked pending
 * events and the events the database still has pending (with `PgSyncInquiry`), chosen by a filter or by a stream.
 *
 * @internal
 */
import { Effect } from "effect"
import type { StreamWaitOptions } from "../PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../ScopedEventTracker.js"
import type { SyncEventTrackerShape } from "../SyncEventTracker.js"
import * as SyncFilter from "../SyncFilter.js"
import type { SyncInquiryPortShape } from "../SyncInquiryPort.js"
import * as FilterTerms from "./filterTerms.js"
import * as WaitArguments from "./waitArguments.js"

/** Where the awaited events are found. @internal */
export interface Sources {
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
export const matching = (sources: Sources, perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
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
export const matchingIds = (sources: Sources, perspectiveName: string, filter: SyncFilter.SyncFilterNode) =>
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
export const idsForStream = (sources: Sources, perspectiveName: string, streamId: string, options: StreamWaitOptions | undefined) =>
  options?.eventId !== undefined && options.andStreamPending !== true
    ? Effect.succeed([options.eventId])
    : Effect.map(streamPending(sources, perspectiveName, streamId, options?.eventTypes, options?.eventId === undefined), (found) => [
        ...new Set([...(options?.eventId === undefined ? [] : [options.eventId]), ...found])
      ])
