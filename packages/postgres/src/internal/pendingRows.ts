/**
 * The fetch's rows (`sql/fetchPendingEvents.ts`, and the claim's fetch in `sql/claimWork.ts`) as the worker's pending
 * events, in the order `WorkCoordinator.fetchPendingEvents` promises: by stream, perspective and event id.
 *
 * The statements return their rows unordered. Sorting them in PostgreSQL was a quarter of a claim-and-fetch of 300
 * streams and 6,000 work rows (38 ms without the final `ORDER BY`, 53 ms with it, PostgreSQL 15,
 * `bench/src/claimAndFetchPlan.ts`). Here the rows are grouped by pair in one pass, and only what is out of order is
 * sorted: the pairs (a few hundred keys) and, when the server happened to send them so, the rows of one pair.
 */
import type { WorkCoordinator } from "@whizbang/core"
import type { PendingRow } from "../sql/fetchPendingEvents.js"

export type { PendingRow }

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const byEventId = (a: PendingRow, b: PendingRow) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0)
const byKey = <A>(a: readonly [string, A], b: readonly [string, A]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)

/** Whether the rows are in event-id order (the fetch nearly always sends a pair's rows so). */
const inEventOrder = (rows: ReadonlyArray<PendingRow>) => {
  for (let i = 1; i < rows.length; i++) if (rows[i - 1]!.event_id > rows[i]!.event_id) return false
  return true
}

/**
 * The rows grouped by stream, then perspective, each pair's rows in event-id order. PostgreSQL writes a uuid as
 * lowercase hex in one layout, so comparing the texts compares the uuids.
 */
const pairsInOrder = (rows: ReadonlyArray<PendingRow>): Array<Array<PendingRow>> => {
  const streams = new Map<string, Map<string, Array<PendingRow>>>()
  for (const r of rows) {
    let perspectives = streams.get(r.stream_id)
    if (perspectives === undefined) {
      perspectives = new Map()
      streams.set(r.stream_id, perspectives)
    }
    const pair = perspectives.get(r.perspective_name)
    if (pair === undefined) perspectives.set(r.perspective_name, [r])
    else pair.push(r)
  }
  const out: Array<Array<PendingRow>> = []
  for (const [, perspectives] of [...streams].sort(byKey)) {
    for (const [, pair] of perspectives.size === 1 ? perspectives : [...perspectives].sort(byKey)) {
      out.push(inEventOrder(pair) ? pair : pair.sort(byEventId))
    }
  }
  return out
}

/**
 * Rows of the fetch as pending events, by stream, perspective and event id: each event's columns come on one of its
 * rows only and are shared by the others; with models, a pair's first row (its lowest event id) carries its stored
 * row, which every row of the pair then carries. A work row whose event is not stored is left out (as with an inner
 * join to the events).
 */
export const toPendingEvents = (rows: ReadonlyArray<PendingRow>, modelsLoaded: boolean): Array<WorkCoordinator.PendingEvent> => {
  const events = new Map<string, PendingRow>()
  for (const r of rows) if (r.event_first && r.event_type !== null) events.set(r.event_id, r)
  const out: Array<WorkCoordinator.PendingEvent> = []
  for (const pair of pairsInOrder(rows)) {
    const first = pair[0]!
    const pairModel = !modelsLoaded ? undefined : first.model === null ? null : { data: first.model[0] }
    for (const r of pair) {
      const e = r.event_first ? r : events.get(r.event_id)
      if (e === undefined || e.event_type === null) continue
      // One object shape for every row (a hot path: thousands of rows per fetch).
      const event: Mutable<WorkCoordinator.PendingEvent> = {
        workId: r.work_id,
        streamId: r.stream_id,
        perspectiveName: r.perspective_name,
        eventId: r.event_id,
        eventType: e.event_type,
        payload: e.payload,
        attempts: r.attempts,
        metadata: e.metadata,
        scope: e.scope,
        blocked: r.blocked,
        rewindRequired: r.rewind_required,
        streamVersion: e.stream_version ?? 0,
        cursorLastEventId: r.cursor_last_event_id,
        fires: r.fires,
        more: r.more
      }
      if (pairModel !== undefined) event.storedModel = pairModel
      out.push(event)
    }
  }
  return out
}
