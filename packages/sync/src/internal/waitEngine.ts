/**
 * The one wait behind every public way to wait (`PerspectiveSyncAwaiter`, `EventCompletionAwaiter`, the
 * dispatcher, `SyncAwareLens`): validate the arguments, one check (tracker plus, with an authoritative port, one
 * database query), then {@link Settle.settle} until everything is processed, something is dead-lettered, or the
 * timeout passes.
 *
 * @internal
 */
import { EventId, Perspective } from "@whizbang/core"
import { Clock, Duration, Effect, Option } from "effect"
import * as DebuggerAwareTimeout from "../DebuggerAwareTimeout.js"
import { SyncArgumentError } from "../SyncError.js"
import type { SyncEventTrackerShape } from "../SyncEventTracker.js"
import type { SyncInquiryPortShape } from "../SyncInquiryPort.js"
import * as SyncResult from "../SyncResult.js"
import * as Settle from "./settle.js"

/** @internal */
export interface WaitRequest {
  readonly perspectiveName: string
  readonly eventIds: ReadonlyArray<string>
  /**
   * Of `eventIds`, those discovered rather than asked for (a stream's pending events): one of them dead-lettered
   * is reported but does not end the wait, so a read after it still sees the stream's other events. Default none.
   */
  readonly discovered?: ReadonlySet<string> | undefined
  readonly timeout: Duration.Duration
  readonly debuggerAware: boolean
  readonly includeProcessedEventIds: boolean
}

/** @internal */
export const timeoutOf = (
  input: Duration.Input | undefined,
  fallback: Duration.Duration
): Effect.Effect<Duration.Duration, SyncArgumentError> => {
  if (input === undefined) return Effect.succeed(fallback)
  const decoded = Duration.fromInput(input)
  return Option.isSome(decoded) && !Duration.isNegative(decoded.value)
    ? Effect.succeed(decoded.value)
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidTimeout", timeout: input } }))
}

/** @internal */
export const checkEventIds = (eventIds: ReadonlyArray<unknown>): Effect.Effect<void, SyncArgumentError> => {
  const bad = eventIds.find((id) => typeof id !== "string" || !EventId.isUuid(id))
  return bad === undefined && eventIds.every((id) => typeof id === "string")
    ? Effect.void
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidEventId", eventId: bad } }))
}

/** @internal */
export const checkStreamId = (streamId: unknown): Effect.Effect<void, SyncArgumentError> =>
  typeof streamId === "string" && EventId.isUuid(streamId)
    ? Effect.void
    : Effect.fail(new SyncArgumentError({ reason: { _tag: "InvalidStreamId", streamId } }))

/**
 * Whether the port knows the perspective: a name is its base name or any version's key, and both mean the
 * serving versions of that base, so a base is known when any known key has it.
 *
 * @internal
 */
export const knowsPerspective = (known: ReadonlyMap<string, unknown>, perspectiveName: string): boolean => {
  if (known.has(perspectiveName)) return true
  const { baseName } = Perspective.parseKey(perspectiveName)
  for (const key of known.keys()) if (Perspective.parseKey(key).baseName === baseName) return true
  return false
}

/**
 * The event types the perspective's versions known to the port handle (every known key of its base name);
 * undefined when the port does not say.
 *
 * @internal
 */
export const handledBy = (port: SyncInquiryPortShape, perspectiveName: string): ReadonlySet<string> | undefined => {
  if (port.perspectives === undefined) return undefined
  const { baseName } = Perspective.parseKey(perspectiveName)
  const out = new Set<string>()
  let found = false
  for (const [key, types] of port.perspectives) {
    if (Perspective.parseKey(key).baseName !== baseName) continue
    found = true
    for (const t of types) out.add(t)
  }
  return found ? out : undefined
}

/**
 * The names the in-process tracker may hold the perspective's events under: the name asked for and every key of
 * its base name the port knows (the versions this service runs).
 *
 * @internal
 */
