import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Latency from "./fixtures/latency.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

// Measures, in one process, how long after the completion transaction commits a waiting caller resumes. The
// commit time is taken in the worker's post-commit hook (it runs right after COMMIT returned, before the tracker
// is signalled). Figures are printed, never asserted.
const committed = new Map<string, number>()
const hooks = {
  onPerspectiveEventProcessed: (group: { readonly eventIds: ReadonlyArray<string> }) =>
    Effect.sync(() => {
      const at = Latency.now()
      for (const id of group.eventIds) committed.set(id, at)
    })
}

describe("resume latency in one process", () => {
  it.live("append -> wait: the waiter resumes right after the commit (prints p50/p99)", () =>
    Effect.gen(function*() {
      const store = yield* TrackedEventStore.make
      const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
      const streams = Array.from({ length: 20 }, () => uuid())
      const latencies: Array<number> = []
      for (let i = 0; i < 300; i++) {
        const s = streams[i % streams.length]!
        const { id, result, at } = yield* ScopedEventTracker.withScope(Effect.gen(function*() {
          const [id] = (yield* store.append(s, [Orders.placed(s, 1)])).events.map((e) => e.eventId)
          const result = yield* awaiter.waitForEvents("order_summary", [id!], { timeout: "10 seconds" })
          return { id: id!, result, at: Latency.now() }
        }))
        expect(result._tag).toBe("Synced")
        latencies.push(at - committed.get(id)!)
      }
      expect(latencies.every(Number.isFinite)).toBe(true)
      console.log(Latency.summary("in-process (commit -> waiter resumes, tracker fast path)", latencies))
    }).pipe(Effect.scoped, Effect.provide(Pipeline.layer({ hooks }) as Layer.Layer<any>)), 120_000)
})
