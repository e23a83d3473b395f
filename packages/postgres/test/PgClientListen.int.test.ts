// `PgClient.listen(channel)`: LISTEN as a Stream. Every channel and subscriber of a client share one connection,
// opened for the first subscriber and ended after the last; only the client's schema's notifications arrive (their
// detail after `<schema>\n`); `undefined` says "listening now" and "reconnected: something may have changed"; a
// lost connection is re-opened, logged as one warning and one line when it is back.
import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Fiber, Logger, Queue, Schedule, Stream } from "effect"

const schema = "listen_test"

/** Backends of this database whose last statement was a LISTEN. */
const listeners = (client: PgClient.Shape) =>
  Effect.map(
    client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()"
    ),
    (rows) => rows.map((r) => r.pid)
  )

/** Polls `check` until it holds, for at most 10 s. */
const eventually = <A>(effect: Effect.Effect<A, unknown>, check: (a: A) => boolean) =>
  effect.pipe(
    Effect.repeat({ until: check, schedule: Schedule.spaced("20 millis") }),
    Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error("condition not met within 10 s")) })
  )

const subscribe = (client: PgClient.Shape, channel: string) =>
  Effect.gen(function* () {
    const received = yield* Queue.unbounded<string | undefined>()
    const fiber = yield* Effect.forkChild(Stream.runForEach(client.listen(channel), (detail) => Queue.offer(received, detail)))
    return { received, fiber }
  })

const notify = (client: PgClient.Shape, channel: string, payload: string) => client.query("SELECT pg_notify($1, $2)", [channel, payload])

describe("PgClient.listen", () => {
  it.live("channels and subscribers share one connection, opened for the first subscriber and ended after the last", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const client = yield* PgClient.make({ url, schema })
      expect(yield* listeners(client)).toEqual([])

      const work = yield* subscribe(client, "wh_work")
      const processed = yield* subscribe(client, "wh_processed")
      const alsoWork = yield* subscribe(client, "wh_work")
      // Each subscriber's first element: its channel is LISTENed.
      for (const s of [work, processed, alsoWork]) expect(yield* Queue.take(s.received)).toBeUndefined()
      expect(yield* listeners(client)).toHaveLength(1)

      // Other schemas' notifications (and a schema that only starts with this one) are not delivered.
      yield* notify(client, "wh_work", "other_schema")
      yield* notify(client, "wh_work", `${schema}x\nnot-mine`)
      yield* notify(client, "wh_work", `${schema}\ndetail`)
      yield* notify(client, "wh_processed", schema)
      for (const s of [work, alsoWork]) expect(yield* Queue.take(s.received)).toBe("detail")
      expect(yield* Queue.take(processed.received)).toBeUndefined()

      // The connection lives while anything listens, whichever subscriber came first.
      yield* Fiber.interrupt(work.fiber)
      yield* Fiber.interrupt(processed.fiber)
      yield* notify(client, "wh_work", `${schema}\nstill`)
      expect(yield* Queue.take(alsoWork.received)).toBe("still")
      yield* Fiber.interrupt(alsoWork.fiber)
      yield* eventually(listeners(client), (pids) => pids.length === 0)

      // A later subscriber opens it again.
      const again = yield* subscribe(client, "wh_processed")
      expect(yield* Queue.take(again.received)).toBeUndefined()
      expect(yield* listeners(client)).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer))
  )

  it.live("a lost connection is re-opened: every subscriber hears `undefined`, then the notifications; one warning, one line back", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const capture = Logger.layer([
        Logger.make((options) => {
          const parts: ReadonlyArray<unknown> = Array.isArray(options.message) ? options.message : [options.message]
          const message = parts.filter((p) => typeof p === "string").join(" ")
          if (message.startsWith("LISTEN") && options.logLevel !== "Debug") lines.push(`${options.logLevel} ${message}`)
        })
      ])
      const { url } = yield* TestDatabase.TestDatabase
      const client = yield* PgClient.make({ url, schema }).pipe(Effect.provide(capture))
      const work = yield* subscribe(client, "wh_work")
      const processed = yield* subscribe(client, "wh_processed")
      for (const s of [work, processed]) expect(yield* Queue.take(s.received)).toBeUndefined()
      const [pid] = yield* listeners(client)

      yield* client.query("SELECT pg_terminate_backend($1)", [pid])
      for (const s of [work, processed]) expect(yield* Queue.take(s.received)).toBeUndefined()
      const [next] = yield* eventually(listeners(client), (pids) => pids.length === 1 && pids[0] !== pid)
      expect(next).not.toBe(pid)
      // Both channels are LISTENed again on the new connection.
      yield* notify(client, "wh_work", `${schema}\nw`)
      yield* notify(client, "wh_processed", `${schema}\np`)
      expect(yield* Queue.take(work.received)).toBe("w")
      expect(yield* Queue.take(processed.received)).toBe("p")
      expect(lines).toHaveLength(2)
      expect(lines[0]).toMatch(/^Warn LISTEN connection failed: .*; retrying quietly until it recovers$/)
      expect(lines[1]).toMatch(/^Info LISTEN connection recovered after \d+ s \(1 failed attempt\)$/)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer))
  )

  it.live("an invalid channel name is a defect, and opens no connection", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const client = yield* PgClient.make({ url, schema })
      const exit = yield* Effect.exit(Stream.runDrain(client.listen("wh_work; DROP TABLE x")))
      expect(exit._tag).toBe("Failure")
      expect(yield* listeners(client)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.layer))
  )
})
