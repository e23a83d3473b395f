/**
 * The wait behind `PerspectiveSyncAwaiter`: until every awaited event is processed by the perspective (or
 * dead-lettered), combining the in-process tracker and the inquiry port.
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
 * @internal
 */
import { EventId } from "@whizbang/core"
import { Duration, Effect, Fiber } from "effect"
import type { SyncEventTrackerShape } from "../SyncEventTracker.js"
import type { PendingAnswer, SettledAnswer, SyncInquiryPortShape } from "../SyncInquiryPort.js"
import type { FailingEvent } from "../SyncResult.js"

/** @internal */
export interface SettleState {
  readonly remaining: Set<string>
  readonly deadLettered: Set<string>
  /** Still-pending ids held by a failing event (in retry backoff), with its failure: the wait ends at once. */
  readonly failing: Map<string, FailingEvent>
  /** Ids the tracker reported pending at some check: its later "not pending" is a processed mark. */
  readonly seenLocal: Set<string>
  /** Set once an id ended by anything but the first database check (the tracker, a notification, a poll): the wait waited. */
  waited: boolean
}

/** @internal */
export const makeState = (ids: Iterable<string>): SettleState => ({
  remaining: new Set(ids),
  deadLettered: new Set(),
  failing: new Map(),
  seenLocal: new Set(),
  waited: false
})

/**
 * One check; updates `state` and returns the ids still pending in the tracker. `everything`: also ask an
 * authoritative port about tracked ids. `unanswered`: ids whose first database answer is on its way — neither
 * asked again nor ended by a tracker mark before it arrives.
 *
 * @internal
 */
export const check = (
  tracker: SyncEventTrackerShape,
  port: SyncInquiryPortShape,
  perspectiveName: string,
  state: SettleState,
  everything: boolean,
  unanswered: ReadonlySet<string> = new Set()
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function* () {
    const local: Array<string> = []
    const ask: Array<string> = []
    const trusted = trustsMarks(port, perspectiveName)
    for (const id of state.remaining) {
      if (yield* tracker.isPending(id, perspectiveName)) {
        state.seenLocal.add(id)
        local.push(id)
        if (everything && port.authoritative === true) ask.push(id)
      } else if (unanswered.has(id)) continue
      else if (state.seenLocal.has(id) && trusted) state.remaining.delete(id)
      else ask.push(id)
    }
    if (ask.length === 0) return local
    record(state, ask, yield* port.pendingEventIds(perspectiveName, ask))
    return local.filter((id) => state.remaining.has(id))
  })

/** Applies a database answer about `asked` to `state`: dead letters and failures noted, settled ids removed. */
const record = (state: SettleState, asked: Iterable<string>, answer: PendingAnswer): void => {
  const pending = new Set(answer.pendingEventIds)
  for (const id of answer.deadLetteredEventIds ?? []) if (state.remaining.has(id)) state.deadLettered.add(id)
  for (const held of answer.failing ?? []) if (state.remaining.has(held.eventId)) state.failing.set(held.eventId, held.failing)
  for (const id of asked) if (!pending.has(id)) state.remaining.delete(id)
}

/**
 * Whether the wait ends before everything is processed: an awaited event dead-lettered (it will never be applied)
 * or held by a failing event (it waits for a retry that may take minutes).
 *
 * @internal
 */
export const endsAtOnce = (state: SettleState): boolean => state.deadLettered.size > 0 || state.failing.size > 0

/** Whether a tracker mark ends the wait without the database (see the module overview). */
const trustsMarks = (port: SyncInquiryPortShape, perspectiveName: string): boolean =>
  port.authoritative !== true || (port.trustsTrackerMarks?.(perspectiveName) ?? true)

/**
 * Waits (no timeout of its own) until `state.remaining` is empty or `ends(state)` (an event dead-lettered or
 * failing): true; false when the tracker dropped a tracked event it was waiting for (stale cleanup, unregistered)
 * and no authoritative port can tell.
 *
 * @internal
 */
export const settle = (
  tracker: SyncEventTrackerShape,
  port: SyncInquiryPortShape,
  perspectiveName: string,
  state: SettleState,
  firstLocal: ReadonlyArray<string>,
  pollInterval: Duration.Input,
  ends: (state: SettleState) => boolean = endsAtOnce,
  /** The change counter read before the check that produced `firstLocal` (so a signal since then is not lost). */
  firstGeneration?: number,
  /**
   * Ids the tracker holds pending that the first check did not ask the database about yet: asked now, raced with
   * the tracker, so a worker in this process that commits during the query wakes the wait at once. An id the
   * answer settles ends without waiting (`state.waited` untouched).
   */
  firstAsk: ReadonlyArray<string> = []
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    let local = firstLocal
    let generation = firstGeneration ?? (port.changes === undefined ? 0 : yield* port.changes.current)
    let unasked = firstAsk.filter((id) => state.remaining.has(id))
    // Forked, so a tracker mark that wins a round does not cancel it: the mark is trusted only after this answer.
    const firstAnswer =
      unasked.length === 0 ? undefined : yield* Effect.forkChild(port.pendingEventIds(perspectiveName, unasked), { startImmediately: true })
    // A dead-lettered awaited event ends the wait at once: it will never be applied, so waiting longer cannot help;
    // so does a failing one: a read-your-writes read wants the answer now, not after the retries.
    while (state.remaining.size > 0 && !ends(state)) {
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
              databaseWait(port, perspectiveName, state, local, generation, unasked)
            )
          : databaseWait(port, perspectiveName, state, local, generation, [])
      const woke = yield* Effect.raceAll([trackerWait, changed, Effect.as(Effect.sleep(pollInterval), { _tag: "poll" } as const)])
      const before = state.remaining.size
      if (woke._tag === "asked") {
        record(state, unasked, woke.answer)
        // Marks the tracker made while the answer was on its way count now (if the port trusts them).
        if (trustsMarks(port, perspectiveName)) {
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
      local = yield* check(tracker, port, perspectiveName, state, woke._tag !== "tracker" && unasked.length === 0, new Set(unasked))
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
 * by every change signal; never, without signals (the poll remains). The ids handed to the sweep are those `check` would
 * ask about: all remaining with an authoritative port, else only those the tracker does not hold.
 */
const databaseWait = (
  port: SyncInquiryPortShape,
  perspectiveName: string,
  state: SettleState,
  local: ReadonlyArray<string>,
  generation: number,
  unanswered: ReadonlyArray<string>
): Effect.Effect<DatabaseWake> => {
  if (port.awaitSettled !== undefined) {
    const held = new Set(local)
    const asked = port.authoritative === true ? [...state.remaining] : [...state.remaining].filter((id) => !held.has(id))
    if (asked.length === 0) return Effect.never
    return Effect.map(
      port.awaitSettled(perspectiveName, asked, generation, unanswered),
      (answer) => ({ _tag: "settled", asked, answer }) as const
    )
  }
  if (port.changes === undefined) return Effect.never
  return Effect.as(port.changes.awaitChangeAfter(generation), { _tag: "changed" } as const)
}
