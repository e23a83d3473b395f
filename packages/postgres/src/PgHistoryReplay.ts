/**
 * The replay of perspective history: how a new version (`version: 2`), a new perspective's catch-up and
 * `whizbang rebuild` apply the events that were there before — at the speed of a set-based scan, not through the
 * worker's claim/fetch/fold/complete cycle one work row per event.
 *
 * History is planned in `wh_perspective_backfill` (per stream, the newest event it covers; every later event is
 * routed to the version by its append). The replay takes the plan a chunk at a time, one transaction each: up to
 * `replayChunkEvents` events of a few hundred streams, row-locked (`FOR UPDATE SKIP LOCKED`, so concurrent replayers —
 * fibers or instances — never take the same stream), read, folded in memory by the perspective's own runner and
 * written in bulk a piece of about 1,000 events at a time (one read of a whole chunk held the event loop the live
 * worker shares for tens of milliseconds), then a cursor per stream at its last event and the plan rows deleted. A
 * crash rolls the chunk back; the next replayer picks its streams again, so a replay resumes from its last committed
 * chunk. The version's live events on a stream wait until its history is in (the worker does not fetch them while
 * the plan row exists), so nothing is applied out of order or twice. Replayed history fires no `PostPerspective`
 * receptor.
 *
 * A stream whose fold fails (a handler throws, a payload does not decode) or that already has a cursor is not written
 * here: its history becomes work rows in the same transaction, and the worker applies, retries and dead-letters it
 * exactly as before.
 *
 * **Live work first.** The replay runs on connections of its own, and before each chunk it looks at the oldest
 * pending live event (work that fires receptors, of the perspectives this instance runs): while it waited longer than
 * `liveLagTarget`, the replay pauses, at most as long as its last chunk took (so it keeps at least half its pace
 * when the lag has another cause, such as a machine short of CPU). In a tenant fleet it also pauses so while the
 * process has other tenants' work ({@link OtherLiveWork}): one tenant's replay gives way to every tenant the process
 * serves, not only to its own schema's live work. Within the process, its fibers give the event loop back four times
 * as often as Effect's default, so the live worker's steps do not wait behind a chunk's fold. `replay: "off"` keeps
 * an instance out of replays altogether; `Whizbang.layerBuilder` starts an instance that replays and runs no worker
 * (a builder), so history can be replayed on other machines while the serving instances only serve.
 *
 * **Progress.** Every 2 seconds the gauges `whizbang_version_replay_events_per_second` and
 * `whizbang_version_replay_eta_seconds` are set per version (the fleet's rate, from the plan's shrinking); every 10
 * seconds a log line gives the share done, the rate and the ETA. `PgPerspectiveVersions.list` (`whizbang
 * perspectives`, status) shows the average rate since the replay started and the ETA.
 *
 * @since 0.5.0
 */
import { type EventRegistry, type Perspective, PerspectiveRunner } from "@whizbang/core"
import { OutageLog } from "@whizbang/core/internal"
import { Clock, Context, Duration, Effect, Layer, Metric, Scheduler } from "effect"
import * as DurationOptions from "./internal/durationOption.js"
import { replayChunk, type Target } from "./internal/historyReplay.js"
import * as ReplayPause from "./internal/replayPause.js"
import { PgClient } from "./PgClient.js"
import { PostgresConfigError } from "./PostgresError.js"
import * as Sql from "./sql/replayHistory.js"
import { TenantStart } from "./TenantStart.js"

/**
 * Options of the replay (`versions` of `Whizbang.Config` / `PgPerspectivePipeline.Config`).
 *
 * @category models
 * @since 0.5.0
 */
export interface Options {
  /**
   * `"auto"` (default): this instance replays the planned history of the versions it runs, live work first. `"off"`:
   * it never touches history (an instance that only serves; a builder, `Whizbang.layerBuilder`, replays it).
   */
  readonly replay?: "auto" | "off" | undefined
  /** Chunks replayed at once by this instance, each on a connection of its own. Default 1. */
  readonly replayConcurrency?: number | undefined
  /** Events per chunk (one transaction), about: the streams per chunk adapt to the history's events per stream. Default 5,000. */
  readonly replayChunkEvents?: number | undefined
  /**
   * The replay pauses while the oldest pending live event has waited longer than this, at most as long as its last
   * chunk took. Default 50 milliseconds.
   */
  readonly liveLagTarget?: Duration.Input | undefined
}

