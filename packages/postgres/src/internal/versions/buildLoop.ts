/**
 * The version build loop, for as long as its layer lives: {@link buildStep} round after round, paced by what the
 * last round found, with progress reported and the work table's planner statistics kept fresh; and the check of its
 * options at start-up. Apart from the round itself (`buildStep.ts`) because this is the pacing and the reporting,
 * which keep what they said last (per process) to say things once.
 *
 * @internal
 */
import * as Jitter from "../jitter.js"
import { OutageLog } from "@whizbang/core/internal"
import { Clock, Duration, Effect, Layer } from "effect"
import { PgClient } from "../../PgClient.js"
import * as PgHistoryReplay from "../../PgHistoryReplay.js"
import type { Declared, DecodedOptions, Options, VersionInfo } from "../../PgPerspectiveVersions.js"
import { PostgresConfigError } from "../../PostgresError.js"
import { TenantStart } from "../../TenantStart.js"
import * as Sql from "../../sql/versions.js"
import * as DurationOptions from "../durationOption.js"
import { buildStep } from "./buildStep.js"
import { decodeCutover, positiveInt } from "./cutoverSettings.js"

/** The build loop refreshes the work table's statistics after this much history, at most every 2 seconds. */
const analyzeAfterRows = 2_000
const analyzeAtMostEveryMillis = 2_000
/** While the version's backlog holds history back, the build loop looks again after this long (not `interval`). */
const heldBackPauseMillis = 50

/** See `PgPerspectiveVersions.decodeOptions`. */
export const decodeOptions = (options: Options | undefined): Effect.Effect<DecodedOptions, PostgresConfigError> =>
  Effect.gen(function* () {
    const o = options ?? {}
    yield* positiveInt("versions.chunkStreams", o.chunkStreams)
    yield* positiveInt("versions.maxPending", o.maxPending)
    if (o.autoCutover !== undefined && typeof o.autoCutover !== "boolean") {
      return yield* new PostgresConfigError({ option: "versions.autoCutover", message: "versions.autoCutover must be a boolean" })
    }
    yield* decodeCutover(o.cutover, "versions.cutover.")
    const replay = yield* PgHistoryReplay.decodeOptions(o)
    const interval =
      o.interval === null ? null : yield* DurationOptions.decode("versions.interval", o.interval, "positive", Duration.seconds(1))
    return { interval, build: o, replay }
  })

/** See `PgPerspectiveVersions.layerBuilder`. */
export const layerBuilder = (
  declared: ReadonlyArray<Declared>,
  options: Options | undefined,
  partitionCount: number
): Layer.Layer<never, PostgresConfigError, PgClient> =>
  Layer.unwrap(Effect.map(decodeOptions(options), (decoded) => layerBuilderDecoded(declared, decoded, partitionCount)))

/**
 * Says what a round found, once per change: dead letters that keep a replayed version from going live, a version
 * caught up and waiting for a manual cutover (`autoCutover: false`), progress every 10%. Its maps and set hold what
 * was said last, per process (one fiber, the loop's, uses them).
 */
const progressReport = (declared: ReadonlyArray<Declared>, autoCutover: boolean | undefined) => {
  const reported = new Map<string, number>()
  // Versions said to be caught up and waiting for a manual cutover (autoCutover off): once each, per process.
  const waiting = new Set<string>()
  // Dead letters that keep a replayed version from going live, as last said: said again only when they change.
  const heldBack = new Map<string, number>()
  return (versions: ReadonlyArray<VersionInfo>) =>
    Effect.gen(function* () {
      for (const v of versions) {
        if (!declared.some((d) => d.name === v.perspectiveName)) continue
        const blocking = v.state === "building" && v.streamsToReplay === 0 ? v.deadLetters : 0
        if (blocking !== (heldBack.get(v.perspectiveName) ?? 0)) {
          heldBack.set(v.perspectiveName, blocking)
          if (blocking > 0) {
            yield* Effect.logWarning(
              `perspective ${v.perspectiveName} has replayed its history but dead-lettered ${blocking} event(s): it does not go live until they are retried or discarded (whizbang dead-letters list -p ${v.perspectiveName})`
            )
          }
        }
        if (autoCutover === false && v.caughtUp && !waiting.has(v.perspectiveName)) {
          waiting.add(v.perspectiveName)
          yield* Effect.logInfo(
            `perspective ${v.perspectiveName} is caught up and waits for a cutover (versions.autoCutover is off): \`whizbang cutover ${v.baseName}\` serves it`
          )
        }
        if (v.historyStreams === 0) continue
        const tenth = Math.floor(v.progress * 10)
        if ((reported.get(v.perspectiveName) ?? -1) === tenth) continue
        reported.set(v.perspectiveName, tenth)
        yield* Effect.logInfo(
          `perspective ${v.perspectiveName} (${v.state}): ${Math.round(v.progress * 100)}% of its history (${v.historyStreams - v.streamsToReplay}/${v.historyStreams} streams given to the worker, ${v.pendingEvents} events pending)`
        )
      }
    })
}

/**
 * Refreshes the work table's planner statistics (ANALYZE, see Sql.analyzeBuildTables) once `analyzeAfterRows` of
 * history were written since the last refresh, at most every `analyzeAtMostEveryMillis`. Its two counters stay plain
 * variables: only the loop's fiber touches them, one round at a time.
 */
const plannerStatistics = () => {
  // History written since the planner statistics of the work table were last refreshed, and when that was.
  let unanalyzed = 0
  let analyzedAt = 0
  return (written: number) =>
    Effect.gen(function* () {
      unanalyzed += written
      const now = yield* Clock.currentTimeMillis
      if (unanalyzed >= analyzeAfterRows && now - analyzedAt >= analyzeAtMostEveryMillis) {
        yield* Sql.analyzeBuildTables(yield* PgClient)
        unanalyzed = 0
        analyzedAt = now
      }
    })
}

/** See `PgPerspectiveVersions.layerBuilderDecoded`. */
export const layerBuilderDecoded = (
  declared: ReadonlyArray<Declared>,
  { build, interval }: DecodedOptions,
  partitionCount: number
): Layer.Layer<never, never, PgClient> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (interval === null || declared.length === 0) return
      const report = progressReport(declared, build.autoCutover)
      const analyze = plannerStatistics()
      // A failed round (a database outage) is logged once, and once more when a round works again.
      const outages = yield* OutageLog.make("perspective version build round")
      const round = Effect.gen(function* () {
        // History is the replay's (`PgHistoryReplay`, composed beside this loop), never work rows.
        const r = yield* buildStep(declared, { ...build, partitionCount, history: "none" })
        yield* analyze(r.written)
        yield* report(r.versions)
        // History left: at once again while writing; soon again while the backlog holds it back; else at `interval`.
        return r.planned === 0 ? ("idle" as const) : r.written > 0 ? ("writing" as const) : ("held" as const)
      }).pipe((attempt) => outages.guard(attempt, "idle" as const))
      const held = Duration.min(interval, Duration.millis(heldBackPauseMillis))
      // A tenant's services started by the fleet when its check found no version work: the first round waits its
      // interval (`TenantStart`).
      const quietStart = (yield* TenantStart)?.versionWork === false
      const loop = Effect.gen(function* () {
        if (quietStart) yield* Jitter.sleep(interval)
        while (true) {
          const next = yield* round
          yield* next === "writing" ? Effect.yieldNow : next === "held" ? Effect.sleep(held) : Jitter.sleep(interval)
        }
      })
      yield* Effect.forkScoped(loop)
    })
  )
