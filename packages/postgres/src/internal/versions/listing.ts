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
import type { ListOptions, State, VersionInfo } from "../../PgPerspectiveVersions.js"
import type { PostgresError } from "../../PostgresError.js"
import * as Sql from "../../sql/versions.js"
import { defaultMaxLag } from "./cutoverSettings.js"

/**
 * The build loop counts the pending events of a version that is neither building nor has history planned (a live
 * or retiring one) up to this many: `whizbang_version_lag_events` reads this for any larger backlog.
 */
const buildLoopLagCountCap = 1_000

interface ListedRow {
  readonly perspective_name: string
  readonly base_name: string
  readonly version: number
  readonly state: State
  readonly event_types: Array<string>
  readonly registered_at: Date
  readonly state_changed_at: Date
  readonly retire_after: Date | null
  readonly backfill_streams: number
  readonly backfill_events: string | number
  readonly planned: number
  readonly pending: number
  readonly oldest_pending: Date | null
  readonly dead_letters: number
  readonly has_runner: boolean
  readonly handover_until: Date | null
  readonly handover_abandoned: boolean
  readonly replay_started_at: Date | null
}

const toInfo =
  (now: number) =>
  (r: ListedRow): VersionInfo => {
    const historyEvents = Number(r.backfill_events)
    const replayedStreams = r.backfill_streams - r.planned
    // Planned streams count as not applied; of the streams given to the worker, pending work is not applied yet.
    const streamShare = r.backfill_streams === 0 ? 1 : replayedStreams / r.backfill_streams
    const eventShare = historyEvents === 0 ? 1 : Math.max(0, 1 - r.pending / historyEvents)
    const progress = r.state === "building" || r.planned > 0 ? Math.min(streamShare, eventShare) : 1
    // The replay's average rate since it started: the planned streams' share of the history's events, done.
    const replaySeconds = r.replay_started_at === null || r.planned === 0 ? 0 : (now - r.replay_started_at.getTime()) / 1000
    const replayRate = replaySeconds > 0 ? (historyEvents * streamShare) / replaySeconds : undefined
    return {
      perspectiveName: r.perspective_name,
      baseName: r.base_name,
      version: r.version,
      state: r.state,
      eventTypes: r.event_types,
      registeredAt: r.registered_at,
      stateChangedAt: r.state_changed_at,
      retireAfter: r.retire_after ?? undefined,
      historyStreams: r.backfill_streams,
      streamsToReplay: r.planned,
      historyEvents,
      pendingEvents: r.pending,
      lagSeconds: r.oldest_pending === null ? 0 : Math.max(0, (now - r.oldest_pending.getTime()) / 1000),
      progress: Math.max(0, Math.min(1, progress)),
      deadLetters: r.dead_letters,
      hasRunner: r.has_runner,
      caughtUp: false,
      handOverUntil: r.handover_until ?? undefined,
      handOverAbandoned: r.handover_abandoned,
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
    return yield* listed(Sql.listVersions, [deadAfter])
  })

/** The versions a listing statement returns, as `VersionInfo`s. */
const listed = (sql: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const rows = yield* (yield* PgClient).query<ListedRow>(sql, params)
    const now = yield* Clock.currentTimeMillis
    return withCaughtUp(rows.map(toInfo(now)))
  })

/**
 * The build loop's listing, every round: as {@link list}, except that a version neither building nor with history
 * planned has its pending events counted up to {@link buildLoopLagCountCap} and no `lagSeconds` (0): counting a live
 * version's whole backlog every round was most of the loop's database time under load.
 */
export const listForBuild = listed(Sql.listVersionsForBuild, [
  Duration.toSeconds(WorkerOptions.defaults.abandonStaleInstanceThreshold),
  buildLoopLagCountCap
])

/** See `PgPerspectiveVersions.list`. */
export const list: Effect.Effect<ReadonlyArray<VersionInfo>, PostgresError, PgClient> = listWith()
