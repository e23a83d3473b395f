// `whizbang perspectives`, `cutover`, `rollback` and the versions in `status`, against a real database whose
// versions are registered directly (no worker runs: each state is set up exactly).
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Effect, Fiber } from "effect"
import { cli } from "./fixtures/runCli.js"
import { runInProcess } from "./fixtures/runInProcess.js"

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

const declared = (version: number): PgPerspectiveVersions.Declared => ({
  name: version === 1 ? "balance" : `balance__v${version}`,
  baseName: "balance",
  version,
  eventTypes: ["Deposited"]
})

const deposit = (streamId: string, version: number) =>
  sql(
    `insert into wh_events (event_id, stream_id, stream_version, event_type, payload) values (gen_random_uuid(), $1, $2, 'Deposited', '{"amount": 1}')`,
    [streamId, version]
  )

const database = PgTestDatabase.layer({ schema: "ops", maxConnections: 4 })

/** The CLI in this process against the test database. */
const run = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => runInProcess(["--database-url", url, "--schema", "ops", ...args]))

describe("whizbang perspectives / cutover / rollback", () => {
  it.live(
    "lists versions with progress and runners; cutover and rollback switch reads; each typed error is one line and its exit code",
    () =>
      Effect.gen(function* () {
        yield* PgPerspectiveVersions.register([declared(1)])
        // History of two streams, then version 2 is registered: it plans both, and only v1's instances are live.
        const [a, b] = [randomUUID(), randomUUID()]
        yield* deposit(a, 1)
        yield* deposit(a, 2)
        yield* deposit(b, 1)
        yield* PgPerspectiveVersions.register([declared(1), declared(2)])
        yield* sql(
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
           values (gen_random_uuid(), 'bank', 'web-1', 7, now(), '{balance}')`
        )

        const listed = yield* run("perspectives", "--json")
        expect(listed.code).toBe(0)
        expect(listed.json()).toMatchObject([
          { perspectiveName: "balance", version: 1, state: "live", hasRunner: true, progress: 1 },
          {
            perspectiveName: "balance__v2",
            version: 2,
            state: "building",
            historyStreams: 2,
            streamsToReplay: 2,
            historyEvents: 3,
            hasRunner: false
          }
        ])
        const human = yield* run("perspectives")
        expect(human.stdout).toMatch(/balance\s+balance\s+v1\s+live\s+\[#{14}\] 100%\s+0\/0\s+-\s+0 events\s+-\s+0\s+running/)
        // Nothing replayed yet: the replay is waiting.
        expect(human.stdout).toMatch(
          /balance__v2\s+balance\s+v2\s+building 0%\s+\[-{14}\] 0%\s+0\/2\s+waiting\s+0 events\s+-\s+0\s+no instance runs it/
        )

        // Not caught up: two streams of history to replay.
        const early = yield* run("cutover", "balance")
        expect(early.code).toBe(4)
        expect(early.stderr.trim().split("\n")).toEqual([
          "whizbang: balance__v2 is not caught up: 2 stream(s) of history still to replay, 0 event(s) pending (at most 1000 allowed)"
        ])
        const unknown = yield* run("cutover", "balance", "--version", "7", "--json")
        expect(unknown.code).toBe(3)
        expect(unknown.json()).toEqual({
          error: { reason: "NotFound", message: 'version 7 of perspective "balance" is not registered (registered: balance, balance__v2)' }
        })
        const nothing = yield* run("rollback", "balance")
        expect(nothing.code).toBe(3)
        expect(nothing.stderr).toBe(
          'whizbang: perspective "balance" has nothing to roll back to: no version older than the live balance is retiring (none was replaced, or its grace period ended)\n'
        )
        // A perspective that is not registered: the refusal names those that are (the base has no versions).
        const misspelled = yield* run("cutover", "order_total")
        expect(misspelled.code).toBe(3)
        expect(misspelled.stderr).toBe('whizbang: perspective "order_total" is not registered (registered: balance, balance__v2)\n')
        const badDuration = yield* run("cutover", "balance", "--timeout", "soon")
        expect(badDuration.code).toBe(2)
        expect(badDuration.stderr).toMatch(/timeout must be a duration such as 500ms/)
        const mismatch = yield* run("cutover", "balance__v2", "--version", "3")
        expect(mismatch.code).toBe(2)

        // The new release's instance replays the history (as the build loop would), while status shows it.
        yield* sql(
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
           values (gen_random_uuid(), 'bank', 'web-2', 8, now(), '{balance,balance__v2}')`
        )
        yield* sql(`delete from wh_perspective_backfill where perspective_name = 'balance__v2' and stream_id = $1`, [a])
        // Its replay started 10 s ago: half the history (1.5 of 3 events, by streams) in 10 s, so 1.5 events left at
        // 0.15 events/s, 10 s.
        yield* sql(
          `update wh_perspective_versions set replay_started_at = now() - interval '10 seconds' where perspective_name = 'balance__v2'`
        )
        const status = yield* run("status", "--json")
        expect(status.json().versions).toMatchObject([
          { perspectiveName: "balance", state: "live" },
          { perspectiveName: "balance__v2", state: "building", streamsToReplay: 1, progress: 0.5, hasRunner: true }
        ])
        const building = status.json().versions[1] as { replayEventsPerSecond: number; replayEtaSeconds: number }
        expect(building.replayEventsPerSecond).toBeCloseTo(0.15, 2)
        expect(building.replayEtaSeconds).toBeCloseTo(10, 0)
        expect(status.json().versionFindings).toMatchObject([
          { perspective: "balance__v2", reason: { _tag: "VersionBuilding", baseName: "balance", version: 2, progress: 0.5 } }
        ])
        const statusHuman = yield* run("status")
        expect(statusHuman.stdout).toMatch(
          /PERSPECTIVE VERSIONS\n.*\n.*\n\s+balance__v2\s+balance\s+v2\s+building 50%\s+\[#{7}-{7}\] 50%\s+1\/2\s+0 events\/s, ETA 1\d\.\ds/
        )
        expect(statusHuman.stdout).toMatch(
          /VersionBuilding: version 2 of perspective "balance" \(balance__v2\) is building: 50% of its history applied/
        )
        yield* sql(`delete from wh_perspective_backfill where perspective_name = 'balance__v2'`)
        // Caught up: the state says so, and what it waits for.
        const caughtUp = yield* run("perspectives")
        expect(caughtUp.stdout).toMatch(/balance__v2\s+balance\s+v2\s+caught up\s+\[#{14}\] 100%\s+2\/2/)
        expect(caughtUp.stdout).toContain(
          "balance__v2 is caught up, waiting for a cutover: automatic unless its instances run with versions.autoCutover: false, then `whizbang cutover balance`"
        )
        expect((yield* run("perspectives", "--json")).json()[1]).toMatchObject({ state: "building", caughtUp: true })

        const switched = yield* run("cutover", "balance", "--grace", "1h", "--json")
        expect(switched.code).toBe(0)
        expect(switched.json()).toMatchObject({ baseName: "balance", live: "balance__v2", replaced: "balance", switched: true })
        expect(switched.json().millis).toBeGreaterThanOrEqual(0)
        const view = yield* sql("select pg_get_viewdef('wh_per_balance'::regclass) as def")
        expect(String(view[0]!.def)).toMatch(/wh_per_balance__v2/)
        const again = yield* run("cutover", "balance")
        expect(again.stdout).toBe("balance: nothing to do, balance__v2 is live (no newer version to go to)\n")

        const back = yield* run("rollback", "balance", "--grace", "30m")
        expect(back.code).toBe(0)
        expect(back.stdout).toMatch(/^balance: rolled back to balance \(balance__v2 now retiring\) in \d+ ms\n$/)
        // Rollback only goes back: a second one is refused and names the way forward; reads stay on v1.
        const twice = yield* run("rollback", "balance")
        expect(twice.code).toBe(3)
        expect(twice.stderr).toBe(
          'whizbang: perspective "balance" has nothing to roll back to: no version older than the live balance is retiring; balance__v2 is newer: `whizbang cutover balance` goes forward\n'
        )
        expect(String((yield* sql("select pg_get_viewdef('wh_per_balance'::regclass) as def"))[0]!.def)).not.toMatch(/__v2/)

        // A version whose pending events are not applied in time: nothing switched, exit 5.
        yield* sql(
          `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
           select gen_random_uuid(), stream_id, 'balance__v2', event_id, 0 from wh_events limit 1`
        )
        const slow = yield* run("cutover", "balance__v2", "--timeout", "150ms")
        expect(slow.code).toBe(5)
        expect(slow.stderr).toMatch(
          /^whizbang: cutover to balance__v2 timed out after 150 ms with 1 event\(s\) still pending; reads still serve the previous version\n$/
        )
        const states = yield* PgPerspectiveVersions.list
        expect(states.map((v) => [v.perspectiveName, v.state])).toEqual([
          ["balance", "live"],
          ["balance__v2", "retiring"]
        ])
      }).pipe(Effect.provide(database)),
    60_000
  )

  it.live(
    "perspectives --watch without a terminal prints a frame per interval and stops once no version is building or ready",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        yield* PgPerspectiveVersions.register([declared(1), declared(2)])
        const root = fileURLToPath(new URL("../../../", import.meta.url))
        let firstFrame: () => void = () => {}
        const framed = new Promise<void>((resolve) => {
          firstFrame = resolve
        })
        // The real executable, its stdout a pipe (not a TTY).
        const watching = yield* Effect.forkChild(
          Effect.promise(
            () =>
              new Promise<{ code: number; stdout: string }>((resolve) => {
                const child = execFile(
                  `${root}node_modules/.bin/tsx`,
                  [`${root}packages/cli/src/bin.ts`, "perspectives", "--watch", "--interval", "50ms", "--json", "--schema", "ops"],
                  { cwd: root, env: { ...process.env, NO_COLOR: "1", DATABASE_URL: url }, timeout: 30_000 },
                  (error, stdout) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout })
                )
                child.stdout?.once("data", () => firstFrame())
              })
          )
        )
        yield* Effect.promise(() => framed)
        yield* PgPerspectiveVersions.cutover("balance", 2)
        const { code, stdout } = yield* Fiber.join(watching)
        expect(code).toBe(0)
        const frames = stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as ReadonlyArray<PgPerspectiveVersions.VersionInfo>)
        const v2 = (frame: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
          frame.find((v) => v.perspectiveName === "balance__v2")?.state
        expect(v2(frames[0]!)).toBe("building")
        expect(v2(frames.at(-1)!)).toBe("live")
        expect(frames.slice(0, -1).every((f) => v2(f) !== "live")).toBe(true)

        // The human rendering of the same executable, one frame, no watch.
        const once = yield* cli(["perspectives", "--schema", "ops"], { DATABASE_URL: url })
        expect(once.code).toBe(0)
        expect(once.stdout).toMatch(/^perspective versions — .*\n\s+PERSPECTIVE\s+BASE\s+VERSION\s+STATE\s+PROGRESS/)
        expect(once.stdout).toMatch(/balance\s+balance\s+v1\s+retiring/)
      }).pipe(Effect.provide(database)),
    60_000
  )
})
