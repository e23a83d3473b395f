import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as PgHealth from "../src/PgHealth.js"
import type * as PgStatus from "../src/PgStatus.js"
import type * as PgWatchdog from "../src/PgWatchdog.js"

const perspective = (lagSeconds: number): PgStatus.PerspectiveSummary => ({
  perspective: "balance",
  streams: 1,
  pending: 1,
  pendingStreams: 1,
  lagSeconds,
  failed: 0,
  rewindRequired: 0,
  deadLetters: 0,
  runningInstances: 1
})

describe("PgHealth options", () => {
  it.effect("durations are Duration.Inputs, checked with a PostgresConfigError naming the option", () =>
    Effect.gen(function* () {
      yield* PgHealth.decodeOptions({ maxLag: "2 minutes", heartbeatMaxAge: null, maxFailedCursors: 3 })
      yield* PgHealth.decodeOptions({ maxLag: 0, heartbeatMaxAge: Duration.seconds(5) })
      const cases: ReadonlyArray<readonly [PgHealth.Options, string, string]> = [
        [{ maxLag: -1 }, "maxLag", "maxLag must be a finite duration >= 0, got -1 (a number is milliseconds)"],
        [{ maxLag: "Infinity" }, "maxLag", 'maxLag must be a finite duration >= 0, got "Infinity"'],
        [{ heartbeatMaxAge: "0 seconds" }, "heartbeatMaxAge", 'heartbeatMaxAge must be a finite, positive duration, got "0 seconds"'],
        [{ maxFailedCursors: 1.5 }, "maxFailedCursors", "maxFailedCursors must be an integer >= 0, got 1.5"]
      ]
      for (const [options, option, message] of cases) {
        const error = yield* Effect.flip(PgHealth.decodeOptions(options))
        expect(error).toMatchObject({ _tag: "PostgresConfigError", option, message })
      }
    })
  )

  it("maxLag is compared in seconds, whatever form it was given in", () => {
    const judge = (maxLag: PgHealth.Options["maxLag"], lag: number) =>
      PgHealth.judge({ perspectives: [perspective(lag)], instances: [], stuck: [] }, { maxLag, heartbeatMaxAge: null }).map((r) => r.code)
    expect(judge("90 seconds", 60)).toEqual([])
    expect(judge("90 seconds", 120)).toEqual(["Lag"])
    expect(judge(30_000, 31)).toEqual(["Lag"])
    expect(judge(undefined, 59)).toEqual([])
    expect(judge(undefined, 61)).toEqual(["Lag"])
  })

  it("a version still building its history is not judged by maxLag (its backlog is the build); a serving one is", () => {
    const lagging = [{ ...perspective(600), perspective: "balance__v2" }, perspective(600)]
    const finding = (reason: PgWatchdog.VersionFinding["reason"]): PgWatchdog.VersionFinding => ({
      perspective: "balance__v2",
      baseName: "balance",
      version: 2,
      state: "building",
      reason,
      message: reason._tag
    })
    const judge = (f: PgWatchdog.VersionFinding) =>
      PgHealth.judge({ perspectives: lagging, instances: [], stuck: [], versions: [f] }, { heartbeatMaxAge: null }).map((r) => [
        r.code,
        r.perspective
      ])
    const base = { perspective: "balance__v2", baseName: "balance", version: 2 }
    expect(judge(finding({ _tag: "VersionBuilding", ...base, progress: 0.5 }))).toEqual([["Lag", "balance"]])
    // A version its dead letters keep from going live needs an operator: the service is degraded by it.
    expect(judge(finding({ _tag: "VersionHasDeadLetters", ...base, deadLetters: 1 }))).toEqual([
      ["Lag", "balance"],
      ["Version", "balance__v2"]
    ])
  })
})
