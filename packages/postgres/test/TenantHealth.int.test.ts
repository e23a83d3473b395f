// `PgOperations.TenantHealth.summary`: many schemas' pending work, lag and dead letters in one statement, each row
// naming its schema; a schema without Whizbang's tables fails the statement (the CLI then reads schema by schema).
import { expect, layer } from "@effect/vitest"
import { PgClient, PgMigrator } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect } from "effect"

const Health = PgOperations.TenantHealth

layer(PgTestDatabase.layer({ schema: "health_a" }))((it) => {
  it.effect("one statement reads every schema given: pending rows, the oldest one's age, dead letters; a missing table fails it", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const b = client.forSchema("health_b")
      yield* Effect.provideService(PgMigrator.run, PgClient.PgClient, b)
      const work = (c: PgClient.Shape, ageSeconds: number, processed: boolean) =>
        c.query(
          `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at, processed_at)
           values (gen_random_uuid(), gen_random_uuid(), 'balance', gen_random_uuid(), 0, now() - make_interval(secs => $1), $2)`,
          [ageSeconds, processed ? new Date() : null]
        )
      yield* work(client, 120, false)
      yield* work(client, 30, false)
      yield* work(client, 900, true)
      yield* b.query(
        `insert into wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts)
         values (gen_random_uuid(), gen_random_uuid(), 'balance', gen_random_uuid(), 'Deposited', '{}', 'boom', 3)`
      )

      const rows = yield* Health.summary(client, { schemas: ["health_a", "health_b"] })
      const bySchema = Object.fromEntries(rows.map((r) => [r.schema, r]))
      expect(bySchema.health_a).toMatchObject({ pending: 2, deadLetters: 0 })
      expect(bySchema.health_a!.lagSeconds).toBeGreaterThanOrEqual(119)
      expect(bySchema.health_a!.lagSeconds).toBeLessThan(900)
      expect(bySchema.health_b).toEqual({ schema: "health_b", pending: 0, lagSeconds: null, deadLetters: 1 })
      expect(yield* Health.summary(client, { schemas: [] })).toEqual([])

      const missing = yield* Effect.flip(Health.summary(client, { schemas: ["health_a", "health_none"] }))
      expect(missing.reason._tag).toBe("UndefinedTable")
    })
  )

  it.effect("TenantWork.check: history still planned (a new perspective's catch-up, no work rows) keeps a tenant busy", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const c = client.forSchema("health_c")
      yield* Effect.provideService(PgMigrator.run, PgClient.PgClient, c)
      const request = { instanceId: "01a24dd3-0000-7000-8000-000000000001", staleSeconds: 30 }
      expect((yield* PgOperations.TenantWork.check(c, request)).busy).toBe(false)
      yield* c.query(
        `insert into wh_perspective_backfill (perspective_name, stream_id, through_event_id) values ('deposits', gen_random_uuid(), gen_random_uuid())`
      )
      expect(yield* PgOperations.TenantWork.check(c, request)).toMatchObject({ busy: true, versionWork: true, lagSeconds: 0 })
    })
  )

  // What a tenant's start skips rests on these two findings (`TenantStart`): a version round has something to do
  // exactly when `versionWork`, the registration's clean-up exactly when `others`.
  it.effect("TenantWork.check: version work (building, an abandoned hand-over, a retirement due) and other instances' rows", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const c = client.forSchema("health_d")
      yield* Effect.provideService(PgMigrator.run, PgClient.PgClient, c)
      const me = "01a24dd3-0000-7000-8000-000000000001"
      const request = { instanceId: me, staleSeconds: 30 }
      const check = PgOperations.TenantWork.check(c, request)
      expect(yield* check).toMatchObject({ busy: false, versionWork: false, elsewhere: false, others: false })

      const version = (key: string, state: string, column: string, secondsFromNow: number | null) =>
        c.query(
          `insert into wh_perspective_versions (perspective_name, base_name, version, state, event_types, ${column})
           values ($1, $1, 1, $2, '{}', now() + make_interval(secs => $3))`,
          [key, state, secondsFromNow]
        )
      const only = (key: string) => c.query(`delete from wh_perspective_versions where perspective_name <> $1`, [key])

      // Live, and retiring with its grace not over, and a hand-over whose owner renews it: nothing to do.
      yield* version("live_one", "live", "retire_after", null)
      yield* version("retiring_later", "retiring", "retire_after", 3600)
      yield* version("handing_over", "ready", "handover_until", 60)
      expect(yield* check).toMatchObject({ busy: false, versionWork: false })
      yield* version("retiring_due", "retiring", "retire_after", -1)
      expect(yield* check).toMatchObject({ busy: true, versionWork: true })
      yield* only("live_one")
      yield* version("abandoned", "ready", "handover_until", -1)
      expect(yield* check).toMatchObject({ busy: true, versionWork: true })
      yield* only("live_one")
      yield* version("building", "building", "retire_after", null)
      expect(yield* check).toMatchObject({ busy: true, versionWork: true })
      yield* only("live_one")
      expect(yield* check).toMatchObject({ busy: false, versionWork: false })

      // Its own row is not another's; a stale row of another is one, but not a live one elsewhere.
      const instance = (id: string, silentSeconds: number) =>
        c.query(
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at)
           values ($1, 'svc', 'host', 1, now() - make_interval(secs => $2))`,
          [id, silentSeconds]
        )
      yield* instance(me, 0)
      expect(yield* check).toMatchObject({ elsewhere: false, others: false })
      yield* instance("01a24dd3-0000-7000-8000-000000000002", 120)
      expect(yield* check).toMatchObject({ elsewhere: false, others: true })
      yield* instance("01a24dd3-0000-7000-8000-000000000003", 0)
      expect(yield* check).toMatchObject({ elsewhere: true, others: true })
    })
  )
})