/**
 * {@link Options} checked and defaulted.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded {
  readonly replay: "auto" | "off"
  readonly concurrency: number
  readonly chunkEvents: number
  readonly liveLagTargetMillis: number
}

const positiveInt = (option: string, value: unknown, fallback: number): Effect.Effect<number, PostgresConfigError> =>
  value === undefined
    ? Effect.succeed(fallback)
    : typeof value === "number" && Number.isInteger(value) && value > 0
      ? Effect.succeed(value)
      : Effect.fail(new PostgresConfigError({ option, message: `${option} must be a positive integer, got ${String(value)}` }))

/**
 * Checks {@link Options}; a bad value is a `PostgresConfigError` naming it (`versions.replay`, ...).
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (options: Options | undefined): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const o = options ?? {}
    if (o.replay !== undefined && o.replay !== "auto" && o.replay !== "off") {
      return yield* new PostgresConfigError({
        option: "versions.replay",
        message: `versions.replay must be "auto" or "off", got ${JSON.stringify(o.replay)}`
      })
    }
    return {
      replay: o.replay ?? "auto",
      concurrency: yield* positiveInt("versions.replayConcurrency", o.replayConcurrency, 1),
      chunkEvents: yield* positiveInt("versions.replayChunkEvents", o.replayChunkEvents, 5_000),
      liveLagTargetMillis: Duration.toMillis(
        yield* DurationOptions.decode("versions.liveLagTarget", o.liveLagTarget, "positive", Duration.millis(50))
      )
    }
  })

/**
 * Whether the process has other live work the replay should give way to, besides its own schema's (which the replay
 * reads from the database). Read when the replay's layer is built. Default: none. `Whizbang.layerTenants` provides it
 * to each tenant's services: another tenant held for its work, or waiting for a slot.
 *
 * @category references
 * @since 0.8.0
 */
export const OtherLiveWork = Context.Reference<Effect.Effect<boolean>>("@whizbang/postgres/PgHistoryReplay/OtherLiveWork", {
  defaultValue: () => Effect.succeed(false)
})

/**
 * History events replayed per second, by perspective key: the whole fleet's rate over the last 2 seconds (0 when none
 * is planned).
 *
 * @category metrics
 * @since 0.5.0
 */
export const eventsPerSecondGauge = Metric.gauge("whizbang_version_replay_events_per_second", {
  description: "history events of a perspective version replayed per second (all instances)"
})

/**
 * Seconds until a version's planned history is replayed at the current rate, by perspective key (0 when none is
 * planned; the last value while the rate is 0).
 *
 * @category metrics
 * @since 0.5.0
 */
export const etaSecondsGauge = Metric.gauge("whizbang_version_replay_eta_seconds", {
  description: "estimated seconds until a perspective version's history is replayed"
})

/**
 * History events replayed (folded and written by a chunk), by perspective key: this process's count.
 *
 * @category metrics
 * @since 0.5.0
 */
export const replayedEventsCounter = Metric.counter("whizbang_version_replay_events", {
  description: "history events of a perspective version replayed by this process"
})

/**
 * What {@link layer} replays with.
 *
 * @category models
 * @since 0.5.0
 */
export interface Config {
  /** The versions this instance runs: their history is replayed here. */
  readonly perspectives: ReadonlyArray<Perspective.Any>
  readonly events: EventRegistry.EventRegistry
  /** The worker's partition count (the work-row path writes work rows). */
  readonly partitionCount: number
  readonly options: Decoded
  /** How often to look for planned history while there is none. */
  readonly interval: Duration.Duration
}

const nilUuid = "00000000-0000-0000-0000-000000000000"
const progressEveryMillis = 2_000
const logEveryMillis = 10_000

/** Plans smaller than this are read fast whatever the planner thinks of the table. */
const analyzeFromPlannedStreams = 1_000
/** Where an ANALYZE leaves the estimate as it was (Citus), at most one per process in this time. */
const analyzeAtMostEveryMillis = 60_000

/**
 * ANALYZE of the plan table when the planner takes it for less than half the streams planned for a version (see
 * `Sql.planEstimate`): once per fresh plan and instance in practice, since the rows replayed stay counted until
 * VACUUM. On Citus the coordinator's estimate stays 0 after it (a distributed schema's statistics live on its node,
 * whose planner is the one that reads them, and the ANALYZE reaches it): there it runs at most once a minute.
 */
