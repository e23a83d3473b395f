/**
 * One round of the version build loop: history given to the worker, abandoned hand-overs finished, automatic
 * cutovers, versions past their grace period retired, and the gauges set. Apart from the loop that repeats it
 * (`buildLoop.ts`) so a round can be run and tested on its own (`PgPerspectiveVersions.buildStep`).
 *
 * @internal
 */
import { Effect, Metric } from "effect"
import { PgClient } from "../../PgClient.js"
import type { BuildOptions, Declared, VersionInfo } from "../../PgPerspectiveVersions.js"
import type { PostgresError } from "../../PostgresError.js"
import * as Sql from "../../sql/versions.js"
import * as HandOver from "../handOver.js"
import { decodeCutover, defaultMaxLag } from "./cutoverSettings.js"
import { listForBuild } from "./listing.js"
import { cutover } from "./switching.js"

/** See `PgPerspectiveVersions.buildProgressGauge`. */
export const buildProgressGauge = Metric.gauge("whizbang_version_build_progress", {
  description: "share of a perspective version's history applied (0..1)"
})

/** See `PgPerspectiveVersions.versionLagGauge`. */
export const versionLagGauge = Metric.gauge("whizbang_version_lag_events", {
  description: "events routed to a perspective version and not applied yet"
})

/** See `PgPerspectiveVersions.retireDue`. */
export const retireDue: Effect.Effect<ReadonlyArray<string>, PostgresError, PgClient> = Effect.gen(function* () {
  const client = yield* PgClient
  const rows = yield* Sql.retireDue(client)
  if (rows.length > 0) yield* Sql.notifyVersionsChanged(client, { keys: rows.map((r) => r.key) })
  for (const r of rows) yield* Effect.logInfo(`perspective ${r.key} retired (${r.dropped} pending work row(s) dropped)`)
  return rows.map((r) => r.key)
})

/** See `PgPerspectiveVersions.buildStep`. */
export const buildStep = (
  declared: ReadonlyArray<Declared>,
  options: BuildOptions
): Effect.Effect<
  { readonly planned: number; readonly written: number; readonly versions: ReadonlyArray<VersionInfo> },
  PostgresError,
  PgClient
> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const chunk = options.chunkStreams ?? 200
    const maxPending = options.maxPending ?? 20_000
    const mine = new Map(declared.map((d) => [d.name, d]))
    const listed = yield* listForBuild
    const versions = listed.filter((v) => v.state !== "retired")
    let planned = 0
    let written = 0
    for (const v of versions) {
      const d = mine.get(v.perspectiveName)
      if (d === undefined || v.streamsToReplay === 0 || options.history === "none") continue
      let pending = v.pendingEvents
      let left = v.streamsToReplay
      for (let round = 0; round < 20 && left > 0 && pending < maxPending; round++) {
        const r = yield* Sql.backfillChunk(client, {
          key: v.perspectiveName,
          streams: chunk,
          eventTypes: d.eventTypes,
          partitionCount: options.partitionCount
        })
        if (r.streams === 0) break
        // The history's work rows wake the workers (the wh_notify_work trigger did, before migration 0019).
        if (r.events > 0) yield* Sql.wakeWorkers(client)
        left -= r.streams
        pending += r.events
        written += r.events
      }
      planned += Math.max(0, left)
    }
    for (const v of versions) {
      yield* Metric.update(Metric.withAttributes(buildProgressGauge, { perspective: v.perspectiveName }), v.progress)
      yield* Metric.update(Metric.withAttributes(versionLagGauge, { perspective: v.perspectiveName }), v.pendingEvents)
    }
    // Hand-overs whose owner stopped renewing them (killed, crashed, stopped) are finished by an instance that runs
    // the version, whether or not it cuts over on its own: `ready` means a cutover or rollback was asked for.
    for (const v of versions) {
      if (v.state !== "ready" || !v.handOverAbandoned || !mine.has(v.perspectiveName)) continue
      yield* Effect.flatMap(decodeCutover(options.cutover), (settings) =>
        HandOver.run(client, v.baseName, v.perspectiveName, settings, "resume")
      ).pipe(
        Effect.catchTags({
          VersionNotReady: (e) => Effect.logWarning(e.message),
          CutoverTimedOut: (e) => Effect.logWarning(e.message),
          UnknownPerspectiveVersion: (e) => Effect.logWarning(e.message),
          // Checked at start-up by decodeOptions: cannot happen here.
          PostgresConfigError: (e) => Effect.logWarning(e.message)
        })
      )
    }
    if (options.autoCutover !== false) {
      const newest = new Map<string, Declared>()
      for (const d of declared) if ((newest.get(d.baseName)?.version ?? 0) < d.version) newest.set(d.baseName, d)
      for (const [baseName, d] of newest) {
        const v = versions.find((x) => x.perspectiveName === d.name)
        const live = versions.find((x) => x.baseName === baseName && x.state === "live")
        const maxLag = options.cutover?.maxLag ?? defaultMaxLag
        if (v?.state !== "building" || live === undefined || live.version >= d.version) continue
        if (v.streamsToReplay > 0 || v.pendingEvents > maxLag) continue
        // Said by the build loop's report when the count changes, not every round.
        if (v.deadLetters > 0) continue
        yield* cutover(baseName, d.version, options.cutover).pipe(
          Effect.catchTags({
            VersionNotReady: () => Effect.void,
            CutoverTimedOut: (e) => Effect.logWarning(e.message),
            UnknownPerspectiveVersion: (e) => Effect.logWarning(e.message),
            NothingToRollBack: () => Effect.void,
            VersionTableConflict: (e) => Effect.logWarning(e.message),
            // Checked at start-up by decodeOptions: cannot happen here.
            PostgresConfigError: (e) => Effect.logWarning(e.message)
          })
        )
      }
    }
    yield* retireDue
    return { planned, written, versions: listed }
  })
