import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as InstanceProvider from "../src/InstanceProvider.js"
import * as NotificationListener from "../src/NotificationListener.js"
import * as PerspectiveStore from "../src/PerspectiveStore.js"
import { PerspectiveStatus } from "../src/PerspectiveStatus.js"
import * as WorkCoordinator from "../src/WorkCoordinator.js"

const work = (workId: string, streamId: string, eventId: string, perspectiveName = "orders") => ({
  workId,
  streamId,
  perspectiveName,
  eventId,
  eventType: "OrderPlaced",
  payload: { n: eventId }
})

describe("WorkCoordinator.layerMemory", () => {
  it.effect("claims streams oldest work first, leases them, and keeps other instances out", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([work("w1", "s2", "e2"), work("w2", "s1", "e1"), work("w3", "s3", "e3")])
      expect(yield* coordinator.claimWork({ instanceId: "A", maxStreams: 2, leaseSeconds: 30 })).toEqual(["s1", "s2"])
      expect(yield* coordinator.claimWork({ instanceId: "B", maxStreams: 10, leaseSeconds: 30 })).toEqual(["s3"])
      yield* TestClock.adjust(Duration.seconds(31)) // A's leases expired: B may take over
      expect(yield* coordinator.claimWork({ instanceId: "B", maxStreams: 10, leaseSeconds: 30 })).toEqual(["s1", "s2", "s3"])
      expect(yield* coordinator.fetchPendingEvents({ instanceId: "A", streamIds: ["s1", "s2"] })).toEqual([])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("fetches the instance's leased events for many streams in stream, perspective, event order", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([work("w3", "s1", "e3"), work("w1", "s1", "e1"), work("w2", "s2", "e2"), work("w4", "s1", "e4", "list")])
      yield* coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 30 })
      const events = yield* coordinator.fetchPendingEvents({ instanceId: "A", streamIds: ["s1", "s2"] })
      expect(events.map((e) => e.workId)).toEqual(["w4", "w1", "w3", "w2"])
      const limited = yield* coordinator.fetchPendingEvents({ instanceId: "A", streamIds: ["s1"], limit: 1 })
      expect(limited.map((e) => e.workId)).toEqual(["w4", "w1"])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("completions delete exactly the applied rows and advance the cursor; failures count attempts", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([work("w1", "s1", "e1"), work("w2", "s1", "e2"), work("w3", "s1", "e3")])
      yield* coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 30 })
      yield* coordinator.reportCompletions([
        { workIds: ["w1"], streamId: "s1", perspectiveName: "orders", lastEventId: "e1", status: PerspectiveStatus.Completed }
      ])
      yield* coordinator.reportFailures([{ workId: "w2", streamId: "s1", perspectiveName: "orders", error: "boom" }])
      const rows = yield* memory.workRows
      expect(rows.map((r) => r.workId)).toEqual(["w2", "w3"])
      expect(rows[0]).toMatchObject({ attempts: 1, error: "boom" })
      expect(rows[0]?.instanceId).toBeUndefined()
      expect(yield* memory.cursors).toEqual([
        { streamId: "s1", perspectiveName: "orders", lastEventId: "e1", status: PerspectiveStatus.Failed, error: "boom" }
      ])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("renews only the holder's live leases", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([work("w1", "s1", "e1")])
      yield* coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 30 })
      expect(yield* coordinator.renewLeases({ instanceId: "B", workIds: ["w1"], leaseSeconds: 30 })).toBe(0)
      yield* TestClock.adjust(Duration.seconds(20))
      expect(yield* coordinator.renewLeases({ instanceId: "A", workIds: ["w1", "nope"], leaseSeconds: 30 })).toBe(1)
      yield* TestClock.adjust(Duration.seconds(20)) // 40 s after the claim, 20 s after the renewal
      expect(yield* coordinator.claimWork({ instanceId: "B", maxStreams: 10, leaseSeconds: 30 })).toEqual([])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )
})

layer(PerspectiveStore.layerMemory)("PerspectiveStore.layerMemory", (it) => {
  it.effect("writes a batch of rows, versions them, deletes on delete/purge, and queries by field", () =>
    Effect.gen(function* () {
      const store = yield* PerspectiveStore.PerspectiveStore
      yield* store.writeBatch([
        { perspectiveName: "orders", streamId: "s2", data: { status: "open", total: 2 }, action: "none" },
        { perspectiveName: "orders", streamId: "s1", data: { status: "open", total: 1 }, action: "none" },
        { perspectiveName: "orders", streamId: "s3", data: { status: "closed", total: 3 }, action: "none" }
      ])
      yield* TestClock.adjust(Duration.seconds(1))
      yield* store.writeBatch([
        { perspectiveName: "orders", streamId: "s1", data: { status: "open", total: 10 }, action: "none" },
        { perspectiveName: "orders", streamId: "s3", data: null, action: "purge" }
      ])
      const s1 = Option.getOrThrow(yield* store.getById("orders", "s1"))
      expect(s1).toMatchObject({ id: "s1", data: { status: "open", total: 10 }, version: 2, createdAt: 0, updatedAt: 1000 })
      expect(Option.isNone(yield* store.getById("orders", "s3"))).toBe(true)
      expect(Option.isNone(yield* store.getById("other", "s1"))).toBe(true)
      const open = yield* store.query("orders", { where: { status: "open" } })
      expect(open.map((r) => r.id)).toEqual(["s1", "s2"])
      expect((yield* store.query("orders", { limit: 1, offset: 1 })).map((r) => r.id)).toEqual(["s2"])
    })
  )
})

describe("NotificationListener.layerMemory", () => {
  it.effect("subscribers receive wake-ups published after they subscribed", () =>
    Effect.gen(function* () {
      const listener = yield* NotificationListener.NotificationListener
      const memory = yield* NotificationListener.Memory
      const fiber = yield* Effect.forkChild(Stream.runCollect(Stream.take(listener.wakeUps, 2)))
      yield* Effect.yieldNow
      yield* memory.notify()
      yield* memory.notify("outbox")
      expect(yield* Fiber.join(fiber)).toEqual([{ category: "perspective" }, { category: "outbox" }])
    }).pipe(Effect.provide(NotificationListener.layerMemory))
  )
})

describe("InstanceProvider", () => {
  it.effect("layerMemory gives each layer build its own instance id unless one is given", () =>
    Effect.gen(function* () {
      const get = Effect.gen(function* () {
        return yield* InstanceProvider.InstanceProvider
      })
      const a = yield* Effect.provide(get, InstanceProvider.layerMemory({ serviceName: "billing" }))
      const b = yield* Effect.provide(get, InstanceProvider.layerMemory())
      expect(a.serviceName).toBe("billing")
      expect(a.instanceId).toMatch(/^[0-9a-f-]{36}$/)
      expect(a.instanceId).not.toBe(b.instanceId)
      const fixed = yield* Effect.provide(
        get,
        Layer.merge(InstanceProvider.layer({ instanceId: "i-1", serviceName: "s", hostName: "h", processId: 7 }), Layer.empty)
      )
      expect(fixed).toEqual({ instanceId: "i-1", serviceName: "s", hostName: "h", processId: 7 })
    })
  )
})
