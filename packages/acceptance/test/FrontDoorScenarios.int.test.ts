// Front-door scenarios beyond ordinary concurrency: imported events with older ids, a rolling deploy, a rebuild
// and a purge racing normal processing. Composed only from `whizbang` (worker processes, the `whizbang` CLI);
// the database comes from @whizbang/testing.
//
// Each scenario checks a fix that landed with it and fails on the code before it: (b) caller-supplied event ids in
// `append`, (c) instances claiming only the perspectives they run, (d) dedup that never drops rebuilt work,
// (e) completions fenced by stream locks.
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Effect, Option } from "effect"
import { EventId, EventStore, PerspectivePurge, PerspectiveStore, PgClient } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const root = fileURLToPath(new URL("../../..", import.meta.url))

const scenario = <A, E>(name: string, body: (url: string) => Effect.Effect<A, E, any>) =>
  it.live(
    name,
    () =>
      Effect.scoped(Effect.flatMap(Effect.service(TestDatabase.TestDatabase), ({ url }) => Effect.asVoid(body(url)))).pipe(
        Effect.provide(TestDatabase.layer)
      ) as Effect.Effect<void, E>
  )

const work = Effect.map(Writer.counts, (c) => c.work)

/** A UUIDv7 whose timestamp is `msAgo` in the past: lower than every id minted since. */
const olderId = (msAgo: number) => {
  const hex = (Date.now() - msAgo).toString(16).padStart(12, "0")
  const random = EventId.unsafeMake().replaceAll("-", "").slice(12)
  const digits = `${hex}${random}`
  return `${digits.slice(0, 8)}-${digits.slice(8, 12)}-${digits.slice(12, 16)}-${digits.slice(16, 20)}-${digits.slice(20)}`
}

const deposit = (accountId: string, tag: string, amount = 10) => Domain.Deposited.make({ accountId, amount, tag })

