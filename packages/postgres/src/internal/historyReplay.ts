/**
 * One chunk of a version's history replayed in one transaction (see `sql/replayHistory.ts` for the fencing): pick up
 * to `maxStreams` planned streams (row-locked); then, a piece of `pieceStreams` streams at a time, read their events
 * in one statement, decode and fold each stream in memory with the perspective's runner (the same fold, encoding and
 * failure blame as the worker's cycle) and write the piece's models in bulk; then the cursors, the plan rows' deletion
 * and the work-row path for the streams that cannot be replayed here — all or nothing.
 *
 * Pieces, not one read for the whole chunk: the replay shares its process's event loop with the live worker, and
 * the driver parses a result as it arrives, in one go — a chunk's 5,000 events read at once held the loop for tens of
 * milliseconds at a time, and every live cycle waiting behind it was that much later.
 *
 * A stream goes to the work-row path (its history as work rows that fire no receptors, applied by the worker as
 * before replays existed) when it already has a cursor, when an event of it does not decode, or when the fold stops
 * (a handler throws, a model does not encode): nothing of it is written here, so the worker applies its events up to
 * the failing one, retries that one with backoff and dead-letters it after `maxPerspectiveEventAttempts`, as always.
 */
import type { Envelope, EventRegistry, PerspectiveRunner } from "@whizbang/core"
import { Array as Arr, Data, Effect } from "effect"
import type { PgClient } from "../PgClient.js"
import type { PostgresError } from "../PostgresError.js"
import * as Sql from "../sql/replayHistory.js"
import { type ModelRowWrite, writeModels } from "./writeModels.js"

/** A version whose history this instance can replay. */
export interface Target {
  readonly key: string
  readonly eventTypes: ReadonlyArray<string>
  readonly runner: PerspectiveRunner.PerspectiveRunner
}

/** What one chunk did. */
export interface Chunk {
  /** Plan rows picked (and deleted): 0 when none was left after `after`, or all were held by other replayers. */
  readonly picked: number
  /** The last stream picked (the next chunk's keyset start). */
  readonly last: string | undefined
  /** Streams folded and written here, and their events. */
  readonly replayedStreams: number
  readonly events: number
  /** Streams given to the work-row path, and the work rows written for them. */
  readonly fallbackStreams: number
  readonly fallbackEvents: number
}

/**
 * A cursor of a picked stream appeared between the pick and the chunk's commit (a bootstrap): the chunk is rolled back
 * and picked again, when that stream goes to the work-row path.
 */
export class ChunkConflict extends Data.TaggedError("ChunkConflict")<{ readonly perspectiveName: string }> {}

type Picked = typeof Sql.Picked.Type
type EventRow = typeof Sql.HistoryEvent.Type

const none: Chunk = { picked: 0, last: undefined, replayedStreams: 0, events: 0, fallbackStreams: 0, fallbackEvents: 0 }

// Decodes one stream's rows; undefined when one does not decode (the stream then takes the work-row path).
const decodeStream = Effect.fnUntraced(function* (events: EventRegistry.EventRegistry, rows: ReadonlyArray<EventRow>) {
  const envelopes: Array<Envelope.Envelope> = []
  for (const row of rows) {
    const decoded = yield* Effect.result(events.decode(row.eventType, row.payload, row.eventId))
    if (decoded._tag === "Failure") return undefined
    envelopes.push({
      eventId: row.eventId,
      streamId: row.streamId,
      streamVersion: row.streamVersion,
      eventType: row.eventType,
      payload: decoded.success,
      metadata: (row.metadata ?? {}) as Envelope.EventMetadata,
      scope: (row.scope ?? {}) as Envelope.EventScope
    })
  }
  return envelopes
})

/** What a chunk's pieces found so far: the streams folded and their last events, the work-row path's streams. */
interface Folded {
  readonly replayed: Array<string>
  readonly lastIds: Array<string>
  readonly fallback: Array<Picked>
  applied: number
}

