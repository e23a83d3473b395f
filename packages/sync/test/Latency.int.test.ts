import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Latency from "./fixtures/latency.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

// Measures, in one process, how long after the completion transaction committed (its `reportCompletions`
// returned) a waiting caller resumes. The worker's hook signals the tracker; NOTIFY reaches the database port
// too, whichever is first wakes the waiter. Figures are printed, never asserted.
const commits = new Latency.Commits()

describe("resume latency in one process", () => {
  it.live(
    "append -> wait: the waiter resumes right after the commit (prints p50/p99)",
    () =>
      Effect.gen(function* () {
        const store = yield* TrackedEventStore.make
        const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
        const streams = Array.from({ length: 20 }, () => uuid())
        const resumed: Array<{ id: string; at: number }> = []
        for (let i = 0; i < 300; i++) {
          const s = streams[i % streams.length]!
          yield* ScopedEventTracker.withScope(
            Effect.gen(function* () {
              const [id] = (yield* store.append(s, [Orders.placed(s, 1)])).events.map((e) => e.eventId)
              const result = yield* awaiter.waitForEvents("order_summary", [id!], { timeout: "10 seconds" })
              resumed.push({ id: id!, at: Latency.now() })
              // NoPendingEvents: the worker had applied the event before the wait's first check (also fresh).
              expect(["Synced", "NoPendingEvents"]).toContain(result._tag)
            })
          )
        }
        const latencies = yield* Effect.forEach(resumed, (r) => Effect.map(commits.at(r.id), (at) => r.at - at))
        expect(latencies).toHaveLength(300)
        console.log(Latency.summary("in-process (commit -> waiter resumes)", latencies))
      }).pipe(
        Effect.scoped,
        Effect.provide(Pipeline.layer({ onCommit: (ids, at) => ids.forEach((id) => commits.set(id, at)) }) as Layer.Layer<any>)
      ),
    120_000
  )
})
