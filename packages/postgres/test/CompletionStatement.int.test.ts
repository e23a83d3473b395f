import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStatus, PerspectiveStore, WorkCoordinator } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Bank from "./fixtures/bank.js"

const Completed = PerspectiveStatus.PerspectiveStatus.Completed
const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }

// The completion commits model rows, cursors, work rows and the lease release in one statement: every part must
// still land, including a model row deleted by its perspective next to one upserted in the same batch.
describe("the completion statement", () => {
  it.live(
    "upserts one perspective's row and deletes the other's, advances both cursors, removes the work, releases the stream",
    () =>
      Effect.gen(function* () {
        const stream = EventId.unsafeMake()
        const store = yield* EventStore.EventStore
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const models = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        yield* store.append(stream, [Bank.Deposited.make({ accountId: stream, amount: 5 })])
        yield* models.writeBatch([
          { perspectiveName: "activity", streamId: stream, data: { count: 9, lastEventId: "x", order: [] }, action: "none" }
        ])
        const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30 })
        expect(claimed).toEqual([stream])
        const pending = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed })
        expect(pending.map((p) => p.perspectiveName).sort()).toEqual(["activity", "balance"])
        yield* coordinator.reportCompletions(
          pending.map((p) => ({
            workIds: [p.workId],
            streamId: stream,
            perspectiveName: p.perspectiveName,
            lastEventId: p.eventId,
            status: Completed,
            cursorAtFetch: p.cursorLastEventId,
            model:
              p.perspectiveName === "balance"
                ? { data: { balance: 5, audits: 0 }, action: "none" as const, metadata: {}, scope: {}, eventsApplied: 1 }
                : { data: null, action: "delete" as const, metadata: {}, scope: {}, eventsApplied: 1 }
          }))
        )
        const balance = yield* models.getMany("balance", [stream])
        const activity = yield* models.getMany("activity", [stream])
        expect([balance.get(stream)?.data, balance.get(stream)?.version]).toEqual([{ balance: 5, audits: 0 }, 1])
        expect(activity.has(stream)).toBe(false)
        const cursors = yield* client.query<{ perspective_name: string; last_event_id: string; status: number }>(
          "select perspective_name, last_event_id, status from wh_perspective_cursors where stream_id = $1 order by perspective_name",
          [stream]
        )
        expect(cursors).toEqual([
          { perspective_name: "activity", last_event_id: pending[0]!.eventId, status: Completed },
          { perspective_name: "balance", last_event_id: pending[0]!.eventId, status: Completed }
        ])
        const [left] = yield* client.query<{ work: number; leases: number }>(
          "select (select count(*) from wh_perspective_events)::int as work, (select count(*) from wh_active_streams)::int as leases"
        )
        expect(left).toEqual({ work: 0, leases: 0 })
      }).pipe(
        Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
        Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
        Effect.scoped
      ),
    60_000
  )
})
