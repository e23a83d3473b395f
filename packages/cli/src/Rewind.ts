/**
 * Rewind and rebuild, at the database level, for one stream or a whole perspective (in batches of streams,
 * each its own transaction, reporting progress after each).
 *
 * - `rewind` flags cursors RewindRequired with the stream's first event as the trigger; the worker's rewind
 *   machinery replays them under a stream lock.
 * - `rebuild` deletes the perspective's rows, cursors, snapshots and pending work of the streams and plans their
 *   history (`wh_perspective_backfill`) for the replay of the instances that run the perspective
 *   (`PgHistoryReplay`: read in large ordered batches, folded in memory, written in bulk — the path of a new
 *   version's history), which rebuilds them from scratch; a stream's later events wait for its replay. With `-t`
 *   (some of the types only), every event of those types is enqueued as a work row instead, which the ordinary
 *   pipeline applies. Leases on the streams are revoked in the same transaction, so an instance applying them right
 *   now cannot commit a model computed before the rebuild (its fencing fails and it retries).
 *
 * A rebuild is **in place**: a repair of a read model whose code did not change (rows lost or damaged, a bug fixed
 * without a change of logic). Readers see each batch's rows missing until the workers re-apply them. A change of a
 * perspective's logic or shape on a live service is a new **version** instead (`version: 2`): built beside the one
 * serving reads, switched in one transaction, undone by `rollback`, no read ever sees a half-built model.
 *
 * The perspective must be registered (`wh_perspective_versions`: an instance of the service registers what it runs
 * when it starts), and the event types must be among those it handles (by default all of them); anything else is
 * refused before a row is written. A base name (`balance`) means its live version, a key (`balance__v2`,
 * `balance__v1` for version 1) that version.
 *
 * Running workers need not be stopped: their dedup cache is keyed by work row, and a rebuild's rows are new, so
 * events applied moments before are applied again to the rebuilt model, never dropped as duplicates.
 *
 * @since 0.1.0
 */
import { Perspective } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { PerspectiveTable, PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { orFailure, run } from "./internal/database.js"
import * as Registry from "./internal/registry.js"
import * as Validate from "./internal/validate.js"
import { notFound, type OperationError, refused } from "./OperationError.js"

const { Rebuilds, Rewinds } = PgOperations

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
  /**
   * Only events of these types are re-enqueued; each must be one the perspective handles. Default (absent or
   * empty): every type it handles, as registered.
   */
  readonly eventTypes?: ReadonlyArray<string> | undefined
  /** Must match the workers' `partitionCount`; default 10,000. */
  readonly partitionCount?: number | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Result {
  /** The perspective version acted on: its key (a base name given resolves to the live version's key). */
  readonly perspective: string
  readonly streams: number
  /** Rebuild only: work rows enqueued (a rebuild of some of the types, `eventTypes`). */
  readonly enqueued: number
  /** Rebuild only: events planned for the replay (a rebuild of every type the perspective handles). */
  readonly planned?: number | undefined
}

const nilUuid = "00000000-0000-0000-0000-000000000000"

// A base name whose live version is registered under another key (`balance` while `balance__v2` is live) means that
// key; any other name is taken as given (the cursors of a perspective the registry does not know can be rewound).
const liveKey = (name: string) => Effect.map(Registry.load, (registered) => Registry.resolve(name, registered)?.key ?? name)

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
    const perspective = yield* liveKey(yield* Validate.perspective(options.perspective))
    const flag = (streams: ReadonlyArray<string>) => run(Rewinds.flag, { perspectiveName: perspective, streamIds: streams })
    if (options.streamId !== undefined) {
      const streamId = yield* Validate.uuid(options.streamId, "stream")
      const flagged = yield* flag([streamId])
      if (flagged === 0) return yield* notFound(`cursor of perspective ${perspective} for stream`, streamId)
      return { perspective, streams: 1, enqueued: 0 }
    }
    const { n: count } = yield* run(Rewinds.countCursors, { perspectiveName: perspective })
    if (count === 0) return yield* notFound("perspective with cursors", perspective)
    const page = (after: string, limit: number) =>
      Effect.map(run(Rewinds.cursorStreams, { perspectiveName: perspective, after, limit }), (rows) => rows.map((r) => r.streamId))
    const { affected } = yield* inBatches(options, count, page, flag)
    return { perspective, streams: affected, enqueued: 0 }
  }).pipe(Effect.withSpan("whizbang.rewind", { attributes: { "whizbang.perspective": options.perspective, "whizbang.mode": "rewind" } }))

/**
 * What a rebuild would do, counted before anything is written ({@link planRebuild}).
 *
 * @category models
 * @since 0.4.0
 */
export interface RebuildPlan {
  /** The version rebuilt: its key (`balance`, `balance__v2`). */
  readonly perspective: string
  readonly baseName: string
  readonly version: number
  /** The event types re-enqueued. */
  readonly eventTypes: ReadonlyArray<string>
  /** The table whose rows are emptied; null when the version has none yet. */
  readonly table: string | null
  /** Read-model rows emptied (readers miss them until the workers re-apply them). */
  readonly rows: number
  /** Streams whose rows, cursors, snapshots and pending work are reset. */
  readonly streams: number
  /** Pending work rows dropped (those of the re-enqueued types come back among `events`). */
  readonly pendingWork: number
  /** Events rebuilt. */
  readonly events: number
  /**
   * How: `replay` (every type it handles: the history is planned for the replay of the instances that run it) or
   * `work` (some of its types, `eventTypes`: a work row per event for the workers).
   */
  readonly via: "replay" | "work"
}

