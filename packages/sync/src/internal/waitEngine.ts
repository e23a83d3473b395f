/**
 * The one wait behind every public way to wait (`PerspectiveSyncAwaiter`, `EventCompletionAwaiter`, the dispatcher,
 * `SyncAwareLens`): one check (tracker plus, with an authoritative port, one database query), then {@link settle}
 * until every awaited event is processed by the perspective, something is dead-lettered or failing, or the timeout
 * passes. The arguments were checked before (`waitArguments.ts`).
 *
 * Which source decides an event:
 * - tracked here and still pending: the tracker; its mark (made by the worker after its commit) is trusted,
 *   so an event seen pending here and then gone from the tracker is done without asking the database — but
 *   with an authoritative port only once the wait had its first database answer about the event, and only while
 *   the port trusts marks for the perspective (`trustsTrackerMarks`: false once its base name was seen served by
 *   versions, since the mark is one version's and the wait is for every serving version); otherwise the
 *   database decides;
 * - not tracked here: the port (the database) — untracked is never done unless it agrees;
 * - on a change signal (NOTIFY) or the safety-net poll, an authoritative port is asked about everything still
 *   awaited, so an event processed on another instance, or dead-lettered, ends the wait as well. With a port
 *   that parks waits (`awaitSettled`), the wait is woken only by a notification that settles one of its events
 *   (named in its payload, or found by the one sweep query a notification without detail runs for all waits).
 *
 * No lost wake-ups: the port's change counter is read before each check, and the tracker registers its waiter
 * only for events still pending at registration, in one synchronous step.
 *
 * A wait's state ({@link WaitState}) is its own: made by {@link settle}, changed only by its steps, and returned with
 * its outcome (also when the timeout cut it short).
 *
 * @internal
 */
import { EventId } from "@whizbang/core"
import { Clock, Duration, Effect, Fiber, Option } from "effect"
import * as DebuggerAwareTimeout from "../DebuggerAwareTimeout.js"
import type { SyncEventTrackerShape } from "../SyncEventTracker.js"
import type { PendingAnswer, SettledAnswer, SyncInquiryPortShape } from "../SyncInquiryPort.js"
import * as SyncResult from "../SyncResult.js"

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

/** What one wait knows so far. */
interface WaitState {
  readonly remaining: Set<string>
  readonly deadLettered: Set<string>
  /** Still-pending ids held by a failing event (in retry backoff), with its failure: the wait ends at once. */
  readonly failing: Map<string, SyncResult.FailingEvent>
  /** Ids the tracker reported pending at some check: its later "not pending" is a processed mark. */
  readonly seenLocal: Set<string>
  /** Set once an id ended by anything but the first database check (the tracker, a notification, a poll): the wait waited. */
  waited: boolean
}

const newState = (ids: Iterable<string>): WaitState => ({
  remaining: new Set(ids),
  deadLettered: new Set(),
  failing: new Map(),
  seenLocal: new Set(),
  waited: false
})

/** Where a wait's answers come from. */
interface Sources {
  readonly tracker: SyncEventTrackerShape
  readonly port: SyncInquiryPortShape
  readonly perspectiveName: string
}

/** Whether a tracker mark ends the wait without the database (see the module overview). */
const trustsMarks = ({ perspectiveName, port }: Sources): boolean =>
  port.authoritative !== true || (port.trustsTrackerMarks?.(perspectiveName) ?? true)

/** Applies a database answer about `asked` to `state`: dead letters and failures noted, settled ids removed. */
const record = (state: WaitState, asked: Iterable<string>, answer: PendingAnswer): void => {
  const pending = new Set(answer.pendingEventIds)
  for (const id of answer.deadLetteredEventIds ?? []) if (state.remaining.has(id)) state.deadLettered.add(id)
  for (const held of answer.failing ?? []) if (state.remaining.has(held.eventId)) state.failing.set(held.eventId, held.failing)
  for (const id of asked) if (!pending.has(id)) state.remaining.delete(id)
}

/**
 * One check of `state`; returns the ids still pending in the tracker. `everything`: also ask an authoritative port
 * about tracked ids. `unanswered`: ids whose first database answer is on its way — neither asked again nor ended by
 * a tracker mark before it arrives.
 */
