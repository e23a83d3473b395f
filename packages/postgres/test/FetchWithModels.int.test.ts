import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStore, WorkCoordinator } from "@whizbang/core"
import { PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Bank from "./fixtures/bank.js"

const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }

// The fetch loads each pair's stored model in its own round trip when asked (`withModels`), and sends each event's
// columns once however many perspectives handle it: every row must still carry its event and its pair's model.
describe("fetchPendingEvents withModels", () => {
  it.live(
    "carries each pair's stored row (or null without one) on every row of the pair, and every row's event",
    () =>
      Effect.gen(function* () {
        const withRow = EventId.unsafeMake()
        const withoutRow = EventId.unsafeMake()
        const store = yield* EventStore.EventStore
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const models = yield* PerspectiveStore.PerspectiveStore
        yield* store.append(withRow, [
          Bank.Deposited.make({ accountId: withRow, amount: 5 }),
          Bank.Deposited.make({ accountId: withRow, amount: 7 })
        ])
        yield* store.append(withoutRow, [Bank.Deposited.make({ accountId: withoutRow, amount: 3 })])
        yield* models.writeBatch([{ perspectiveName: "balance", streamId: withRow, data: { balance: 100, audits: 2 }, action: "none" }])
        const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30 })
        expect([...claimed].sort()).toEqual([withRow, withoutRow].sort())
        const names = ["balance", "activity"]
        const pending = yield* coordinator.fetchPendingEvents({
          instanceId: "",
          streamIds: claimed,
          perspectiveNames: names,
          withModels: true
        })
        // Two events on one stream, one on the other, each for both perspectives.
        expect(pending).toHaveLength(6)
        for (const row of pending) {
          expect(row.eventType).toBe("Deposited")
          expect((row.payload as { accountId: string }).accountId).toBe(row.streamId)
          expect(row.streamVersion).toBeGreaterThan(0)
          const expected = row.streamId === withRow && row.perspectiveName === "balance" ? { data: { balance: 100, audits: 2 } } : null
          expect(row.storedModel).toEqual(expected)
        }
        // The same event's payload is shared by its rows (sent once).
        const byEvent = new Map<string, Array<WorkCoordinator.PendingEvent>>()
        for (const row of pending) byEvent.set(row.eventId, [...(byEvent.get(row.eventId) ?? []), row])
        for (const rows of byEvent.values()) {
          expect(rows).toHaveLength(2)
          expect(rows[0]!.payload).toEqual(rows[1]!.payload)
        }
        // Without the flag nothing is loaded.
        const plain = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed, perspectiveNames: names })
        expect(plain.map((r) => r.storedModel)).toEqual(plain.map(() => undefined))
        expect(plain.map((r) => [r.workId, r.eventType, r.payload])).toEqual(pending.map((r) => [r.workId, r.eventType, r.payload]))
      }).pipe(
        Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
        Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
        Effect.scoped
      ),
    60_000
  )
})
