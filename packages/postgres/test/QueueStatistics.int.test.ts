// A claiming worker analyzes queue tables whose statistics autovacuum left stale (a schema per tenant makes
// thousands of tables, and autovacuum visits them in turn): a claim planned for empty tables over thousands of rows
// ran for minutes in bench t.
import { describe, expect, it } from "@effect/vitest"
import { InstanceProvider, WorkCoordinator } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Fiber, Layer, Schedule } from "effect"
import * as Sql from "../src/sql/queueVacuum.js"
import * as Bank from "./fixtures/bank.js"

const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }

describe("the queue tables' statistics", () => {
  it.live(
    "are brought up to date by the first claim that takes a full batch (a backlog) when the table changed far beyond its last analyze",
    () =>
      Effect.gen(function* () {
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const client = yield* PgClient.PgClient
        // Analyzed while empty, as a fresh tenant's tables are.
        yield* client.query("ANALYZE wh_perspective_events")
        const estimate = Effect.map(
          client.query<{ n: number }>("SELECT reltuples::int AS n FROM pg_class WHERE oid = 'wh_perspective_events'::regclass"),
          (rows) => rows[0]!.n
        )
        expect(yield* estimate).toBe(0)
        yield* client.query(
          `INSERT INTO wh_events (event_id, stream_id, stream_version, event_type, payload)
         SELECT gen_random_uuid(), s.id, v, 'Deposited', jsonb_build_object('accountId', s.id, 'amount', v)
         FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 500)) s, generate_series(1, 10) v`
        )
        yield* client.query(
          `INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
         SELECT gen_random_uuid(), e.stream_id, 'balance', e.event_id, 0 FROM wh_events e`
        )
        // The inserting sessions report their changes when idle (about a second): wait until the server shows them.
        const changed = Effect.map(
          client.query<{ n: number }>(
            "SELECT n_mod_since_analyze::int AS n FROM pg_stat_user_tables WHERE relid = 'wh_perspective_events'::regclass"
          ),
          (rows) => rows[0]?.n ?? 0
        )
        expect(
          yield* Effect.repeat(changed, { until: (n) => n >= 5_000, times: 100, schedule: Schedule.spaced(Duration.millis(50)) })
        ).toBe(5_000)
        expect(yield* estimate).toBe(0)
        const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30 })
        expect(claimed.length).toBe(10)
        // The analyze runs beside the worker, in the background.
        const after = yield* Effect.repeat(estimate, { until: (n) => n > 0, times: 200, schedule: Schedule.spaced(Duration.millis(25)) })
        expect(after).toBe(5_000)
      }).pipe(
        Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
        Effect.provide(PgTestDatabase.layer({ schema: "bank_queue_statistics" }))
      )
  )

  it.live("an analyze of a table another session is analyzing is skipped, not waited for", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // Another session holds the lock an ANALYZE takes (SHARE UPDATE EXCLUSIVE), as a concurrent ANALYZE does.
      const holder = yield* Effect.forkChild(
        client.withTransaction(
          Effect.gen(function* () {
            yield* client.query("LOCK TABLE wh_perspective_events IN SHARE UPDATE EXCLUSIVE MODE")
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(release)
          })
        )
      )
      yield* Deferred.await(locked)
      const outcome = yield* Sql.analyze(client, { tables: ["wh_perspective_events", "wh_active_streams"] }).pipe(
        Effect.timeout(Duration.seconds(10)),
        Effect.as("done" as const),
        Effect.catchTag("TimeoutError", () => Effect.succeed("waited" as const))
      )
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      expect(outcome).toBe("done")
    }).pipe(Effect.provide(PgTestDatabase.layer({ schema: "bank_queue_statistics_skip" })))
  )
})
