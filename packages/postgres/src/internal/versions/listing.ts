/**
 * The listing of versions: every registered version with its state and progress, as `VersionInfo` — what
 * `whizbang perspectives`, status and `awaitLive` show, and what the build loop decides on each round. Apart because
 * it is read-only and turns one row per version into the figures (progress, lag, replay rate, `caughtUp`) everyone
 * else reads.
 *
 * @internal
 */
import { WorkerOptions } from "@whizbang/core"
import { Clock, Duration, Effect } from "effect"
import { PgClient } from "../../PgClient.js"
import type { ListOptions, VersionInfo } from "../../PgPerspectiveVersions.js"
import type { PostgresError } from "../../PostgresError.js"
import * as Sql from "../../sql/versions.js"
import { defaultMaxLag } from "./cutoverSettings.js"

/**
 * The build loop counts the pending events of a version that is neither building nor has history planned (a live
 * or retiring one) up to this many: `whizbang_version_lag_events` reads this for any larger backlog.
 */
const buildLoopLagCountCap = 1_000

type ListedRow = typeof Sql.Listed.Type

const toInfo =
  (now: number) =>
  (r: ListedRow): VersionInfo => {
    const historyEvents = Number(r.backfillEvents)
    const replayedStreams = r.backfillStreams - r.planned
    // Planned streams count as not applied; of the streams given to the worker, pending work is not applied yet.
    const streamShare = r.backfillStreams === 0 ? 1 : replayedStreams / r.backfillStreams
    const eventShare = historyEvents === 0 ? 1 : Math.max(0, 1 - r.pending / historyEvents)
    const progress = r.state === "building" || r.planned > 0 ? Math.min(streamShare, eventShare) : 1
    // The replay's average rate since it started: the planned streams' share of the history's events, done.
    const replaySeconds = r.replayStartedAt === null || r.planned === 0 ? 0 : (now - r.replayStartedAt.getTime()) / 1000
    const replayRate = replaySeconds > 0 ? (historyEvents * streamShare) / replaySeconds : undefined
    return {
      perspectiveName: r.key,
      baseName: r.baseName,
      version: r.version,
      state: r.state,
      eventTypes: r.eventTypes,
      registeredAt: r.registeredAt,
      stateChangedAt: r.stateChangedAt,
      retireAfter: r.retireAfter ?? undefined,
      historyStreams: r.backfillStreams,
      streamsToReplay: r.planned,
      historyEvents,
      pendingEvents: r.pending,
      lagSeconds: r.oldestPending === null ? 0 : Math.max(0, (now - r.oldestPending.getTime()) / 1000),
      progress: Math.max(0, Math.min(1, progress)),
      deadLetters: r.deadLetters,
      hasRunner: r.hasRunner,
      caughtUp: false,
      handOverUntil: r.handoverUntil ?? undefined,
      handOverAbandoned: r.handoverAbandoned,
      replayEventsPerSecond: replayRate,
      replayEtaSeconds: replayRate === undefined || replayRate === 0 ? undefined : (historyEvents * (1 - streamShare)) / replayRate
    }
  }

/** Marks the building versions a cutover would start on now (see `VersionInfo.caughtUp`). */
const withCaughtUp = (versions: ReadonlyArray<VersionInfo>): ReadonlyArray<VersionInfo> =>
  versions.map((v) => {
    const live = versions.find((x) => x.baseName === v.baseName && x.state === "live")
    const caughtUp =
      v.state === "building" &&
      v.streamsToReplay === 0 &&
      v.pendingEvents <= defaultMaxLag &&
      v.deadLetters === 0 &&
      live !== undefined &&
      live.version < v.version
    return caughtUp ? { ...v, caughtUp } : v
  })

/** See `PgPerspectiveVersions.listWith`. */
export const listWith = (options: ListOptions = {}): Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const deadAfter = Duration.toSeconds(
      options.deadInstanceAfter === undefined
        ? WorkerOptions.defaults.abandonStaleInstanceThreshold
        : Duration.fromInputUnsafe(options.deadInstanceAfter)
    )
    return yield* listed((client) => Sql.listVersions(client, { deadInstanceAfterSeconds: deadAfter }))
  })

/** The versions a listing statement returns, as `VersionInfo`s. */
const listed = (
  statement: (client: PgClient["Service"]) => Effect.Effect<ReadonlyArray<ListedRow>, PostgresError>
): Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const rows = yield* statement(yield* PgClient)
    const now = yield* Clock.currentTimeMillis
    return withCaughtUp(rows.map(toInfo(now)))
  })

/**
 * The build loop's listing, every round: as {@link list}, except that a version neither building nor with history
 * planned has its pending events counted up to {@link buildLoopLagCountCap} and no `lagSeconds` (0): counting a live
 * version's whole backlog every round was most of the loop's database time under load.
 */
export const listForBuild = listed((client) =>
  Sql.listVersionsForBuild(client, {
    deadInstanceAfterSeconds: Duration.toSeconds(WorkerOptions.defaults.abandonStaleInstanceThreshold),
    countCap: buildLoopLagCountCap
  })
)

/** See `PgPerspectiveVersions.list`. */
export const list: Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> = listWith()