describe("the front door, beyond ordinary concurrency", () => {
  scenario("(b) events imported with caller-supplied older ids reach processed streams: rewound, folds exact", (url) =>
    Effect.gen(function* () {
      const schema = "front_b"
      const worker = yield* Workers.start({ url, schema })
      yield* Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const streams = Writer.streams(5)
        for (const s of streams) yield* store.append(s, [deposit(s, "a1"), deposit(s, "a2"), deposit(s, "a3")])
        yield* Workers.settle([worker], work)
        // Imported from another service with their own (older) ids, after the streams were processed.
        const imported = streams.map((s, i) => ({ stream: s, eventId: olderId(60_000 + i) }))
        for (const { eventId, stream } of imported) {
          const event = { ...deposit(stream, "imported", 7), eventId }
          yield* store.append(stream, [event])
        }
        const client = yield* Effect.service(PgClient.PgClient)
        const stored = yield* client.query<{ event_id: string }>(
          "SELECT event_id::text FROM wh_events WHERE payload->>'tag' = 'imported' ORDER BY 1"
        )
        expect(
          stored.map((r) => r.event_id),
          "the caller-supplied ids are kept"
        ).toEqual(imported.map((i) => i.eventId).sort())
        const reports = yield* Workers.settle([worker], work)
        expect(reports[0]!.rewinds.rewound).toBeGreaterThanOrEqual(streams.length)
        expect(yield* Writer.mismatches("balance")).toBe(0)
        expect(yield* Writer.mismatches("activity")).toBe(0)
        expect(yield* Writer.counts).toMatchObject({ work: 0, dead_letters: 0 })
      }).pipe(Effect.provide(Writer.layer(url, schema)))
    })
  )

  scenario(
    "(c) a rolling deploy, two instances running different perspective sets: no dead letter, every fold exact once both run",
    (url) =>
      Effect.gen(function* () {
        const schema = "front_c"
        // Few attempts and a short backoff: an instance dead-lettering work it cannot apply would show at once.
        // Durations as strings: the options reach the worker processes as JSON.
        const options = { maxPerspectiveEventAttempts: 2, failureBackoff: { initial: "10 millis", multiplier: 2, max: "50 millis" } }
        yield* Effect.gen(function* () {
          // The new version (both perspectives) writes; only the old version (balance only) runs so far.
          const old = yield* Workers.start({ url, schema, perspectives: ["balance"], options })
          yield* Writer.appendConcurrently({ streamIds: Writer.streams(20), appenders: 2, perAppender: 100, batch: 5 })
          yield* old.awaitIdle
          yield* old.awaitIdle
          expect((yield* Writer.counts).dead_letters, "the old instance dead-lettered work of a perspective it does not run").toBe(0)
          expect(yield* Writer.mismatches("balance")).toBe(0)
          const next = yield* Workers.start({ url, schema, options })
          yield* Workers.settle([old, next], work)
          expect(yield* Writer.counts).toMatchObject({ work: 0, dead_letters: 0 })
          expect(yield* Writer.mismatches("balance")).toBe(0)
          expect(yield* Writer.mismatches("activity")).toBe(0)
        }).pipe(Effect.provide(Writer.layer(url, schema)))
      })
  )

  scenario("(d) `whizbang rebuild` right after processing (within the dedup retention): the full fold comes back", (url) =>
    Effect.gen(function* () {
      const schema = "front_d"
      const worker = yield* Workers.start({ url, schema })
      yield* Effect.gen(function* () {
        yield* Writer.appendConcurrently({ streamIds: Writer.streams(10), appenders: 2, perAppender: 50, batch: 5 })
        yield* Workers.settle([worker], work)
        const output = yield* Effect.callback<string, Error>((resume) => {
          execFile(
            Path.join(root, "node_modules/.bin/tsx"),
            [
              Path.join(root, "packages/cli/src/bin.ts"),
              "--schema",
              schema,
              "rebuild",
              "balance",
              "-t",
              "Deposited",
              "-t",
              "Withdrawn",
              "--yes",
              "--json"
            ],
            { cwd: root, env: { ...process.env, DATABASE_URL: url, NO_COLOR: "1" }, timeout: 60_000 },
            (error, stdout, stderr) => resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
          )
        })
        const client = yield* Effect.service(PgClient.PgClient)
        const [{ streams }] = (yield* client.query<{ streams: number }>(
          "SELECT count(DISTINCT stream_id)::int AS streams FROM wh_events"
        )) as [{ streams: number }]
        // Every type it handles: the history is planned for the worker process's replay (no work row per event).
        expect(JSON.parse(output)).toEqual({ perspective: "balance", streams, enqueued: 0, planned: 100 })
        yield* Workers.settle([worker], work)
        expect(yield* Writer.mismatches("balance")).toBe(0)
        expect(yield* Writer.counts).toMatchObject({ work: 0, dead_letters: 0 })
      }).pipe(Effect.provide(Writer.layer(url, schema)))
    })
  )

  scenario("(e) a purge while a cycle of the stream is in flight: the purge wins, the pending event is applied to a fresh model", (url) =>
    Effect.gen(function* () {
      const schema = "front_e"
      const holdDir = mkdtempSync(Path.join(tmpdir(), "whizbang-hold-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(holdDir, { recursive: true, force: true })))
      const worker = yield* Workers.start({ url, schema, holdDir })
      yield* Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const s = EventId.unsafeMake()
        yield* store.append(s, [deposit(s, "a1", 100)])
        yield* Workers.settle([worker], work)
        // The worker fetches the next event and blocks in its apply: its cycle is in flight.
        yield* store.append(s, [deposit(s, "hold", 5)])
        yield* worker.held
        expect(yield* PerspectivePurge.purge(s, "balance")).toBe("purged")
        writeFileSync(Path.join(holdDir, "release"), "")
        yield* Workers.settle([worker], work)
        const row = yield* (yield* Effect.service(PerspectiveStore.PerspectiveStore)).getById("balance", s)
        // Purged: "a1" is gone for good; "hold" was still pending, so it starts a new model.
        expect(Option.getOrThrow(row).data).toEqual({ total: 5, count: 1, trail: "hold" })
        expect(yield* Writer.counts).toMatchObject({ work: 0, dead_letters: 0 })
      }).pipe(Effect.provide(Writer.layer(url, schema)))
    })
  )
})
