// The Citus tier: the front door on a Citus cluster with schema-based sharding, each service schema a distributed
// schema, 4 of them spread over both worker nodes. Composed only from `whizbang`, as the README composes it; the
// only difference from plain PostgreSQL is the URL (the coordinator's). Runs when a coordinator answers (see
// support/citus.ts); otherwise one line says why it was skipped.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Citus from "./support/citus.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const skipped = await Citus.unavailable()
if (skipped !== undefined) console.log(`Citus tier skipped: ${skipped}`)

const url = Citus.url

describe.skipIf(skipped !== undefined)("the front door on Citus", () => {
  it.live(
    "(a) 4 service schemas on both worker nodes, each with 4 concurrent appenders over 50 overlapping streams and 2 worker processes: every fold exact, nothing left",
    () =>
      Effect.gen(function* () {
        yield* Citus.enableSchemaSharding
        const schemas = yield* Citus.schemas("citus_a", 4)
        const started = Date.now()
        const results = yield* Effect.forEach(
          schemas,
          (schema) =>
            Effect.gen(function* () {
              const workers = [yield* Workers.start({ url, schema }), yield* Workers.start({ url, schema })]
              const appended = yield* Writer.appendConcurrently({ streamIds: Writer.streams(50), appenders: 4, perAppender: 500, batch: 10 })
              const reports = yield* Workers.settle(
                workers,
                Effect.map(Writer.counts, (c) => c.work)
              )
              return {
                schema,
                appended,
                reports,
                counts: yield* Writer.counts,
                balance: yield* Writer.mismatches("balance"),
                activity: yield* Writer.mismatches("activity")
              }
            }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped),
          { concurrency: "unbounded" }
        )
        const placed = yield* Citus.placements(schemas)
        console.log(
          `citus (a): ${schemas.length} schemas on ports ${placed.map((p) => p.port).join(", ")}, ${results.reduce((n, r) => n + r.appended, 0)} events, settled after ${Date.now() - started} ms`
        )
        for (const r of results) {
          expect(r.counts, r.schema).toEqual({ events: 2_000, work: 0, dead_letters: 0 })
          expect(r.balance, r.schema).toBe(0)
          expect(r.activity, r.schema).toBe(0)
        }
        expect(placed.length).toBe(4)
      }).pipe(Effect.scoped),
    240_000
  )
})