const check = (
  sources: Sources & { readonly state: WaitState; readonly everything: boolean; readonly unanswered?: ReadonlySet<string> | undefined }
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function* () {
    const { everything, perspectiveName, port, state, tracker } = sources
    const local: Array<string> = []
    const ask: Array<string> = []
    const trusted = trustsMarks(sources)
    for (const id of state.remaining) {
      if (yield* tracker.isPending(id, perspectiveName)) {
        state.seenLocal.add(id)
        local.push(id)
        if (everything && port.authoritative === true) ask.push(id)
      } else if (sources.unanswered?.has(id) === true) continue
      else if (state.seenLocal.has(id) && trusted) state.remaining.delete(id)
      else ask.push(id)
    }
    if (ask.length === 0) return local
    record(state, ask, yield* port.pendingEventIds(perspectiveName, ask))
    return local.filter((id) => state.remaining.has(id))
  })

/**
 * A wait: its sources, its events, and when it ends before they are all processed (`endsAtOnce`: an awaited event
 * dead-lettered, which will never be applied, or one held by a failing event, whose retry may take minutes).
 */
interface Settle extends Sources {
  readonly eventIds: ReadonlyArray<string>
  readonly endsAtOnce: (state: WaitState) => boolean
  readonly pollInterval: Duration.Input
  readonly timeout: Duration.Duration
  readonly debuggerAware: boolean
}

/**
 * What a wait found. `settled`: every event processed, or `endsAtOnce`; false at the timeout, or when the tracker
 * dropped a tracked event it was waiting for (stale cleanup, unregistered) and no authoritative port can tell.
 */
interface Settled {
  readonly state: WaitState
  readonly settled: boolean
}

/** The first check, then {@link waitUntilSettled} until the events settle or the timeout passes. */
const settle = (wait: Settle): Effect.Effect<Settled> =>
  Effect.gen(function* () {
    const { port } = wait
    const state = newState(wait.eventIds)
    // Read before the first check, so a completion signalled between the check and the wait still wakes it.
    const generation = port.changes === undefined ? 0 : yield* port.changes.current
    // One check that asks the database too: a wait whose events are already applied ends without waiting. Events
    // this process tracks as pending are asked in the first round of the wait, raced with the tracker (a worker
    // here that commits during that query wakes the wait at once); the others are asked here.
    const local = yield* check({ ...wait, state, everything: false })
    if (state.remaining.size === 0 || wait.endsAtOnce(state)) return { state, settled: true }
    const firstAsk = port.authoritative === true ? local : []
    const waited = yield* DebuggerAwareTimeout.timeoutOption(waitUntilSettled({ wait, state, local, generation, firstAsk }), wait.timeout, {
      debuggerAware: wait.debuggerAware
    })
    return { state, settled: Option.getOrElse(waited, () => false) }
  })

/**
 * Waits (no timeout of its own) until `state.remaining` is empty or `endsAtOnce`: true; false when the tracker
 * dropped an event it was waiting for and no authoritative port can tell. `local`: the ids the first check found
 * pending in the tracker; `generation`: the change counter read before it (so a signal since then is not lost);
 * `firstAsk`: the ids the tracker holds that the first check did not ask the database about yet — asked now, raced
 * with the tracker, so a worker in this process that commits during the query wakes the wait at once (an id the
 * answer settles ends without waiting: `state.waited` untouched).
 */
