// Property (invariant 2 of the design): whatever the interleaving of appends with the worker's claims, prefetches,
// batches and consumers, a perspective applies each stream's events once each, in event-id (= version) order.
// Each run draws the worker's batching options (so prefetch and refetch paths interleave differently) and a schedule
// of bursts from concurrent appenders racing a running worker; the `activity` perspective records the order it
// applied each stream's events in, which must equal the stream as stored.
import { expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveRewinder, PerspectiveStore, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Duration, Effect, Layer } from "effect"
import * as fc from "fast-check"
import * as Bank from "./fixtures/bank.js"

const optionsArbitrary = fc.record({
  maxStreamsPerBatch: fc.integer({ min: 1, max: 4 }),
  perspectiveBatchSize: fc.integer({ min: 1, max: 5 }),
  maxConcurrentDrainConsumers: fc.integer({ min: 1, max: 4 }),
  drainLoopRefetchMinBatch: fc.integer({ min: 1, max: 3 }),
  drainLoopMaxIterations: fc.integer({ min: 1, max: 5 }),
  drainBatcherMaxSize: fc.integer({ min: 1, max: 8 })
})

// Bursts: (stream, events in one append) from 3 concurrent appenders.
const scheduleArbitrary = fc.array(
  fc.array(fc.record({ stream: fc.integer({ min: 0, max: 5 }), size: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 12 }),
  { minLength: 3, maxLength: 3 }
)

const pipeline = (options: typeof optionsArbitrary extends fc.Arbitrary<infer O> ? O : never) =>
  PgPerspectivePipeline.layer({
    events: Bank.events,
    perspectives: Bank.perspectives,
    options: {
      pollingInterval: Duration.millis(20),
      notifyHealthyPollingInterval: Duration.millis(20),
      maxStreamsPerBatch: options.maxStreamsPerBatch,
      perspectiveBatchSize: options.perspectiveBatchSize,
      maxConcurrentDrainConsumers: options.maxConcurrentDrainConsumers,
      drainLoopRefetchMinBatch: options.drainLoopRefetchMinBatch,
      drainLoopMaxIterations: options.drainLoopMaxIterations,
      drainBatcher: { slidingWindow: Duration.millis(1), maxWait: Duration.millis(10), maxSize: options.drainBatcherMaxSize }
    }
  }).pipe(
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "order-property" })),
    Layer.provideMerge(PgTestDatabase.layer({ schema: "ordering", maxConnections: 12 })),
    Layer.orDie
  )

const run = (
  options: typeof optionsArbitrary extends fc.Arbitrary<infer O> ? O : never,
  schedule: ReadonlyArray<ReadonlyArray<{ stream: number; size: number }>>
) =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const worker = yield* PerspectiveWorker.PerspectiveWorker
    const client = yield* PgClient.PgClient
    const streams = Array.from({ length: 6 }, () => EventId.unsafeMake())
    let amount = 0
    yield* Effect.forEach(
      schedule,
      (bursts) =>
        Effect.forEach(
          bursts,
          ({ stream, size }) => {
            const id = streams[stream]!
            return store.append(
              id,
              Array.from({ length: size }, () => Bank.Deposited.make({ accountId: id, amount: ++amount }))
            )
          },
          { discard: true }
        ),
      { concurrency: "unbounded", discard: true }
    )
    yield* worker.awaitIdle
    const stored = yield* client.query<{ stream_id: string; amounts: Array<number> }>(
      `SELECT stream_id::text, array_agg((payload->>'amount')::int ORDER BY event_id) AS amounts
       FROM wh_events WHERE stream_id = ANY($1::uuid[]) GROUP BY stream_id`,
      [streams]
    )
    const applied = yield* PerspectiveStore.getMany(Bank.activity, streams)
    for (const { stream_id, amounts } of stored) expect(applied.get(stream_id)?.order, stream_id).toEqual(amounts)
    expect(stored.reduce((n, s) => n + s.amounts.length, 0)).toBe(amount)
    const [pending] = yield* client.query<{ n: number }>("SELECT count(*)::int AS n FROM wh_perspective_events")
    expect(pending!.n).toBe(0)
  }).pipe(Effect.provide(pipeline(options)), Effect.scoped)

it("applies every stream's events once, in order, under random worker options and concurrent appenders", async () => {
  await fc.assert(
    fc.asyncProperty(optionsArbitrary, scheduleArbitrary, (options, schedule) => Effect.runPromise(run(options, schedule))),
    { numRuns: 12 }
  )
}, 240_000)
