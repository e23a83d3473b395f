import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as WorkCoordinator from "../src/WorkCoordinator.js"

const work = (workId: string, streamId: string) => ({
  workId,
  streamId,
  perspectiveName: "orders",
  eventId: `e-${workId}`,
  eventType: "OrderPlaced",
  payload: {}
})

describe("WorkCoordinator.layerMemory renewStreamLeases", () => {
  it.effect("extends the holder's live stream leases and never takes back a lost one", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([work("w1", "s1"), work("w2", "s2")])
      yield* coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 30 })
      yield* TestClock.adjust(Duration.seconds(20))
      expect(yield* coordinator.renewStreamLeases({ instanceId: "A", streamIds: ["s1"], leaseSeconds: 30 })).toEqual(["s1"])
      expect(yield* coordinator.renewStreamLeases({ instanceId: "B", streamIds: ["s1", "s2"], leaseSeconds: 30 })).toEqual([])
      yield* TestClock.adjust(Duration.seconds(15)) // s2's lease expired, s1's was renewed
      expect(yield* coordinator.claimWork({ instanceId: "B", maxStreams: 10, leaseSeconds: 30 })).toEqual(["s2"])
      expect(yield* coordinator.renewStreamLeases({ instanceId: "A", streamIds: ["s1", "s2"], leaseSeconds: 30 })).toEqual(["s1"])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )
})
