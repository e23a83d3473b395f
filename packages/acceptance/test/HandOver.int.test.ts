// A cutover whose instance goes away always finishes. Worker processes run balance v1 and v2 through `Whizbang.layer`;
// the first one's automatic cutover to v2 pauses at a step of the hand-over (`PgPerspectiveVersions.HandOverHooks`,
// the test hook), then that process is killed (SIGKILL: no finalizer runs, its connections drop) or stopped
// gracefully. Another instance that runs v2, or the restart, finishes the hand-over: within the lease (2 s here,
// 10 s by default) and a build round once the owner is gone, at once after a graceful stop. Reads then serve v2,
// whose rows equal the fold of the events.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Clock, Effect, Fiber, Schedule } from "effect"
import { PgClient, PgPerspectiveVersions } from "whizbang"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const v1v2 = ["balance", "activity", "balance__v2"]
const lease = 2_000
const fast = { interval: "50 millis", cutover: { lease: `${lease} millis` } }

const v2 = Effect.map(PgPerspectiveVersions.list, (versions) => versions.find((v) => v.perspectiveName === "balance__v2")!)

/** Until `p` holds of v2 as listed, checking every 20 ms, for at most `seconds`. */
const v2Until = (p: (v: PgPerspectiveVersions.VersionInfo) => boolean, seconds = 60) =>
  v2.pipe(Effect.repeat({ until: p, schedule: Schedule.spaced("20 millis"), times: seconds * 50 }))

/** History for v2 to build: 20 accounts, 400 events, applied by v1. */
const history = Effect.gen(function* () {
  yield* Writer.appendConcurrently({ streamIds: Writer.streams(20), appenders: 4, perAppender: 100, batch: 5 })
})

/** Milliseconds from now until v2 is live (awaitLive, as a deploy script waits). */
const untilLive = Effect.gen(function* () {
  const from = yield* Clock.currentTimeMillis
  yield* PgPerspectiveVersions.awaitLive("balance__v2", { timeout: "60 seconds", interval: "20 millis" })
  return (yield* Clock.currentTimeMillis) - from
})

/** v2's rows against the fold, the view's too, and the view's rows not written by v2. */
const served = Effect.gen(function* () {
  const client = yield* PgClient.PgClient
  const [notV2] = yield* client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM wh_per_balance WHERE data->>'shape' IS DISTINCT FROM 'v2'"
  )
  return { v2: yield* Writer.mismatches("balance__v2"), view: yield* Writer.mismatches("balance"), notV2: notV2!.n }
})

describe("a hand-over whose instance goes away finishes", () => {
  it.live(
    "killed (SIGKILL) inside the transaction that marks v2 ready: nothing was committed, another instance cuts over",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "handover_locked"
        const result = yield* Effect.gen(function* () {
          yield* history
          const owner = yield* Workers.start({ url, schema, perspectives: v1v2, versions: fast, pauseHandOver: "locked" })
          yield* owner.paused
          const before = (yield* v2).state
          // The other instance's start registers its versions under the same row locks: it starts once they are gone.
          const other = yield* Effect.forkChild(Workers.start({ url, schema, perspectives: v1v2, versions: fast }))
          yield* owner.kill
          const millis = yield* untilLive
          yield* Fiber.join(other)
          return { before, millis, ...(yield* served) }
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        console.log(`hand-over killed while marking ready: v2 live ${result.millis} ms after the kill`)
        expect(result).toMatchObject({ before: "building", v2: 0, view: 0, notV2: 0 })
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "killed (SIGKILL) after ready, before the switch: two other instances, one of which resumes it within the lease, once",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "handover_ready"
        const result = yield* Effect.gen(function* () {
          yield* history
          const owner = yield* Workers.start({ url, schema, perspectives: v1v2, versions: fast, pauseHandOver: "ready" })
          yield* owner.paused
          // Instances that do not cut over on their own: only the hand-over asked for can make v2 live.
          const manual = { ...fast, autoCutover: false }
          const others = [
            yield* Workers.start({ url, schema, perspectives: v1v2, versions: manual }),
            yield* Workers.start({ url, schema, perspectives: v1v2, versions: manual })
          ]
          // The owner is alive: it renews its lease, and no other instance takes the hand-over over.
          const held = yield* v2
          const renewed = yield* v2Until((v) => (v.handOverUntil?.getTime() ?? 0) > (held.handOverUntil?.getTime() ?? 0))
          yield* owner.kill
          const millis = yield* untilLive
          // The switch's log line comes over its process's pipe after the commit seen above: wait for it (bounded).
          const logs = yield* Effect.sync(() => others.flatMap((w) => w.logs())).pipe(
            Effect.repeat({
              until: (lines) => lines.some((l) => l.includes("reads now served by balance__v2")),
              schedule: Schedule.spaced("20 millis"),
              times: 250
            })
          )
          return {
            held: { state: held.state, abandoned: held.handOverAbandoned },
            renewed: { state: renewed.state, abandoned: renewed.handOverAbandoned },
            millis,
            resumed: logs.filter((l) => l.includes("resuming the hand-over to balance__v2")).length,
            switched: logs.filter((l) => l.includes("reads now served by balance__v2")).length,
            versions: (yield* PgPerspectiveVersions.list).filter((v) => v.baseName === "balance").map((v) => [v.perspectiveName, v.state]),
            ...(yield* served)
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        console.log(`hand-over killed after ready: v2 live ${result.millis} ms after the kill (lease ${lease} ms)`)
        expect(result).toMatchObject({
          held: { state: "ready", abandoned: false },
          renewed: { state: "ready", abandoned: false },
          resumed: 1,
          switched: 1,
          versions: [
            ["balance", "retiring"],
            ["balance__v2", "live"]
          ],
          v2: 0,
          view: 0,
          notV2: 0
        })
        // The lease, a build round (50 ms), the wait for what is pending and the switch; generous for a loaded machine.
        expect(result.millis).toBeLessThan(lease + 5_000)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "stopped gracefully during the hand-over: it lets the hand-over go at once, and the restart finishes it",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "handover_stop"
        // A lease far longer than the test: only letting it go makes the hand-over resumable this soon.
        const long = { interval: "50 millis", cutover: { lease: "10 minutes" } }
        const result = yield* Effect.gen(function* () {
          yield* history
          const owner = yield* Workers.start({ url, schema, perspectives: v1v2, versions: long, pauseHandOver: "ready" })
          yield* owner.paused
          const held = yield* v2
          const from = yield* Clock.currentTimeMillis
          yield* owner.stop
          const released = yield* v2
          const restart = yield* Workers.start({ url, schema, perspectives: v1v2, versions: long })
          yield* untilLive
          return {
            held: { state: held.state, abandoned: held.handOverAbandoned },
            released: { state: released.state, abandoned: released.handOverAbandoned },
            millis: (yield* Clock.currentTimeMillis) - from,
            resumed: restart.logs().filter((l) => l.includes("resuming the hand-over to balance__v2")).length,
            ...(yield* served)
          }
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
        console.log(`hand-over stopped gracefully: v2 live ${result.millis} ms after the stop began (restart included)`)
        expect(result).toMatchObject({
          held: { state: "ready", abandoned: false },
          released: { state: "ready", abandoned: true },
          resumed: 1,
          v2: 0,
          view: 0,
          notV2: 0
        })
        expect(result.millis).toBeLessThan(60_000)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
