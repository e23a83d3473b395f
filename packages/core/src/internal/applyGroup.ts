/**
 * The apply of one (stream, perspective) group of a worker cycle, in memory: drop the rows the dedup cache has seen
 * (re-delivered work), decode the payloads, and fold the events into the stored model through the perspective's
 * runner. Nothing here writes: the cycle (`workerCycle.ts`) reports what this returns.
 */
import { Effect, type Result } from "effect"
import type { Envelope, EventMetadata, EventScope } from "../Envelope.js"
import type { InvalidEventPayload, UnknownEventType } from "../EventStoreError.js"
import type * as PerspectiveRunner from "../PerspectiveRunner.js"
import type * as WorkCoordinator from "../WorkCoordinator.js"
import type { CycleDeps } from "./workerCycle.js"

/**
 * Dedup is by work row: only the database re-delivering the SAME row is a duplicate. Rebuild, rewind, purge and
 * dead-letter retry create new rows for events already applied, and those must be applied again (keyed by
 * (perspective, event), a rebuild within the TTL was silently dropped). Exported for tests and observers.
 */
export const dedupKey = (row: { readonly workId: string }) => row.workId

/** Decoded payloads of one cycle, by event id: an event handled by several perspectives is decoded once. */
export type DecodeCache = Map<string, Result.Result<unknown, UnknownEventType | InvalidEventPayload>>

export interface GroupFailure {
  readonly row: WorkCoordinator.PendingEvent
  readonly error: string
  /** `false`: not the event's fault (the stored model no longer decodes); no attempt is counted. */
  readonly countsAttempt?: false
}

/** What the apply of one group leaves for the cycle to report. */
export interface GroupApply {
  /** Rows the dedup cache had seen: acknowledged, not applied. */
  readonly skipped: ReadonlyArray<WorkCoordinator.PendingEvent>
  /** Rows applied, in order. */
  readonly applied: ReadonlyArray<WorkCoordinator.PendingEvent>
  readonly failure: GroupFailure | undefined
  /** The runner's outcome; `undefined` when no runner is registered for the perspective. */
  readonly outcome: PerspectiveRunner.RunOutcome | undefined
  /** The envelopes of `applied`. */
  readonly envelopes: ReadonlyArray<Envelope>
}

/** Whether `ids` are exactly the event ids of `rows`, in the same order. */
const inOrder = (ids: ReadonlyArray<string>, rows: ReadonlyArray<WorkCoordinator.PendingEvent>): boolean => {
  if (ids.length !== rows.length) return false
  for (let i = 0; i < ids.length; i++) if (ids[i] !== rows[i]!.eventId) return false
  return true
}

// `Effect.fnUntraced`, not a function returning `Effect.gen`: on Node 20 every fresh generator closure costs about
// 2.3 µs (a new prototype and hidden class each time), and this runs once per (stream, perspective) of a cycle.
export const applyGroup = Effect.fnUntraced(function* (
  deps: Pick<CycleDeps, "cache" | "events" | "perspectives">,
  rows: ReadonlyArray<WorkCoordinator.PendingEvent>,
  stored: unknown,
  decodedById: DecodeCache
) {
  const { streamId, perspectiveName } = rows[0]!
  const unprocessed = yield* deps.cache.filterUnprocessed(rows.map(dedupKey), perspectiveName, streamId)
  // Nearly always nothing is a duplicate: then no set is built.
  const fresh = unprocessed.length === rows.length ? undefined : new Set(unprocessed)
  const skipped = fresh === undefined ? [] : rows.filter((r) => !fresh.has(dedupKey(r)))
  const candidates = fresh === undefined ? rows : rows.filter((r) => fresh.has(dedupKey(r)))
  const envelopes: Array<Envelope> = []
  let failure: GroupFailure | undefined
  for (const row of candidates) {
    const decoded = decodedById.get(row.eventId) ?? (yield* Effect.result(deps.events.decode(row.eventType, row.payload, row.eventId)))
    decodedById.set(row.eventId, decoded)
    if (decoded._tag === "Failure") {
      failure = { row, error: decoded.failure.message }
      break
    }
    envelopes.push({
      eventId: row.eventId,
      streamId,
      streamVersion: row.streamVersion ?? 0,
      eventType: row.eventType,
      payload: decoded.success,
      metadata: (row.metadata ?? {}) as EventMetadata,
      scope: (row.scope ?? {}) as EventScope
    })
  }
  const runner = yield* Effect.result(deps.perspectives.get(perspectiveName))
  if (runner._tag === "Failure") {
    const unknown: GroupFailure = { row: candidates[0] ?? rows[0]!, error: runner.failure.message }
    return { skipped, applied: [], failure: unknown, outcome: undefined, envelopes: [] }
  }
  const outcome = yield* runner.success.run(streamId, stored, envelopes)
  // Nearly always every candidate is applied, in fetch order: then no lookup is built.
  if (outcome.failure === undefined && inOrder(outcome.appliedEventIds, candidates)) {
    return { skipped, applied: candidates, failure, outcome, envelopes }
  }
  const byEvent = new Map(candidates.map((r) => [r.eventId, r]))
  const applied = outcome.appliedEventIds.map((id) => byEvent.get(id)!)
  if (outcome.failure !== undefined) {
    const row = byEvent.get(outcome.failure.eventId) ?? candidates[applied.length] ?? candidates[0]!
    failure =
      outcome.storedModelUnreadable === true
        ? { row, error: outcome.failure.message, countsAttempt: false }
        : { row, error: outcome.failure.message }
  }
  const appliedIds = new Set(outcome.appliedEventIds)
  return { skipped, applied, failure, outcome, envelopes: envelopes.filter((e) => appliedIds.has(e.eventId)) }
})