const planStatistics = (client: PgClient["Service"]) => {
  let ineffectiveAt = Number.NEGATIVE_INFINITY
  return (plannedStreams: number) =>
    Effect.gen(function* () {
      if (plannedStreams < analyzeFromPlannedStreams) return
      const now = yield* Clock.currentTimeMillis
      if (now - ineffectiveAt < analyzeAtMostEveryMillis) return
      const before = yield* Sql.planEstimate(client)
      if (before.estimated >= plannedStreams / 2) return
      const [duration] = yield* Effect.timed(Sql.analyzePlan(client))
      const after = yield* Sql.planEstimate(client)
      if (after.estimated < plannedStreams / 2) ineffectiveAt = now
      yield* Effect.logDebug("history plan analyzed", {
        plannedStreams,
        estimated: [before.estimated, after.estimated],
        ms: Duration.toMillis(duration)
      })
    })
}

/**
 * Events read, folded and written at a time within a chunk (see `internal/historyReplay.ts`): bounds how long one
 * result holds the process's event loop, which the live worker shares.
 */
const pieceEvents = 1_000

/**
 * The replay's fibers give the event loop back every this many operations (Effect's default: 2,048), so the live
 * worker's steps queued behind a chunk's fold run sooner. Measured (`pnpm bench --only v`, 1,000,000 events, 200
 * appends/s, in pieces, two runs each): v1's lag p99 246 and 109 ms at 2,048, 90 and 78 at 512, 81 and 80 at 128;
 * the replay at 20,546-22,525, 20,809-21,221 and 17,654-19,568 events/s.
 */
const replayOpsBeforeYield = 512

/** Streams per chunk for `chunkEvents` events, given the events per stream seen so far. */
const streamsFor = (chunkEvents: number, eventsPerStream: number) =>
  Math.max(1, Math.min(5_000, Math.round(chunkEvents / Math.max(1, eventsPerStream))))

/**
 * A count with thousands separators for the progress line. Not `toLocaleString`: its first call in a process loads
 * ICU's number formatting, 28 ms on a quiet machine and about 80 in a tenant worker process's profile, during which
 * the event loop serves no tenant.
 */
const fmt = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")

/**
 * The replay of every version `config.perspectives` declares, for as long as the layer lives, on a pool of its own
 * of `replayConcurrency` connections (never the worker's nor the service's): it looks for planned history at start
 * (after `interval` when the tenant fleet found no version work just before the start, `TenantStart`) and every
 * `interval`, replays it chunk by chunk (see the module notes), and reports progress. Errors are logged and the loop
 * goes on (a chunk that failed is picked again).
 *
 * @category layers
 * @since 0.5.0
 */