// Reads `piece`'s history in one statement and folds each stream in memory into `folded`; returns the model writes
// of the streams folded.
const foldPiece = Effect.fnUntraced(function* (
  client: PgClient["Service"],
  events: EventRegistry.EventRegistry,
  target: Target,
  piece: ReadonlyArray<Picked>,
  types: Array<string>,
  folded: Folded
) {
  const rows = yield* Sql.readHistory(client, {
    streamIds: piece.map((p) => p.streamId),
    throughEventIds: piece.map((p) => p.throughEventId),
    eventTypes: types
  })
  const byStream = Arr.groupBy(rows, (row) => row.streamId)
  const writes: Array<ModelRowWrite> = []
  for (const p of piece) {
    const list = Object.hasOwn(byStream, p.streamId) ? byStream[p.streamId] : undefined
    // No event of the types left (a plan row with nothing behind it): nothing to write, the plan row goes.
    if (list === undefined) continue
    const envelopes = yield* decodeStream(events, list)
    const outcome = envelopes === undefined ? undefined : yield* target.runner.run(p.streamId, undefined, envelopes)
    if (envelopes === undefined || outcome === undefined || outcome.failure !== undefined || outcome.lastEventId === undefined) {
      folded.fallback.push(p)
      continue
    }
    const last = envelopes.find((e) => e.eventId === outcome.lastEventId)!
    writes.push({
      perspectiveName: target.key,
      streamId: p.streamId,
      data: outcome.model,
      action: outcome.action,
      metadata: { ...(last.metadata as object), eventId: last.eventId, eventType: last.eventType },
      scope: last.scope,
      eventsApplied: outcome.appliedEventIds.length
    })
    folded.replayed.push(p.streamId)
    folded.lastIds.push(outcome.lastEventId)
    folded.applied += outcome.appliedEventIds.length
  }
  return writes
})

/** Replays one chunk of `target`'s planned history after stream `after`, in one transaction of `client`. */
export const replayChunk = (
  client: PgClient["Service"],
  events: EventRegistry.EventRegistry,
  target: Target,
  options: {
    readonly after: string
    readonly maxStreams: number
    /** Streams read, folded and written at a time within the chunk. */
    readonly pieceStreams: number
    readonly partitionCount: number
  }
): Effect.Effect<Chunk, PostgresError | ChunkConflict> =>
  client.withTransaction(
    Effect.gen(function* () {
      const picked = yield* Sql.pickChunk(client, { key: target.key, after: options.after, maxStreams: options.maxStreams })
      if (picked.length === 0) return none
      const types = [...target.eventTypes]
      const fresh = picked.filter((p) => !p.hasCursor)
      const folded: Folded = { replayed: [], lastIds: [], fallback: picked.filter((p) => p.hasCursor), applied: 0 }
      // A piece of streams at a time: read, folded and written before the next is read (see the module notes).
      for (let from = 0; from < fresh.length; from += options.pieceStreams) {
        const writes = yield* foldPiece(client, events, target, fresh.slice(from, from + options.pieceStreams), types, folded)
        if (writes.length > 0) yield* writeModels(client, writes)
      }
      const { replayed, lastIds, fallback, applied } = folded
      const done = yield* Sql.finishChunk(client, {
        key: target.key,
        replayed,
        lastEventIds: lastIds,
        eventTypes: types,
        fallback: fallback.map((p) => p.streamId),
        fallbackThrough: fallback.map((p) => p.throughEventId),
        partitionCount: options.partitionCount,
        picked: picked.map((p) => p.streamId)
      })
      if (done.cursors < replayed.length) return yield* new ChunkConflict({ perspectiveName: target.key })
      // Work the fold covered was removed: read-your-writes waits that counted on it look again.
      if (done.covered > 0) yield* client.query("SELECT pg_notify('wh_processed', current_schema())")
      // Work rows it wrote wake the workers (the wh_notify_work trigger did, before migration 0019).
      if (done.fallback > 0) yield* client.query("SELECT pg_notify('wh_work', current_schema())")
      return {
        picked: picked.length,
        last: picked.at(-1)!.streamId,
        replayedStreams: replayed.length,
        events: applied,
        fallbackStreams: fallback.length,
        fallbackEvents: done.fallback
      }
    })
  )
