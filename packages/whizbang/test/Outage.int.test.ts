// A database outage through the front door: a `Whizbang.layer` service with its default options (worker, heartbeats,
// listeners, watchdog, version build loop, rewinder, vacuum) loses its database for OUTAGE_SECONDS (8 s by default;
// the README's figure is from 30): every connection is terminated and new ones are refused (`ALLOW_CONNECTIONS
// false`), then allowed again. Every log entry goes through a custom Logger. Each background loop says once that it
// failed (the cause's message, no stack trace), stays quiet while it keeps failing, and says once that it is back.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Layer, Logger, Option, Schedule } from "effect"
import { inject } from "vitest"
import { EventId, EventStore, PerspectiveStore, PgClient, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

const outageMillis = Number(process.env.OUTAGE_SECONDS ?? "8") * 1000

interface Entry {
  readonly level: string
  readonly message: string
  readonly hasCause: boolean
  /** Lines as `Logger.formatSimple` renders the entry (a cause's stack trace included). */
  readonly lines: number
}

/** Terminates every connection to `database` and refuses new ones for `millis`, from a connection to the server's own database. */
const outage = (database: string, millis: number) =>
  Effect.gen(function* () {
    const admin = yield* PgClient.PgClient
    const allow = (on: boolean) => admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS ${on}`)
    yield* Effect.gen(function* () {
      yield* allow(false)
      yield* admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
        database
      ])
      yield* Effect.sleep(Duration.millis(millis))
    }).pipe(Effect.ensuring(Effect.ignore(allow(true))))
  }).pipe(Effect.provide(PgClient.layer({ url: inject("whizbangTestPostgresUrl"), schema: "outage_admin", maxConnections: 1 })))

describe("a database outage", () => {
  it.live(
    "each background loop logs one warning without a stack trace when it loses the database and one line when it is back",
    () =>
      Effect.gen(function* () {
        const { url, name } = yield* TestDatabase.TestDatabase
        const entries: Array<Entry> = []
        let recording = false
        const capture = Logger.layer([
          Logger.make((options) => {
            if (!recording) return
            const parts: ReadonlyArray<unknown> = Array.isArray(options.message) ? options.message : [options.message]
            entries.push({
              level: options.logLevel,
              message: parts.filter((p) => typeof p === "string").join(" "),
              // A cause, or an error object among the message's parts: the default logger prints its stack trace.
              hasCause: options.cause.reasons.length > 0 || parts.some((p) => typeof p === "object" && p !== null),
              lines: Logger.formatSimple.log(options).split("\n").length
            })
          })
        ])
        const { events } = yield* Fixtures.definitions
        const app = Whizbang.layer({
          databaseUrl: url,
          schema: "outage",
          events,
          perspectives: [Fixtures.balance],
          // The watchdog runs during the outage too (its default is every 30 s).
          watchdog: { interval: "2 seconds" }
        })
        const id = EventId.unsafeMake()
        const applied = (total: number) =>
          PerspectiveStore.getById(Fixtures.balance, id).pipe(
            Effect.map((row) => Option.getOrUndefined(row)?.total === total),
            Effect.catch(() => Effect.succeed(false)),
            Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced("100 millis"), times: 600 }),
            Effect.flatMap((ok) => (ok ? Effect.void : Effect.die(new Error(`balance ${total} not applied within 60 s`))))
          )
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            const store = yield* EventStore.EventStore
            yield* store.append(id, [Fixtures.Deposited.make({ accountId: id, amount: 1 })])
            yield* applied(1)
            recording = true
            yield* outage(name, outageMillis)
            // Back: an append is applied again (the worker claims, applies, commits).
            yield* store
              .append(id, [Fixtures.Deposited.make({ accountId: id, amount: 2 })])
              .pipe(Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 150 }))
            yield* applied(3)
            // Every loop that said it failed says it is back (the watchdog's next round is within 2 s).
            const failing = () => new Set(entries.filter((e) => e.level === "Warn").map((e) => e.message.split(" failed")[0]!))
            const back = () =>
              new Set(entries.filter((e) => /recovered after/.test(e.message)).map((e) => e.message.split(" recovered")[0]!))
            yield* Effect.sync(() => [...failing()].every((loop) => back().has(loop))).pipe(
              Effect.repeat({ until: (all) => all, schedule: Schedule.spaced("100 millis"), times: 300 })
            )
            recording = false
            return { failing: [...failing()], back: [...back()] }
          }).pipe(Effect.provide(app.pipe(Layer.provide(capture))), Effect.provide(capture))
        )
        const warnings = entries.filter((e) => e.level === "Warn" || e.level === "Error")
        const lines = entries.reduce((n, e) => n + e.lines, 0)
        console.log(
          `outage of ${outageMillis / 1000} s: ${entries.length} log entries (${lines} lines as formatSimple prints them), ` +
            `${warnings.length} warnings from ${result.failing.length} loops (${result.failing.join("; ")}), ` +
            `${result.back.length} back lines`
        )
        for (const e of entries) console.log(`  ${e.level} ${e.message.slice(0, 160)}`)
        // One warning per loop (a reminder comes only after a minute), no stack trace above debug, one line back per loop.
        expect(warnings.filter((e) => e.hasCause)).toEqual([])
        const perLoop = new Map<string, number>()
        for (const e of warnings) perLoop.set(e.message.split(" failed")[0]!, (perLoop.get(e.message.split(" failed")[0]!) ?? 0) + 1)
        expect([...perLoop].filter(([, n]) => n > 1)).toEqual([])
        expect(result.back.sort()).toEqual(result.failing.sort())
        expect(entries.filter((e) => /recovered after/.test(e.message))).toHaveLength(result.failing.length)
        expect(entries.length).toBeLessThanOrEqual(3 * result.failing.length)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    180_000
  )
})