export const layer = (config: Config): Layer.Layer<never, PostgresConfigError, PgClient> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (config.options.replay === "off" || config.perspectives.length === 0) return
      const shared = yield* PgClient
      const client = yield* shared.dedicated({ maxConnections: config.options.concurrency })
      const targets = new Map<string, Target>(
        config.perspectives.map((p) => [p.name, { key: p.name, eventTypes: p.eventTypes, runner: PerspectiveRunner.make(p) }])
      )
      const keys = [...targets.keys()]
      const freshPlanStatistics = planStatistics(client)
      const { chunkEvents, concurrency, liveLagTargetMillis } = config.options
      const otherLiveWork = yield* OtherLiveWork
      // Live work first (see `internal/replayPause.ts`): the process's other tenants, and this schema's live lag.
      const liveLagOverTarget = Effect.map(Sql.liveLagMillis(client, { keys }), (lag) => lag.millis > liveLagTargetMillis)

      // One replayer: chunks in stream order from `after` to the end of the plan, then once more from the start for
      // what others held; done when a pass from the start finds nothing it can take.
      const replayer = (target: Target, eventsPerStream: number) =>
        Effect.gen(function* () {
          let after = nilUuid
          let perStream = eventsPerStream
          let picked = 0
          let chunkMillis = 0
          while (true) {
            yield* ReplayPause.pause({ otherLiveWork, liveLagOverTarget, lastChunkMillis: chunkMillis })
            const started = yield* Clock.currentTimeMillis
            const chunk = yield* replayChunk(client, config.events, target, {
              after,
              maxStreams: streamsFor(chunkEvents, perStream),
              pieceStreams: streamsFor(pieceEvents, perStream),
              partitionCount: config.partitionCount
            }).pipe(Effect.catchTag("ChunkConflict", () => Effect.succeed(undefined)))
            chunkMillis = (yield* Clock.currentTimeMillis) - started
            if (chunk === undefined) continue
            if (chunk.events > 0) {
              yield* Metric.update(Metric.withAttributes(replayedEventsCounter, { perspective: target.key }), chunk.events)
            }
            if (chunk.picked === 0) {
              if (after === nilUuid) return picked
              after = nilUuid
              continue
            }
            picked += chunk.picked
            after = chunk.last!
            const eventsSeen = chunk.events + chunk.fallbackEvents
            if (eventsSeen > 0) perStream = eventsSeen / chunk.picked
          }
        })

      // A failed round (a database outage) is logged once, and once more when a round works again.
      const outages = yield* OutageLog.make("perspective history replay")
      const round = Effect.gen(function* () {
        const planned = yield* Sql.plannedKeys(client, { keys })
        let picked = 0
        for (const { key } of planned) {
          yield* Sql.markStarted(client, { key })
          // The first chunk's size from the history as planned (events per stream); later ones from what they found.
          const [planned] = yield* Sql.progress(client, { keys: [key] })
          if (planned !== undefined) yield* freshPlanStatistics(planned.planned)
          const perStream = planned === undefined || planned.backfillStreams === 0 ? 1 : planned.backfillEvents / planned.backfillStreams
          const each = yield* Effect.forEach(
            Array.from({ length: concurrency }, () => targets.get(key)!),
            (target) => replayer(target, perStream),
            { concurrency }
          )
          picked += each.reduce((a, b) => a + b, 0)
        }
        // Nothing taken: none planned, or every planned stream held by other replayers (their chunks commit soon).
        return picked
      }).pipe((attempt) => outages.guard(attempt, 0))

      // A tenant's services started by the fleet when its check found no version work: the first round waits its
      // interval (`TenantStart`).
      const quietStart = (yield* TenantStart)?.versionWork === false
      yield* Effect.forkScoped(
        Effect.gen(function* () {
          if (quietStart) yield* Effect.sleep(config.interval)
          while (true) {
            const replayed = yield* round
            if (replayed === 0) yield* Effect.sleep(config.interval)
          }
        }).pipe(Effect.provideService(Scheduler.MaxOpsBeforeYield, replayOpsBeforeYield))
      )
      yield* Effect.forkScoped(progressLoop(client, keys))
    })
  )

/** Gauges every 2 seconds and a log line every 10 per version with history planned (see the module notes). */
const progressLoop = (client: PgClient["Service"], keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const last = new Map<string, { readonly at: number; readonly planned: number; readonly logged: number; readonly eta: number }>()
    while (true) {
      yield* Effect.sleep(Duration.millis(progressEveryMillis))
      const rows = yield* Sql.progress(client, { keys }).pipe(
        Effect.catchCause(() => Effect.succeed([] as ReadonlyArray<typeof Sql.Progress.Type>))
      )
      const now = yield* Clock.currentTimeMillis
      for (const r of rows) {
        const key = r.key
        const before = last.get(key)
        if (r.planned === 0 && (before === undefined || before.planned === 0)) {
          if (before !== undefined) {
            yield* Metric.update(Metric.withAttributes(eventsPerSecondGauge, { perspective: key }), 0)
            yield* Metric.update(Metric.withAttributes(etaSecondsGauge, { perspective: key }), 0)
            last.delete(key)
          }
          continue
        }
        const perStream = r.backfillStreams === 0 ? 0 : r.backfillEvents / r.backfillStreams
        const rate = before === undefined ? 0 : (Math.max(0, before.planned - r.planned) * perStream) / ((now - before.at) / 1000)
        const eta = rate > 0 ? (r.planned * perStream) / rate : (before?.eta ?? 0)
        yield* Metric.update(Metric.withAttributes(eventsPerSecondGauge, { perspective: key }), rate)
        yield* Metric.update(Metric.withAttributes(etaSecondsGauge, { perspective: key }), eta)
        const logged = before?.logged ?? 0
        const due = now - logged >= logEveryMillis || r.planned === 0
        if (due && before !== undefined) {
          const done = r.backfillStreams - r.planned
          yield* Effect.logInfo(
            r.planned === 0
              ? `perspective ${key}: history replayed (${fmt(r.backfillStreams)} streams, ${fmt(r.backfillEvents)} events)`
              : `perspective ${key}: replaying history, ${Math.floor((100 * done) / Math.max(1, r.backfillStreams))}% (${fmt(done)}/${fmt(r.backfillStreams)} streams), ${fmt(rate)} events/s, ETA ${fmt(eta)} s`
          )
        }
        last.set(key, { at: now, planned: r.planned, logged: due && before !== undefined ? now : logged, eta })
      }
    }
  })
