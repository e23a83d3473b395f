/**
 * The statements that commit a worker's results (read-model rows, cursors and work rows commit together) or record
 * its failures.
 *
 * Both first fence the leases: renew and row-lock the instance's live leases and see which streams it still owns.
 * Work on any other stream is not committed — its lease expired or another instance took it over, and that
 * instance redoes it (invariant 5). Holding the row locks until commit stops a takeover in between.
 *
 * A completion then row-locks the completed pairs' cursors (in (stream, perspective) order, before any model row,
 * the order purge and rewind use too). A pair whose cursor is under a live stream lock (purge, rewind, bootstrap),
 * or moved since the cycle's fetch (a purge or rewind that committed and released in between), is not committed:
 * the whole completion is dropped and its work delivered again, like a lost lease. Holding the cursor row locks
 * until commit makes a lock taken later wait for the commit.
 */
import type { CompletionStrategy } from "@whizbang/core"
import { Schema } from "effect"
import { ActiveStreams as a, ServiceInstances as i } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"

/**
 * Renews and row-locks the instance's live leases on these streams; returns the streams it still owns. With a boot
 * token of this process (`PgInstanceRegistry`; null without a registry), nothing is owned once another process
 * registered the same instance id (a successor after this one was declared dead): instance ids alone cannot tell
 * the two apart.
 *
 * @category operations
 * @since 0.5.0
 */
export const fenceStreams = Operation.findAll({
  name: "completeWork.fenceStreams",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: a.streamId },
  params: (r: {
    readonly instanceId: string
    readonly streamIds: ReadonlyArray<string>
    readonly leaseSeconds: number
    readonly bootToken: string | null
  }) => [r.instanceId, r.streamIds, r.leaseSeconds, r.bootToken],
  prepared: true,
  sql: `
UPDATE ${a.table} SET ${a.leaseExpiry} = now() + make_interval(secs => $3::int)
WHERE ${a.streamId} IN (
  SELECT ${a.streamId} FROM ${a.table}
  WHERE ${a.streamId} = ANY($2::uuid[]) AND ${a.instanceId} = $1::uuid AND ${a.leaseExpiry} > now()
    AND ($4::text IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${i.table} i WHERE i.${i.instanceId} = $1::uuid AND i.${i.metadata}->>'bootToken' IS DISTINCT FROM $4::text
    ))
  ORDER BY ${a.streamId} FOR UPDATE
)
RETURNING ${a.streamId}`
})

/**
 * What a completion commits, and how (the coordinator's settings).
 *
 * @category models
 * @since 0.5.0
 */
export interface CompletionRequest {
  readonly instanceId: string
  readonly leaseSeconds: number
  /** This process's boot token (`PgInstanceRegistry`), or null without a registry. */
  readonly bootToken: string | null
  readonly completions: ReadonlyArray<CompletionStrategy.PerspectiveCompletion>
  /** Mark work rows processed instead of deleting them. */
  readonly debugMode: boolean
  readonly snapshots: { readonly every: number; readonly keep: number }
}

/**
 * The completion in ONE round trip: `wh_complete_work` (migration 0009) fences the leases and the cursors, writes the
 * model rows, advances and creates the cursors, removes exactly the applied work rows, releases the streams left
 * without work, queues the `wh_processed` notifications and writes the due snapshots, each statement on a fresh
 * snapshot, all in the statement's own transaction. A refusal (lease lost, cursor stream-locked or moved since the
 * fetch, cursor created meanwhile, work rows already covered by a rewind) raises SQLSTATE {@link refusedState} with
 * the reason as its message, which rolls all of it back.
 *
 * Each notification's payload is the schema, a newline, a perspective, a tab and up to {@link processedNoticeChunk}
 * event ids separated by commas (`<schema>\n<perspective>\t<id>,<id>...`): the events whose work rows the
 * completion removed. A completion that removed no work row sends the bare schema ("something changed").
 *
 * Params: $1 instance id, $2 lease seconds, $3 boot token of this process (`PgInstanceRegistry`, or null: with a
 * token nothing is owned once another process registered the same instance id), $4 the completion's stream ids;
 * per pair (parallel arrays) $5 stream ids, $6 perspective names, $7 whether the fetch recorded the cursor, $8 the
 * cursor at the fetch (null: none), $9 the new last event id (null: nothing applied), $10 status; $11 work ids; per
 * model write (parallel arrays) $12 tables (`PerspectiveTable.ofVersion`), $13 perspective names, $14 stream ids, $15
 * the pair's last event id, $16 data, $17 metadata, $18 scope, $19 events applied, $20 deleted instead; $21 debug
 * mode (mark work rows processed instead of deleting them), $22 snapshot every, $23 snapshots kept, $24 event ids
 * per notification.
 *
 * @category operations
 * @since 0.5.0
 */
export const completeWork = Operation.void({
  name: "completeWork.completeWork",
  params: (r: CompletionRequest) => {
    const { completions } = r
    const writes = completions.flatMap((c) => (c.model === undefined ? [] : [{ pair: c, model: c.model }]))
    return [
      r.instanceId,
      r.leaseSeconds,
      r.bootToken,
      [...new Set(completions.map((c) => c.streamId))],
      completions.map((c) => c.streamId),
      completions.map((c) => c.perspectiveName),
      completions.map((c) => c.cursorAtFetch !== undefined),
      completions.map((c) => c.cursorAtFetch ?? null),
      completions.map((c) => c.lastEventId ?? null),
      completions.map((c) => c.status),
      completions.flatMap((c) => c.workIds),
      writes.map((w) => PerspectiveTable.ofVersion(w.pair.perspectiveName)),
      writes.map((w) => w.pair.perspectiveName),
      writes.map((w) => w.pair.streamId),
      writes.map((w) => w.pair.lastEventId ?? null),
      writes.map((w) => (w.model.action === "none" ? JSON.stringify(w.model.data) : null)),
      writes.map((w) => JSON.stringify(w.model.metadata ?? {})),
      writes.map((w) => JSON.stringify(w.model.scope ?? {})),
      writes.map((w) => w.model.eventsApplied),
      writes.map((w) => w.model.action !== "none"),
      r.debugMode,
      r.snapshots.every,
      r.snapshots.keep,
      processedNoticeChunk
    ]
  },
  prepared: true,
  sql: `SELECT wh_complete_work(
  $1::uuid, $2::int, $3::text, $4::uuid[], $5::uuid[], $6::text[], $7::boolean[], $8::uuid[], $9::uuid[], $10::int[],
  $11::uuid[], $12::text[], $13::text[], $14::uuid[], $15::uuid[], $16::jsonb[], $17::jsonb[], $18::jsonb[], $19::int[],
  $20::boolean[], $21::boolean, $22::int, $23::int, $24::int)`
})

/** The SQLSTATE of a completion `wh_complete_work` refused (its message says why); nothing of it was written. */
export const refusedState = "WH001"

/**
 * Event ids per `wh_processed` notification of a completion: 180 ids of 36 characters and a comma, a perspective
 * name (at most 48) and a schema name (at most 63) stay below Postgres's 8,000-byte payload limit.
 */
export const processedNoticeChunk = 180
