import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStore, PerspectiveWorker, PerspectiveRewinder } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase, TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Layer, Logger, Metric, Option, References, Tracer } from "effect"
import * as Bank from "./fixtures/bank.js"
import { cli } from "./fixtures/runCli.js"
import * as Rewind from "../src/Rewind.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  maxPerspectiveEventAttempts: 2,
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

// An in-memory span exporter: a tracer that records every span it starts (and still builds real spans).
const recorded: Array<Tracer.Span> = []
const recordingTracer = Tracer.make({
  span(options) {
    const span = Tracer.nativeTracer.span(options)
    recorded.push(span)
    return span
  }
})

// A logger that keeps every message with its annotations.
const logs: Array<{ readonly message: string; readonly annotations: Record<string, unknown> }> = []
const capturingLogger = Logger.make((options) => {
  logs.push({ message: String(options.message), annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) } })
})

const pipeline = PgPerspectivePipeline.layer({
  events: Bank.events,
  perspectives: Bank.perspectives,
  options: fast,
  failureBackoff: { initial: Duration.millis(10), multiplier: 2, max: Duration.millis(50) },
  versions: { interval: Duration.millis(20) }
}).pipe(
  Layer.provide(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bank" })),
  Layer.provideMerge(PgTestDatabase.layer({ schema: "bank", maxConnections: 8 })),
  Layer.provide(Layer.mergeAll(Layer.succeed(Tracer.Tracer, recordingTracer), Logger.layer([capturingLogger]))),
  Layer.orDie
)

/** Until the history a rebuild planned is replayed (`PgHistoryReplay`, every 20 ms here), then the worker is idle. */
const untilReplayed = Effect.gen(function* () {
  const worker = yield* PerspectiveWorker.PerspectiveWorker
  const client = yield* PgClient.PgClient
  const started = Date.now()
  while ((yield* client.query("select 1 from wh_perspective_backfill")).length > 0) {
    if (Date.now() - started > 30_000) return yield* Effect.die(new Error("history still planned after 30 s"))
    yield* Effect.sleep(Duration.millis(10))
  }
  yield* worker.requestImmediatePoll
  yield* worker.awaitIdle
})

const untilDeadLetter = Effect.gen(function* () {
  const worker = yield* PerspectiveWorker.PerspectiveWorker
  const client = yield* PgClient.PgClient
  // Each retry waits out a short backoff while the worker is idle: go round until the letter is there.
  for (;;) {
    yield* worker.awaitIdle
    const letters = yield* client.query<{ id: string; event_id: string }>("select id, event_id from wh_dead_letters")
    if (letters.length > 0) return letters[0]!
  }
})

describe("the CLI against a running pipeline", () => {
  it.live(
    "a dead letter retried with `whizbang dead-letters retry` is applied once the cause is fixed; spans, metrics and log annotations are recorded",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const models = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        const { instanceId } = yield* InstanceProvider.InstanceProvider
        const { url } = yield* TestDatabase.TestDatabase
        const id = EventId.unsafeMake()
        Bank.audits.reject = true
        const appended = yield* store.append(id, [Bank.Deposited.make({ accountId: id, amount: 10 }), Bank.Audited.make({ accountId: id })])
        const letter = yield* untilDeadLetter
        expect(letter.event_id).toBe(appended.events[1]!.eventId)
        expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 10, audits: 0 })

        const status = yield* cli(["status", "--json", "--schema", "bank"], { DATABASE_URL: url })
        expect(status.json().perspectives).toMatchObject([{ perspective: "balance", failed: 1, deadLetters: 1, pending: 0 }])

        Bank.audits.reject = false
        const retried = yield* cli(["--schema", "bank", "dead-letters", "retry", letter.id, "--json"], { DATABASE_URL: url })
        expect(retried.code).toBe(0)
        yield* worker.awaitIdle
        expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 10, audits: 1 })
        expect(yield* client.query("select 1 from wh_dead_letters")).toHaveLength(0)
        expect(yield* client.query("select 1 from wh_perspective_events")).toHaveLength(0)
        const [cursor] = yield* client.query<{ status: number; error: string | null }>(
          "select status, error from wh_perspective_cursors where stream_id = $1",
          [id]
        )
        expect(cursor).toEqual({ status: 2, error: null })

        // Traces: every stage of the cycle, with the stream and perspective on the apply span.
        const names = new Set(recorded.map((s) => s.name))
        for (const name of ["whizbang.claim", "whizbang.fetch", "whizbang.apply", "whizbang.flush", "whizbang.cycle"])
          expect(names).toContain(name)
        const apply = recorded.find((s) => s.name === "whizbang.apply" && s.attributes.get("whizbang.stream_id") === id)
        expect(apply?.attributes.get("whizbang.perspective")).toBe("balance")
        const fetch = recorded.find((s) => s.name === "whizbang.fetch")!
        expect(Option.getOrThrow(fetch.parent).spanId).toBe(
          recorded.find((s) => s.name === "whizbang.cycle" && s.spanId === Option.getOrThrow(fetch.parent).spanId)?.spanId
        )

        // Metrics: the registry holds the counters the worker and coordinator updated.
        const snapshot = yield* Metric.snapshot
        const total = (name: string) =>
          snapshot.filter((m) => m.id === name).reduce((n, m) => n + Number((m.state as { count?: number }).count ?? 0), 0)
        expect(total("whizbang_events_applied")).toBeGreaterThanOrEqual(2)
        expect(total("whizbang_apply_failures")).toBeGreaterThanOrEqual(2)
        expect(total("whizbang_dead_letters")).toBeGreaterThanOrEqual(1)

        // Logs: the failed apply names the instance, stream, perspective and event.
        const failure = logs.find((l) => l.message.includes("apply failed"))
        expect(failure?.annotations).toMatchObject({
          "whizbang.instance_id": instanceId,
          "whizbang.stream_id": id,
          "whizbang.perspective": "balance",
          "whizbang.event_id": letter.event_id
        })
      }).pipe(Effect.scoped, Effect.provide(pipeline)),
    120_000
  )
  it.live(
    "a rebuild within the dedup TTL rebuilds the full fold: the worker's cache never takes the new work rows for duplicates",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const models = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        Bank.audits.reject = false
        const id = EventId.unsafeMake()
        yield* store.append(
          id,
          [1, 2, 3].map((amount) => Bank.Deposited.make({ accountId: id, amount }))
        )
        yield* store.append(id, [Bank.Audited.make({ accountId: id })])
        yield* worker.awaitIdle
        expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 6, audits: 1 })
        const before = (yield* worker.stats).deduped
        // Well within the 300 s TTL of the worker that just applied every one of these events.
        // No event types given: every type the perspective registered (Deposited and Audited).
        const rebuilt = yield* Rewind.rebuild({ perspective: "balance", streamId: id })
        expect(rebuilt).toMatchObject({ enqueued: 0, planned: 4 })
        yield* untilReplayed
        expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 6, audits: 1 })
        expect((yield* worker.stats).deduped).toBe(before)
        expect(yield* client.query("select 1 from wh_perspective_events")).toHaveLength(0)
      }).pipe(Effect.scoped, Effect.provide(pipeline)),
    120_000
  )

  it.live(
    "`whizbang rebuild` repairs a damaged read model in place while the workers run, from every type the perspective handles",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const models = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        const { url } = yield* TestDatabase.TestDatabase
        Bank.audits.reject = false
        const accounts = [EventId.unsafeMake(), EventId.unsafeMake(), EventId.unsafeMake()]
        for (const [i, id] of accounts.entries()) {
          yield* store.append(id, [Bank.Deposited.make({ accountId: id, amount: i + 1 }), Bank.Audited.make({ accountId: id })])
        }
        yield* worker.awaitIdle
        const expected = accounts.map((_, i) => ({ balance: i + 1, audits: 1 }))
        const balances = Effect.forEach(accounts, (id) => Effect.map(models.getById("balance", id), (row) => Option.getOrThrow(row).data))
        expect(yield* balances).toEqual(expected)

        // The rows are damaged (the code did not change): a repair in place.
        yield* client.query(`update wh_per_balance__v1 set data = '{"balance": -1, "audits": 0}'`)
        const misspelled = yield* cli(["--schema", "bank", "rebuild", "balanse", "--yes"], { DATABASE_URL: url })
        expect(misspelled.code).toBe(3)
        expect(misspelled.stderr).toBe('whizbang: unknown perspective "balanse"; registered: balance\n')
        const rebuilt = yield* cli(["--schema", "bank", "rebuild", "balance", "--yes"], { DATABASE_URL: url })
        expect(rebuilt.code).toBe(0)
        expect(rebuilt.stderr).toContain(
          "rebuild balance in place: empties 3 row(s) of wh_per_balance__v1 and resets 3 stream(s) (cursors, snapshots, 0 pending work row(s)), then plans 6 event(s) of Audited, Deposited for the replay of the instances that run it"
        )
        expect(rebuilt.stdout).toBe(
          "rebuilding balance: 3 stream(s) reset, 6 event(s) planned for replay (whizbang perspectives shows its progress)\n"
        )
        // Replayed in bulk by the running pipeline: no work row was written for the history.
        expect(yield* client.query("select 1 from wh_perspective_events")).toHaveLength(0)
        yield* untilReplayed
        expect(yield* balances).toEqual(expected)
        expect(yield* client.query("select 1 from wh_perspective_events")).toHaveLength(0)
      }).pipe(Effect.scoped, Effect.provide(pipeline)),
    120_000
  )
})
