import { describe, expect, it } from "@effect/vitest"
import {
  EventDefinition,
  EventRegistry,
  InstanceProvider,
  Perspective,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator
} from "@whizbang/core"
import { Duration, Effect, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"

const Opened = EventDefinition.make("Opened", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })

const work = (workId: string, streamId: string, perspectiveName: string) => ({
  workId,
  streamId,
  perspectiveName,
  eventId: `0000-${workId}`,
  eventType: "Opened",
  payload: { id: streamId }
})

describe("PerspectiveWorker idleness", () => {
  it.effect(
    "a stream that cannot move is held back: claims stay about one per poll, the rewinder is asked once per hold, the worker is idle; other perspectives' work is never touched",
    () => {
      const counts = { claims: 0, claimedStreams: 0, rewinds: 0, fetchedElsewhere: 0 }
      // The flagged stream's cursor waits for a rewind that is never due (a debounce that does not end).
      const coordinator = Layer.effect(
        WorkCoordinator.WorkCoordinator,
        Effect.map(
          Effect.service(WorkCoordinator.WorkCoordinator),
          (inner): WorkCoordinator.Shape => ({
            ...inner,
            claimWork: (request) =>
              Effect.tap(inner.claimWork(request), (ids) =>
                Effect.sync(() => {
                  counts.claims++
                  counts.claimedStreams += ids.length
                })
              ),
            fetchPendingEvents: (request) =>
              Effect.map(inner.fetchPendingEvents(request), (rows) => {
                counts.fetchedElsewhere += rows.filter((r) => r.perspectiveName !== "accounts").length
                return rows.map((r) => (r.streamId === "flagged" ? { ...r, rewindRequired: true } : r))
              })
          })
        )
      ).pipe(Layer.provideMerge(WorkCoordinator.layerMemory))
      const rewinder = Layer.succeed(PerspectiveRewinder.PerspectiveRewinder, {
        rewindFlagged: (targets) =>
          Effect.sync(() => {
            counts.rewinds++
            return targets.map((t) => ({ ...t, outcome: "notDue" as const, replayedEventIds: [] }))
          })
      })
      return Effect.gen(function* () {
        const events = EventRegistry.make([Opened])
        const accounts = Perspective.make({
          name: "accounts",
          events: [Opened],
          model: Schema.Struct({ n: Schema.Number }),
          initial: { n: 0 },
          apply: { Opened: (m) => ({ n: m.n + 1 }) }
        })
        const memory = yield* WorkCoordinator.Memory
        yield* memory.enqueue([work("1", "flagged", "accounts"), work("2", "elsewhere", "reports")])
        const worker = yield* PerspectiveWorker.make({
          events,
          perspectives: [accounts],
          options: {
            pollingInterval: Duration.millis(100),
            notifyHealthyPollingInterval: Duration.millis(100),
            maxPerspectiveEventAttempts: 1,
            drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(10), maxSize: 100 }
          }
        })
        // 30 simulated seconds, in 10 ms steps.
        for (let step = 0; step < 3000; step++) yield* TestClock.adjust(Duration.millis(10))
        const polls = 30_000 / 100
        // One claim per poll, plus one right after each (held-back) re-try of the flagged stream.
        expect(counts.claims).toBeGreaterThanOrEqual(polls * 0.9)
        expect(counts.claims).toBeLessThanOrEqual(polls * 1.5)
        // The flagged stream is re-tried once per hold (idleThresholdPolls + 1 = 3 polls), not at every wake-up.
        expect(counts.rewinds).toBeGreaterThanOrEqual(30_000 / 300 - 10)
        expect(counts.rewinds).toBeLessThanOrEqual(30_000 / 300 + 2)
        expect(counts.claimedStreams).toBe(counts.rewinds)
        expect(yield* worker.isIdle).toBe(true)
        // The perspective this worker does not run: never fetched, never failed, still waiting.
        expect(counts.fetchedElsewhere).toBe(0)
        expect((yield* worker.stats).failures).toBe(0)
        expect((yield* memory.workRows).map((r) => [r.streamId, r.attempts])).toEqual([
          ["elsewhere", 0],
          ["flagged", 0]
        ])
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinder))
      )
    }
  )
})