// Everything a rebuild needs, checked: the registered version, its types, its table, the partition count.
const prepare = (options: RebuildOptions) =>
  Effect.gen(function* () {
    const name = yield* Validate.perspective(options.perspective)
    const streamId = options.streamId === undefined ? undefined : yield* Validate.uuid(options.streamId, "stream")
    const partitions = yield* Validate.positiveInt(options.partitionCount ?? 10_000, "partition-count")
    const registered = yield* Registry.load
    const target = Registry.resolve(name, registered)
    if (target === undefined) return yield* Registry.unknownPerspective(name, registered)
    if (target.state === "retired") {
      return yield* refused(
        `${target.key} is retired: nothing routes or applies its work any more, so a rebuild would enqueue work no instance runs`
      )
    }
    if (target.state === "building" || target.state === "ready") {
      return yield* refused(
        `${target.key} is ${target.state}: its history is being replayed and handed over; a rebuild now would race the build (wait until it is live: whizbang perspectives --watch)`
      )
    }
    const types = yield* Registry.eventTypes(target, options.eventTypes ?? [], registered)
    // The replay folds every type the perspective handles: a rebuild of some of them goes as work rows.
    const via = types.length === target.eventTypes.length && target.eventTypes.every((t) => types.includes(t)) ? "replay" : "work"
    const perspective = target.key
    // The version's own table; for version 1 of a database no release with versions has started on yet, the
    // plain `wh_per_<name>` table it still has.
    const own = PerspectiveTable.ofVersion(perspective)
    const legacy = PerspectiveTable.served(perspective)
    const ownTable = (yield* run(Rebuilds.tableExists, { table: own })).present
    const legacyTable =
      !ownTable && Perspective.parseKey(perspective).version === 1 && (yield* run(Rebuilds.baseTableExists, { table: legacy })).present
    const table = ownTable ? own : legacyTable ? legacy : undefined
    return { target, perspective, types, table, partitions, streamId, via: via as "replay" | "work" }
  })

/**
 * Checks a rebuild as {@link rebuild} does (an unregistered perspective is `NotFound`, an unknown or unhandled event
 * type `InvalidInput`, a version building, ready or retired `Refused`) and counts what it would empty and re-enqueue.
 * Writes nothing.
 *
 * @category constructors
 * @since 0.4.0
 */
export const planRebuild = (options: RebuildOptions): Effect.Effect<RebuildPlan, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const { target, perspective, types, table, streamId, via } = yield* prepare(options)
    const stream = streamId ?? null
    const request = { perspectiveName: perspective, eventTypes: types, streamId: stream }
    const counts = yield* run(Rebuilds.counts, request)
    const rows = table === undefined ? 0 : (yield* run(Rebuilds.countModels, { ...request, table })).n
    return {
      perspective,
      baseName: target.baseName,
      version: target.version,
      eventTypes: types,
      table: table ?? null,
      rows,
      streams: streamId === undefined ? counts.streams : 1,
      pendingWork: counts.pending,
      events: counts.events,
      via
    }
  })

/**
 * Deletes the perspective's rows, cursors, snapshots and pending work of the streams and plans their history for
 * the replay of the instances that run it (every type it handles; with `eventTypes`, those types re-enqueued as
 * work rows instead), one transaction per batch. Refuses, writing nothing, what
 * {@link planRebuild} refuses.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rebuild = (options: RebuildOptions): Effect.Effect<Result, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const { perspective, types, table, partitions, streamId, via } = yield* prepare(options)
    if (via === "replay") yield* orFailure(run(Rebuilds.resetHistory, { perspectiveName: perspective }))
    const step = (streams: ReadonlyArray<string>) =>
      orFailure(
        PgClient.withTransaction(
          Effect.gen(function* () {
            const batch = { perspectiveName: perspective, streamIds: streams }
            yield* run(Rebuilds.revokeLeases, batch)
            if (table !== undefined) yield* run(Rebuilds.deleteModels, { table, streamIds: streams })
            yield* run(Rebuilds.deleteCursors, batch)
            yield* run(Rebuilds.deleteSnapshots, batch)
            yield* run(Rebuilds.deletePendingWork, batch)
            const events =
              via === "replay"
                ? (yield* run(Rebuilds.planHistory, { ...batch, eventTypes: types })).events
                : yield* run(Rebuilds.enqueueEvents, { ...batch, eventTypes: types, partitionCount: partitions })
            // The workers are told at commit: a tenant's are started by this alone (its fleet polls no idle tenant).
            if (events > 0) yield* run(PgOperations.Work.wake)
            return events
          })
        )
      )
    if (streamId !== undefined) {
      yield* options.onProgress?.({ done: 0, total: 1 }) ?? Effect.void
      const events = yield* step([streamId])
      yield* options.onProgress?.({ done: 1, total: 1 }) ?? Effect.void
      return via === "replay" ? { perspective, streams: 1, enqueued: 0, planned: events } : { perspective, streams: 1, enqueued: events }
    }
    const target = { perspectiveName: perspective, eventTypes: types }
    const { n: count } = yield* run(Rebuilds.countStreams, target)
    const page = (after: string, limit: number) =>
      Effect.map(run(Rebuilds.streams, { ...target, after, limit }), (rows) => rows.map((r) => r.streamId))
    const { affected, done } = yield* inBatches(options, count, page, step)
    return via === "replay"
      ? { perspective, streams: done, enqueued: 0, planned: affected }
      : { perspective, streams: done, enqueued: affected }
  }).pipe(Effect.withSpan("whizbang.rewind", { attributes: { "whizbang.perspective": options.perspective, "whizbang.mode": "rebuild" } }))
