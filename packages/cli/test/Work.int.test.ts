// `whizbang work list | remove`: work enqueued under a name nothing runs (here a misspelled `customer_stat`, as an
// old rebuild did) is listed as orphaned, named by the watchdog, and removed — while the work of a perspective the
// service registered and runs is refused unless --force.
import { describe, expect, it } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Effect } from "effect"
import * as Work from "../src/Work.js"
import { cli } from "./fixtures/runCli.js"
import { runInProcess } from "./fixtures/runInProcess.js"

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

/** An event on its own stream with a work row for `perspective`, enqueued two minutes ago. */
const pending = (perspective: string) =>
  sql(
    `with e as (
       insert into wh_events (event_id, stream_id, stream_version, event_type, payload)
       values (gen_random_uuid(), gen_random_uuid(), 1, 'CustomerCharged', '{}') returning event_id, stream_id
     )
     insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at)
     select gen_random_uuid(), stream_id, $1, event_id, 0, now() - interval '2 minutes' from e`,
    [perspective]
  )

const workOf = (perspective: string) =>
  Effect.map(sql("select count(*)::int as n from wh_perspective_events where perspective_name = $1", [perspective]), (r) => r[0]!.n)

const database = PgTestDatabase.layer({ schema: "shop", maxConnections: 4 })

const run = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => runInProcess(["--database-url", url, "--schema", "shop", ...args]))

describe("whizbang work", () => {
  it.live(
    "lists work per perspective with what runs it, the watchdog names the command, and remove takes only what nothing runs",
    () =>
      Effect.gen(function* () {
        // The service registered and runs customer_stats; 3 work rows wait under the misspelled customer_stat.
        yield* PgPerspectiveVersions.register([
          { name: "customer_stats", baseName: "customer_stats", version: 1, eventTypes: ["CustomerCharged"] }
        ])
        yield* sql(
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
           values (gen_random_uuid(), 'shop', 'web-1', 7, now(), '{customer_stats}')`
        )
        for (let i = 0; i < 3; i++) yield* pending("customer_stat")
        yield* pending("customer_stats")

        const listed = yield* run("work", "list", "--json")
        expect(listed.code).toBe(0)
        expect(listed.json()).toMatchObject([
          { perspective: "customer_stat", pending: 3, streams: 3, registered: null, runners: 0, orphaned: true },
          { perspective: "customer_stats", pending: 1, streams: 1, registered: "live", runners: 1, orphaned: false }
        ])
        expect(listed.json()[0].oldestAgeSeconds).toBeGreaterThan(100)
        const human = yield* run("work", "list")
        expect(human.stdout).toMatch(/customer_stat\s+3\s+3\s+2m \d+s\s+nothing \(orphaned\)/)
        expect(human.stdout).toMatch(/customer_stats\s+1\s+1\s+2m \d+s\s+registered \(live\), 1 live instance\(s\)/)
        expect(human.stdout).toContain(
          "customer_stat: not registered and no live instance runs it; remove its work: whizbang work remove customer_stat"
        )

        // The watchdog's stuck warning (here through `status`) names the command for the orphaned work only.
        const status = yield* run("status", "--json")
        const stuck: ReadonlyArray<{ perspective: string; message: string }> = status.json().stuck
        expect(stuck.filter((s) => s.perspective === "customer_stat")).toHaveLength(3)
        for (const s of stuck) {
          if (s.perspective === "customer_stat") expect(s.message).toMatch(/whizbang work remove customer_stat$/)
          else expect(s.message).not.toContain("work remove")
        }
        const statusHuman = yield* run("status")
        expect(statusHuman.stdout).toMatch(
          /\nORPHANED WORK \(no release registered these perspectives: nothing will apply their work\)\n {2}customer_stat: see it with whizbang work list, remove it with whizbang work remove customer_stat\n$/
        )

        // Registered and running: refused, nothing removed.
        const running = yield* run("work", "remove", "customer_stats", "--yes")
        expect(running.code).toBe(4)
        expect(running.stderr).toBe(
          'whizbang: perspective "customer_stats" is registered (live) and is run by 1 live instance(s): its 1 pending work row(s) are applied by the workers, not orphaned; pass --force to remove them anyway (its read model then lacks those events until a rebuild)\n'
        )
        expect(yield* workOf("customer_stats")).toBe(1)
        // Orphaned, but no terminal to confirm on and no --yes: refused, with what it would remove.
        const unconfirmed = yield* run("work", "remove", "customer_stat")
        expect(unconfirmed.code).toBe(4)
        expect(unconfirmed.stderr).toMatch(
          /remove 3 pending work row\(s\) of "customer_stat" on 3 stream\(s\) \(orphaned: nothing runs it\)\?/
        )
        expect(yield* workOf("customer_stat")).toBe(3)

        // As an operator runs it (the executable): removed, the rest untouched.
        const { url } = yield* TestDatabase.TestDatabase
        const removed = yield* cli(["--schema", "shop", "work", "remove", "customer_stat", "--yes"], { DATABASE_URL: url })
        expect(removed.code).toBe(0)
        expect(removed.stdout).toBe('removed 3 pending work row(s) of "customer_stat" on 3 stream(s)\n')
        expect(yield* workOf("customer_stat")).toBe(0)
        expect(yield* workOf("customer_stats")).toBe(1)
        expect(
          (yield* run("status", "--json")).json().stuck.filter((s: { perspective: string }) => s.perspective === "customer_stat")
        ).toEqual([])

        const gone = yield* run("work", "remove", "customer_stat", "--yes")
        expect(gone.code).toBe(3)
        expect(gone.stderr).toBe(
          'whizbang: perspective "customer_stat" has no pending work; perspectives with pending work: customer_stats\n'
        )

        // --force takes the work of a registered, running perspective too (API: the same checks, typed).
        const refused = yield* Effect.flip(Work.remove("customer_stats"))
        expect(refused.reason._tag).toBe("Refused")
        expect(yield* Work.remove("customer_stats", { force: true })).toEqual({
          perspective: "customer_stats",
          pending: 1,
          streams: 1,
          planned: 0
        })
        expect(yield* workOf("customer_stats")).toBe(0)
        expect((yield* run("work", "list")).stdout).toBe("  (none)\n")
        const bad = yield* run("work", "remove", "Customer-Stat", "--yes")
        expect(bad.code).toBe(2)
      }).pipe(Effect.provide(database)),
    60_000
  )
})
