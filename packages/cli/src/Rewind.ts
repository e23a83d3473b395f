/**
 * Rewind and rebuild, at the database level, for one stream or a whole perspective (in batches of streams,
 * each its own transaction, reporting progress after each).
 *
 * - `rewind` flags cursors RewindRequired with the stream's first event as the trigger; the worker's rewind
 *   machinery replays them under a stream lock.
 * - `rebuild` deletes the perspective's rows, cursors, snapshots and pending work of the streams and enqueues
 *   a work row for every event of the handled types, which the ordinary pipeline applies from scratch. Leases
 *   on the streams are revoked in the same transaction, so an instance applying them right now cannot commit
 *   a model computed before the rebuild (its fencing fails and it retries).
 *
 * Running workers need not be stopped: their dedup cache is keyed by work row, and a rebuild's rows are new, so
 * events applied moments before are applied again to the rebuilt model, never dropped as duplicates.
 *
 * @since 0.1.0
 */
import { Perspective } from "@whizbang/core"
import { PerspectiveTable, PgClient } from "@whizbang/postgres"
import { Effect } from "effect"
import { orFailure, query } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import { invalidInput, notFound, type OperationError } from "./OperationError.js"
import * as Sql from "./sql/rewind.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Progress {
  readonly done: number
  readonly total: number
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly perspective: string
  /** One stream; all of the perspective's streams when absent. */
  readonly streamId?: string | undefined
  /** Streams per transaction; default 500. */
  readonly batchSize?: number | undefined
  readonly onProgress?: ((progress: Progress) => Effect.Effect<void>) | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface RebuildOptions extends Options {
  /** The event types the perspective handles (its `eventTypes`). */
  readonly eventTypes: ReadonlyArray<string>
  /** Must match the workers' `partitionCount`; default 10,000. */
  readonly partitionCount?: number | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Result {
  readonly perspective: string
  readonly streams: number
  /** Rebuild only: work rows enqueued. */
  readonly enqueued: number
}

const nilUuid = "00000000-0000-0000-0000-000000000000"

// Walks the stream ids page by page (keyset), running `step` on each page, reporting progress after each.
const inBatches = (
  options: Options,
  total: number,
  page: (after: string, limit: number) => Effect.Effect<ReadonlyArray<string>, OperationError, PgClient.PgClient>,
  step: (streams: ReadonlyArray<string>) => Effect.Effect<number, OperationError, PgClient.PgClient>
) =>
  Effect.gen(function* () {
    const batchSize = yield* Validate.positiveInt(options.batchSize ?? 500, "batch-size")
    let after = nilUuid
    let done = 0
    let affected = 0
    yield* options.onProgress?.({ done, total }) ?? Effect.void
    for (;;) {
      const streams = yield* page(after, batchSize)
      if (streams.length === 0) break
      affected += yield* step(streams)
      done += streams.length
      after = streams.at(-1)!
      yield* options.onProgress?.({ done, total: Math.max(total, done) }) ?? Effect.void
    }
    return { done, affected }
  })

/**
 * Flags the cursors RewindRequired (trigger: each stream's first event).
 *
 * @category constructors
 * @since 0.1.0
 */
export const rewind = (options: Options): Effect.Effect<Result, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const perspective = yield* Validate.perspective(options.perspective)
    const flag = (streams: ReadonlyArray<string>) => Effect.map(query(Sql.flagRewind, [perspective, streams]), (rows) => rows.length)
    if (options.streamId !== undefined) {
      const streamId = yield* Validate.uuid(options.streamId, "stream")
      const flagged = yield* flag([streamId])
      if (flagged === 0) return yield* notFound(`cursor of perspective ${perspective} for stream`, streamId)
      return { perspective, streams: 1, enqueued: 0 }
    }
    const [count] = yield* query<{ n: number }>(Sql.countCursors, [perspective])
    if ((count?.n ?? 0) === 0) return yield* notFound("perspective with cursors", perspective)
    const page = (after: string, limit: number) =>
      Effect.map(query<{ stream_id: string }>(Sql.cursorStreams, [perspective, after, limit]), (rows) => rows.map((r) => r.stream_id))
    const { affected } = yield* inBatches(options, count!.n, page, flag)
    return { perspective, streams: affected, enqueued: 0 }
  }).pipe(Effect.withSpan("whizbang.rewind", { attributes: { "whizbang.perspective": options.perspective, "whizbang.mode": "rewind" } }))

/**
 * Deletes the perspective's rows, cursors, snapshots and pending work of the streams and re-enqueues every
 * event of `eventTypes`, one transaction per batch.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rebuild = (options: RebuildOptions): Effect.Effect<Result, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const perspective = yield* Validate.perspective(options.perspective)
    if (options.eventTypes.length === 0) {
      return yield* invalidInput("event-type", "rebuild needs the event types the perspective handles (--event-type, repeatable)")
    }
    const partitions = yield* Validate.positiveInt(options.partitionCount ?? 10_000, "partition-count")
    // The version's own table; for version 1 of a database no release with versions has started on yet, the
    // plain `wh_per_<name>` table it still has.
    const own = PerspectiveTable.ofVersion(perspective)
    const legacy = PerspectiveTable.served(perspective)
    const [ownTable] = yield* query<{ present: boolean }>(Sql.tableExists, [own])
    const [legacyTable] =
      ownTable?.present === true || Perspective.parseKey(perspective).version !== 1
        ? [undefined]
        : yield* query<{ present: boolean }>(Sql.baseTableExists, [legacy])
    const table = ownTable?.present === true ? own : legacyTable?.present === true ? legacy : undefined
    const types = [...options.eventTypes]
    const step = (streams: ReadonlyArray<string>) =>
      orFailure(
        PgClient.withTransaction(
          Effect.gen(function* () {
            yield* query(Sql.revokeLeases, [streams])
            if (table !== undefined) yield* query(Sql.deleteModels(table), [streams])
            yield* query(Sql.deleteCursors, [perspective, streams])
            yield* query(Sql.deleteSnapshots, [perspective, streams])
            yield* query(Sql.deletePendingWork, [perspective, streams])
            return (yield* query(Sql.enqueueEvents, [perspective, streams, types, partitions])).length
          })
        )
      )
    if (options.streamId !== undefined) {
      const streamId = yield* Validate.uuid(options.streamId, "stream")
      yield* options.onProgress?.({ done: 0, total: 1 }) ?? Effect.void
      const enqueued = yield* step([streamId])
      yield* options.onProgress?.({ done: 1, total: 1 }) ?? Effect.void
      return { perspective, streams: 1, enqueued }
    }
    const [count] = yield* query<{ n: number }>(Sql.countRebuildStreams, [perspective, types])
    const page = (after: string, limit: number) =>
      Effect.map(query<{ stream_id: string }>(Sql.rebuildStreams, [perspective, types, after, limit]), (rows) =>
        rows.map((r) => r.stream_id)
      )
    const { affected, done } = yield* inBatches(options, count?.n ?? 0, page, step)
    return { perspective, streams: done, enqueued: affected }
  }).pipe(Effect.withSpan("whizbang.rewind", { attributes: { "whizbang.perspective": options.perspective, "whizbang.mode": "rebuild" } }))
