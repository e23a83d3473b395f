/**
 * Switching reads between versions, as an operator or a deploy script asks: {@link cutover} forward, {@link rollback}
 * back to the version the last cutover replaced, and {@link awaitLive} to wait until a version serves. Apart because
 * these choose which version to hand reads to and refuse with typed errors; the hand-over itself (ready, caught up,
 * switched, its lease) is `internal/handOver.ts`.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import { Clock, Duration, Effect } from "effect"
import { PgClient } from "../../PgClient.js"
import type { CutoverOptions, CutoverResult, HandOverError, VersionInfo } from "../../PgPerspectiveVersions.js"
import type { PostgresConfigError, PostgresError } from "../../PostgresError.js"
import { NothingToRollBack, UnknownPerspectiveVersion, VersionNotReady, VersionWaitTimedOut } from "../../VersionError.js"
import * as DurationOptions from "../durationOption.js"
import * as HandOver from "../handOver.js"
import { type BaseRow, unknown, versionsOf } from "./baseVersions.js"
import { decodeCutover, defaultMaxLag } from "./cutoverSettings.js"
import { list } from "./listing.js"

/** See `PgPerspectiveVersions.cutover`. */
export const cutover = (
  baseName: string,
  version?: number,
  options: CutoverOptions = {}
): Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const settings = yield* decodeCutover(options)
    const rows = yield* versionsOf(client, baseName)
    const current = rows.find((r) => r.state === "live")
    const target =
      version === undefined
        ? rows.filter((r) => r.state !== "live" && r.state !== "retired" && (current === undefined || r.version > current.version)).at(-1)
        : rows.find((r) => r.version === version)
    if (target === undefined) {
      if (version === undefined && current !== undefined) {
        return { baseName, live: current.key, replaced: undefined, millis: 0, switched: false }
      }
      return yield* unknown(client, baseName, version, rows)
    }
    return (yield* HandOver.run(client, baseName, target.key, settings, "start"))!
  })

/** See `PgPerspectiveVersions.rollback`. */
export const rollback = (
  baseName: string,
  options: CutoverOptions = {}
): Effect.Effect<CutoverResult, PostgresError | HandOverError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const settings = yield* decodeCutover(options)
    const rows = yield* versionsOf(client, baseName)
    if (rows.length === 0) return yield* unknown(client, baseName, undefined, rows)
    const live = rows.find((r) => r.state === "live")
    const older = (r: BaseRow) => live === undefined || r.version < live.version
    // A rollback already being handed over (`ready`) is joined.
    const previous = rows.filter((r) => (r.state === "retiring" || r.state === "ready") && older(r)).at(-1)
    if (previous === undefined) {
      return yield* new NothingToRollBack({
        baseName,
        live: live?.key,
        newer: rows.filter((r) => r.state === "retiring" && !older(r)).map((r) => r.key)
      })
    }
    return (yield* HandOver.run(client, baseName, previous.key, settings, "start"))!
  })

/** See `PgPerspectiveVersions.awaitLive`. */
export const awaitLive = (
  key: string,
  options: { readonly timeout?: Duration.Input | undefined; readonly interval?: Duration.Input | undefined } = {}
): Effect.Effect<
  VersionInfo,
  PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionNotReady | VersionWaitTimedOut,
  PgClient
> =>
  Effect.gen(function* () {
    const timeoutMillis = Duration.toMillis(yield* DurationOptions.decode("timeout", options.timeout, "positive", Duration.minutes(10)))
    const interval = yield* DurationOptions.decode("interval", options.interval, "positive", Duration.millis(100))
    const started = yield* Clock.currentTimeMillis
    const { baseName, version } = Perspective.parseKey(key)
    while (true) {
      const versions = yield* list
      const v = versions.find((x) => x.perspectiveName === key)
      if (v === undefined) {
        const ofBase = versions.filter((x) => x.baseName === baseName)
        return yield* new UnknownPerspectiveVersion({
          baseName,
          version: key === baseName ? undefined : version,
          known: (ofBase.length > 0 ? ofBase : versions).map((x) => x.perspectiveName)
        })
      }
      if (v.state === "live") return v
      if (v.state === "retired" || (v.state === "building" && v.deadLetters > 0)) {
        return yield* new VersionNotReady({
          perspectiveName: key,
          state: v.state,
          streamsToReplay: v.streamsToReplay,
          pendingEvents: v.pendingEvents,
          deadLetters: v.deadLetters,
          maxLag: defaultMaxLag
        })
      }
      if ((yield* Clock.currentTimeMillis) - started >= timeoutMillis) {
        return yield* new VersionWaitTimedOut({
          perspectiveName: key,
          state: v.state,
          progress: v.progress,
          pendingEvents: v.pendingEvents,
          timeoutMillis
        })
      }
      yield* Effect.sleep(interval)
    }
  })
