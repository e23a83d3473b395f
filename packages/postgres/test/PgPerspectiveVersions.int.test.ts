// Perspective versions at the registry level: which version a cutover without a version picks, and which
// instances count as running a version. Versions are registered directly (no worker): the cases need no events.
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect } from "effect"

const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Record<string, unknown>>(text, params))

const declared = (baseName: string, version: number): PgPerspectiveVersions.Declared => ({
  name: version === 1 ? baseName : `${baseName}__v${version}`,
  baseName,
  version,
  eventTypes: ["Deposited"]
})

const states = (baseName: string) =>
  Effect.map(PgPerspectiveVersions.list, (versions) =>
    Object.fromEntries(versions.filter((v) => v.baseName === baseName).map((v) => [v.perspectiveName, v.state]))
  )

const instance = (perspectives: ReadonlyArray<string> | null, heartbeatAgo: number) =>
  sql(
    `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at, perspective_names)
     values ($1, 'bank', 'host', 1, now() - make_interval(secs => $2), $3)`,
    [randomUUID(), heartbeatAgo, perspectives]
  )

layer(PgTestDatabase.layer({ schema: "versions_ops", maxConnections: 4 }))((it) => {
  it.effect("cutover without a version goes to a newer version only: never back to the retiring one", () =>
    Effect.gen(function* () {
      yield* PgPerspectiveVersions.register([declared("ledger", 1)])
      yield* PgPerspectiveVersions.register([declared("ledger", 1), declared("ledger", 2)])
      expect(yield* states("ledger")).toEqual({ ledger: "live", ledger__v2: "building" })

      const first = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(first).toMatchObject({ live: "ledger__v2", replaced: "ledger", switched: true })
      expect(yield* states("ledger")).toEqual({ ledger: "retiring", ledger__v2: "live" })

      // The only non-live, non-retired version is the older, retiring v1: nothing to do, reads stay on v2.
      const again = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(again).toEqual({ baseName: "ledger", live: "ledger__v2", replaced: undefined, millis: 0, switched: false })
      expect(yield* states("ledger")).toEqual({ ledger: "retiring", ledger__v2: "live" })
      const view = yield* sql("select pg_get_viewdef('wh_per_ledger'::regclass) as def")
      expect(String(view[0]!.def)).toMatch(/wh_per_ledger__v2/)

      // A version registered later is newer: it is the target.
      yield* PgPerspectiveVersions.register([declared("ledger", 3)])
      const third = yield* PgPerspectiveVersions.cutover("ledger", undefined, { grace: "1 hour" })
      expect(third).toMatchObject({ live: "ledger__v3", replaced: "ledger__v2", switched: true })
    })
  )

  it.effect("hasRunner counts only instances with a fresh heartbeat (the watchdog's dead-instance threshold)", () =>
    Effect.gen(function* () {
      yield* sql("delete from wh_service_instances")
      yield* PgPerspectiveVersions.register([declared("audit", 1), declared("audit", 2)])
      // A crashed instance's row, not abandoned yet, that ran both versions; a live one that runs only v1.
      yield* instance(["audit", "audit__v2"], 120)
      yield* instance(["audit"], 2)
      const runners = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
        Object.fromEntries(versions.filter((v) => v.baseName === "audit").map((v) => [v.perspectiveName, v.hasRunner]))

      expect(runners(yield* PgPerspectiveVersions.list)).toEqual({ audit: true, audit__v2: false })
      // With a longer threshold the stale row counts again.
      expect(runners(yield* PgPerspectiveVersions.listWith({ deadInstanceAfter: "5 minutes" }))).toEqual({
        audit: true,
        audit__v2: true
      })
      // An instance with no recorded perspective set runs every version.
      yield* instance(null, 1)
      expect(runners(yield* PgPerspectiveVersions.list)).toEqual({ audit: true, audit__v2: true })
    })
  )
})
