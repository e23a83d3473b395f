/**
 * The wait behind `PerspectiveSyncAwaiter`: until every awaited event is processed by the perspective (or
 * dead-lettered), combining the in-process tracker and the inquiry port.
 *
 * Which source decides an event:
 * - tracked here and still pending: the tracker; its mark (made by the worker after its commit) is trusted,
 *   so an event seen pending here and then gone from the tracker is done without asking the database;
 * - not tracked here: the port (the database) — untracked is never done unless it agrees;
 * - on a change signal (NOTIFY) or the safety-net poll, an authoritative port is asked about everything still
 *   awaited, so an event processed on another instance, or dead-lettered, ends the wait as well.
 *
 * No lost wake-ups: the port's change counter is read before each check, and the tracker registers its waiter
 * only for events still pending at registration, in one synchronous step.
 *
 * @internal
 */
import { EventId } from "@whizbang/core"
import { Duration, Effect } from "effect"
import type { SyncEventTrackerShape } from "../SyncEventTracker.js"
import type { SyncInquiryPortShape } from "../SyncInquiryPort.js"

/** @internal */
export interface SettleState {
  readonly remaining: Set<string>
  readonly deadLettered: Set<string>
  /** Ids the tracker reported pending at some check: its later "not pending" is a processed mark. */
  readonly seenLocal: Set<string>
}

/** @internal */
export const makeState = (ids: Iterable<string>): SettleState => ({
  remaining: new Set(ids),
  deadLettered: new Set(),
  seenLocal: new Set()
})

/**
 * One check; updates `state` and returns the ids still pending in the tracker. `everything`: also ask an
 * authoritative port about tracked ids.
 *
 * @internal
 */
export const check = (
  tracker: SyncEventTrackerShape,
  port: SyncInquiryPortShape,
  perspectiveName: string,
  state: SettleState,
  everything: boolean
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function* () {
    const local: Array<string> = []
    const ask: Array<string> = []
    for (const id of state.remaining) {
      if (yield* tracker.isPending(id, perspectiveName)) {
        state.seenLocal.add(id)
        local.push(id)
        if (everything && port.authoritative === true) ask.push(id)
      } else if (state.seenLocal.has(id)) state.remaining.delete(id)
      else ask.push(id)
    }
    if (ask.length === 0) return local
    const answer = yield* port.pendingEventIds(perspectiveName, ask)
    const pending = new Set(answer.pendingEventIds)
    for (const id of answer.deadLetteredEventIds ?? []) if (state.remaining.has(id)) state.deadLettered.add(id)
    for (const id of ask) if (!pending.has(id)) state.remaining.delete(id)
    return local.filter((id) => state.remaining.has(id))
  })

/**
 * Waits (no timeout of its own) until `state.remaining` is empty or an event was dead-lettered: true; false when the tracker dropped a
 * tracked event it was waiting for (stale cleanup, unregistered) and no authoritative port can tell.
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
  endsAtOnce: (state: SettleState) => boolean = (s) => s.deadLettered.size > 0,
  /** The change counter read before the check that produced `firstLocal` (so a signal since then is not lost). */
  firstGeneration?: number
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    let local = firstLocal
    let generation = firstGeneration ?? (port.changes === undefined ? 0 : yield* port.changes.current)
    // A dead-lettered awaited event ends the wait at once: it will never be applied, so waiting longer cannot help.
    while (state.remaining.size > 0 && !endsAtOnce(state)) {
      const trackerWait =
        local.length === 0
          ? Effect.never
          : Effect.map(
              tracker.waitForPerspectiveEvents(local, perspectiveName, { timeout: Duration.infinity, awaiterId: EventId.unsafeMake() }),
              (ok) => (ok ? ("tracker" as const) : ("dropped" as const))
            )
      const changed = port.changes === undefined ? Effect.never : Effect.as(port.changes.awaitChangeAfter(generation), "changed" as const)
      const woke = yield* Effect.raceAll([trackerWait, changed, Effect.as(Effect.sleep(pollInterval), "poll" as const)])
      if (woke === "dropped") {
        if (port.authoritative !== true) return false
        for (const id of local) state.seenLocal.delete(id)
      }
      generation = port.changes === undefined ? 0 : yield* port.changes.current
      local = yield* check(tracker, port, perspectiveName, state, woke !== "tracker")
    }
    return true
  })