const waitUntilSettled = (first: {
  readonly wait: Settle
  readonly state: WaitState
  readonly local: ReadonlyArray<string>
  readonly generation: number
  readonly firstAsk: ReadonlyArray<string>
}): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const { state, wait } = first
    const { perspectiveName, port, tracker } = wait
    let local = first.local
    let generation = first.generation
    let unasked = first.firstAsk.filter((id) => state.remaining.has(id))
    // Forked, so a tracker mark that wins a round does not cancel it: the mark is trusted only after this answer.
    const firstAnswer =
      unasked.length === 0 ? undefined : yield* Effect.forkChild(port.pendingEventIds(perspectiveName, unasked), { startImmediately: true })
    while (state.remaining.size > 0 && !wait.endsAtOnce(state)) {
      const trackerWait =
        local.length === 0
          ? Effect.never
          : Effect.map(
              tracker.waitForPerspectiveEvents(local, perspectiveName, { timeout: Duration.infinity, awaiterId: EventId.unsafeMake() }),
              (ok) => (ok ? ({ _tag: "tracker" } as const) : ({ _tag: "dropped" } as const))
            )
      const changed: Effect.Effect<DatabaseWake | { readonly _tag: "asked"; readonly answer: PendingAnswer }> =
        unasked.length > 0 && firstAnswer !== undefined
          ? // A notification that settles the wait while its first query is still queued ends it too.
            Effect.race(
              Effect.map(Fiber.join(firstAnswer), (answer) => ({ _tag: "asked", answer }) as const),
              databaseWait({ ...wait, state, local, generation, unanswered: unasked })
            )
          : databaseWait({ ...wait, state, local, generation, unanswered: [] })
      const woke = yield* Effect.raceAll([trackerWait, changed, Effect.as(Effect.sleep(wait.pollInterval), { _tag: "poll" } as const)])
      const before = state.remaining.size
      if (woke._tag === "asked") {
        record(state, unasked, woke.answer)
        // Marks the tracker made while the answer was on its way count now (if the port trusts them).
        if (trustsMarks(wait)) {
          for (const id of unasked) {
            if (state.remaining.has(id) && state.seenLocal.has(id) && !(yield* tracker.isPending(id, perspectiveName))) {
              state.remaining.delete(id)
              state.waited = true
            }
          }
        }
        unasked = []
        local = local.filter((id) => state.remaining.has(id))
        continue
      }
      if (woke._tag === "dropped") {
        if (port.authoritative !== true) return false
        for (const id of local) state.seenLocal.delete(id)
      }
      if (woke._tag === "settled") {
        // The notification (or the sweep's query) answered for every id it was given: apply it, no further check.
        record(state, woke.asked, woke.answer)
        generation = woke.answer.generation
        local = local.filter((id) => state.remaining.has(id))
        unasked = unasked.filter((id) => state.remaining.has(id))
        if (state.remaining.size < before) state.waited = true
        continue
      }
      generation = port.changes === undefined ? 0 : yield* port.changes.current
      local = yield* check({ ...wait, state, everything: woke._tag !== "tracker" && unasked.length === 0, unanswered: new Set(unasked) })
      // Still owed its first database answer (the tracker won the race): asked again next round.
      unasked = unasked.filter((id) => state.remaining.has(id))
      if (state.remaining.size < before) state.waited = true
    }
    return true
  })

type DatabaseWake =
  | { readonly _tag: "changed" }
  | { readonly _tag: "settled"; readonly asked: ReadonlyArray<string>; readonly answer: SettledAnswer }

/**
 * The database side of a wait: parked until a notification settles one of the ids (`awaitSettled`), else woken
 * by every change signal; never, without signals (the poll remains). The ids handed to the sweep are those `check`
 * would ask about: all remaining with an authoritative port, else only those the tracker does not hold.
 */
const databaseWait = (
  wait: Sources & {
    readonly state: WaitState
    readonly local: ReadonlyArray<string>
    readonly generation: number
    readonly unanswered: ReadonlyArray<string>
  }
): Effect.Effect<DatabaseWake> => {
  const { port, state } = wait
  if (port.awaitSettled !== undefined) {
    const held = new Set(wait.local)
    const asked = port.authoritative === true ? [...state.remaining] : [...state.remaining].filter((id) => !held.has(id))
    if (asked.length === 0) return Effect.never
    return Effect.map(
      port.awaitSettled(wait.perspectiveName, asked, wait.generation, wait.unanswered),
      (answer) => ({ _tag: "settled", asked, answer }) as const
    )
  }
  if (port.changes === undefined) return Effect.never
  return Effect.as(port.changes.awaitChangeAfter(wait.generation), { _tag: "changed" } as const)
}

/** The failing events holding the wait's still-pending ids, each once. */
const failingEvents = (state: WaitState): ReadonlyArray<SyncResult.FailingEvent> => {
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
      const discovered = request.discovered
      const { settled, state } = yield* settle({
        tracker,
        port,
        perspectiveName: request.perspectiveName,
        eventIds: ids,
        // A failing event ends the wait whether asked for or discovered: it holds its stream until a retry succeeds.
        endsAtOnce: (s) =>
          s.failing.size > 0 ||
          (discovered === undefined ? s.deadLettered.size > 0 : [...s.deadLettered].some((id) => !discovered.has(id))),
        pollInterval,
        timeout: request.timeout,
        debuggerAware: request.debuggerAware
      })
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

  /** Whether nothing of `eventIds` is pending for the perspective now: one check that asks the port about every id. */
  const isCaughtUp = (perspectiveName: string, eventIds: ReadonlyArray<string>): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      const state = newState(eventIds)
      return Effect.map(check({ tracker, port, perspectiveName, state, everything: true }), () => state.remaining.size === 0)
    })

  return { awaitIds, isCaughtUp }
}