export const trackerKeys = (port: SyncInquiryPortShape, perspectiveName: string): ReadonlyArray<string> => {
  const { baseName } = Perspective.parseKey(perspectiveName)
  const keys = new Set([perspectiveName])
  for (const key of port.perspectives?.keys() ?? []) if (Perspective.parseKey(key).baseName === baseName) keys.add(key)
  return [...keys]
}

/** @internal */
export const checkPerspective = (port: SyncInquiryPortShape, perspectiveName: unknown): Effect.Effect<void, SyncArgumentError> =>
  port.perspectives === undefined || (typeof perspectiveName === "string" && knowsPerspective(port.perspectives, perspectiveName))
    ? Effect.void
    : Effect.fail(
        new SyncArgumentError({ reason: { _tag: "UnknownPerspective", perspectiveName, known: [...(port.perspectives?.keys() ?? [])] } })
      )

/** The failing events holding the wait's still-pending ids, each once. */
const failingEvents = (state: Settle.SettleState): ReadonlyArray<SyncResult.FailingEvent> => {
  const byEvent = new Map<string, SyncResult.FailingEvent>()
  for (const [id, failing] of state.failing) {
    if (state.remaining.has(id)) byEvent.set(`${failing.perspectiveName}\t${failing.eventId}`, failing)
  }
  return [...byEvent.values()]
}

/** @internal */
export const make = (tracker: SyncEventTrackerShape, port: SyncInquiryPortShape, pollInterval: Duration.Input) => {
  const awaitIds = (request: WaitRequest): Effect.Effect<SyncResult.SyncResult> =>
    Effect.gen(function* () {
      const start = yield* Clock.currentTimeMillis
      const ids = [...new Set(request.eventIds)]
      const state = Settle.makeState(ids)
      // Read before the first check, so a completion signalled between the check and the wait still wakes it.
      const generation = port.changes === undefined ? 0 : yield* port.changes.current
      // One check that asks the database too: a wait whose events are already applied ends without waiting. Events
      // this process tracks as pending are asked in the first round of the wait, raced with the tracker (a worker
      // here that commits during that query wakes the wait at once); the others are asked here.
      const local = yield* Settle.check(tracker, port, request.perspectiveName, state, false)
      const firstAsk = port.authoritative === true ? local : []
      const discovered = request.discovered
      // A failing event ends the wait whether asked for or discovered: it holds its stream until a retry succeeds.
      const endsAtOnce = (s: Settle.SettleState) =>
        s.failing.size > 0 || (discovered === undefined ? s.deadLettered.size > 0 : [...s.deadLettered].some((id) => !discovered.has(id)))
      const settled =
        state.remaining.size === 0 || endsAtOnce(state)
          ? true
          : Option.getOrElse(
              yield* DebuggerAwareTimeout.timeoutOption(
                Settle.settle(tracker, port, request.perspectiveName, state, local, pollInterval, endsAtOnce, generation, firstAsk),
                request.timeout,
                { debuggerAware: request.debuggerAware }
              ),
              () => false
            )
      // Nothing to wait for: every event was already applied at the first database answer.
      const nothingPending = settled && !state.waited && state.remaining.size === 0 && state.deadLettered.size === 0
      const now = yield* Clock.currentTimeMillis
      const fields: SyncResult.Fields = {
        elapsed: Duration.millis(now - start),
        eventsAwaited: ids.length,
        deadLettered: [...state.deadLettered],
        pending: [...state.remaining],
        ...(request.includeProcessedEventIds
          ? { processedEventIds: ids.filter((id) => !state.remaining.has(id) && !state.deadLettered.has(id)) }
          : {})
      }
      if (nothingPending) return SyncResult.NoPendingEvents(fields)
      // Failing first: its fields also name any dead letter, so nothing is lost.
      const failing = failingEvents(state)
      if (failing.length > 0 && state.remaining.size > 0) return SyncResult.Failing({ ...fields, failing })
      if (!settled) return SyncResult.TimedOut(fields)
      return state.deadLettered.size > 0 ? SyncResult.DeadLettered(fields) : SyncResult.Synced(fields)
    })
  return { awaitIds }
}
