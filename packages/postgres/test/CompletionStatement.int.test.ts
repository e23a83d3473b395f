import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStatus, PerspectiveStore, WorkCoordinator } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Effect, Exit, Layer, Stream } from "effect"
import * as Bank from "./fixtures/bank.js"
import { explained } from "./fixtures/explained.js"
import { recording } from "./fixtures/recording.js"

const Completed = PerspectiveStatus.PerspectiveStatus.Completed
const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }

/** Runs a scenario on the pipeline's ports (no worker) over a fresh database. */
const onPorts = <A, E, R>(scenario: Effect.Effect<A, E, R>) =>
  scenario.pipe(
    Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
    Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
    Effect.scoped
  )

/** Each pending row's completion as a cycle reports it: one work row, its event last, a row for either perspective. */
const completionsOf = (pending: ReadonlyArray<WorkCoordinator.PendingEvent>) =>
  pending.map((p) => ({
    workIds: [p.workId],
    streamId: p.streamId,
    perspectiveName: p.perspectiveName,
    lastEventId: p.eventId,
    status: Completed,
    cursorAtFetch: p.cursorLastEventId,
    model: {
      data: { balance: 5, audits: 0, count: 1, lastEventId: p.eventId, order: [] },
      action: "none" as const,
      metadata: {},
      scope: {},
      eventsApplied: 1
    }
  }))

// The completion commits model rows, cursors, work rows and the lease release in one statement (`wh_complete_work`):
// every part must still land, including a model row deleted by its perspective next to one upserted in the same
// batch, and a refusal must leave none of them.
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
      }).pipe(onPorts),
    60_000
  )

  it.live(
    "is one round trip (no BEGIN or COMMIT of its own), and a refusal after the writes rolls every part back",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const models = yield* PerspectiveStore.PerspectiveStore
        const client = yield* PgClient.PgClient
        /** Claims and fetches one stream's pending work; its completions as a cycle would report them. */
        const cycle = (stream: string) =>
          Effect.gen(function* () {
            const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30 })
            expect(claimed).toEqual([stream])
            const pending = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed })
            return completionsOf(pending)
          })
        const first = EventId.unsafeMake()
        yield* store.append(first, [Bank.Deposited.make({ accountId: first, amount: 5 })])
        const done = yield* cycle(first)
        const { sent } = yield* recording(coordinator.reportCompletions(done))
        // The recording sees every connection of the process: the append's wake-up of the workers (`NOTIFY wh_work`,
        // sent after its commit by a detached fiber) and the claim's look at the queue's statistics (also detached)
        // may go out during the completion on a busy machine.
        const ofTheCompletion = sent.filter(
          (t) => !t.startsWith("SELECT pg_notify('wh_work'") && !t.includes("pg_stat_user_tables") && !t.startsWith("ANALYZE")
        )
        expect(ofTheCompletion.map((t) => t.trim().slice(0, 23))).toEqual(["SELECT wh_complete_work"])
        expect((yield* models.getMany("balance", [first])).get(first)?.version).toBe(1)

        // A rewind deleted one of the work rows after the fetch: the completion is refused after it wrote the models
        // and cursors, and none of it stays, the lease included.
        const second = EventId.unsafeMake()
        yield* store.append(second, [Bank.Deposited.make({ accountId: second, amount: 5 })])
        const refused = yield* cycle(second)
        yield* client.query("delete from wh_perspective_events where work_id = $1", [refused[0]!.workIds[0]])
        const error = yield* Effect.flip(coordinator.reportCompletions(refused))
        expect(error).toBeInstanceOf(WorkCoordinator.WorkCoordinatorError)
        expect(error.reason._tag).toBe("Refused")
        expect(error.detail).toMatch(/^1 work row\(s\) were already covered by a rewind or bootstrap/)
        expect((yield* models.getMany("balance", [second])).size).toBe(0)
        expect((yield* models.getMany("activity", [second])).size).toBe(0)
        const [left] = yield* client.query<{ cursors: number; work: number; leases: number }>(
          `select (select count(*) from wh_perspective_cursors where stream_id = $1)::int as cursors,
                  (select count(*) from wh_perspective_events where stream_id = $1)::int as work,
                  (select count(*) from wh_active_streams where stream_id = $1)::int as leases`,
          [second]
        )
        expect(left).toEqual({ cursors: 0, work: 1, leases: 1 })

        // A lost lease is refused before anything is written.
        yield* client.query("update wh_active_streams set lease_expiry = now() - interval '1 second' where stream_id = $1", [second])
        const lost = yield* Effect.flip(coordinator.reportCompletions(refused.slice(1)))
        expect(lost.reason._tag).toBe("Refused")
        expect(lost.detail).toBe(`lease lost on 1 stream(s) (${second}); their work is redone by the new owner`)
      }).pipe(onPorts),
    60_000
  )

  it.live(
    "compares no pair with every other: a completion of 300 streams and 600 pairs, some with cursors and some without",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const models = yield* PerspectiveStore.PerspectiveStore
        const streams = Array.from({ length: 300 }, () => EventId.unsafeMake())
        /** Appends one deposit to each stream, then claims, fetches and completes all of their work in ONE completion. */
        const round = (ids: ReadonlyArray<string>) =>
          Effect.gen(function* () {
            for (const id of ids) yield* store.append(id, [Bank.Deposited.make({ accountId: id, amount: 1 })])
            const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: ids.length, leaseSeconds: 30 })
            expect(claimed).toHaveLength(ids.length)
            const pending = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed })
            expect(pending).toHaveLength(2 * ids.length)
            return completionsOf(pending)
          })
        // The first 100 streams get their cursors and rows; then all 300 are completed together.
        yield* coordinator.reportCompletions(yield* round(streams.slice(0, 100)))
        const completions = yield* round(streams)
        const { plans, setupErrors } = yield* explained("SELECT wh_complete_work", coordinator.reportCompletions(completions))
        expect(setupErrors).toEqual([])
        // The function's own plan and one per statement it ran (fences, writes, cursors, work rows, release, notify, snapshots).
        expect(plans.length).toBeGreaterThan(8)
        // A join of two sets of pairs planned as a nested loop filters pairs x pairs rows (359,400 before
        // migration 0012); by key, a join filters none.
        const filtered = plans.flatMap((plan) => [...plan.matchAll(/Rows Removed by Join Filter: (\d+)/g)].map((m) => Number(m[1])))
        expect(filtered.filter((n) => n > completions.length)).toEqual([])
        const written = yield* models.getMany("balance", streams)
        expect([...written.values()].map((r) => r.version).sort()).toEqual([
          ...Array.from({ length: 200 }, () => 1),
          ...Array.from({ length: 100 }, () => 2)
        ])
      }).pipe(onPorts),
    60_000
  )

  it.live(
    "notifies wh_processed with the applied events per perspective after the schema, in chunks that fit a payload",
    () =>
      Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const client = yield* PgClient.PgClient
        const details: Array<string | undefined> = []
        let expected = 0
        let done = Deferred.makeUnsafe<void>()
        // The first element says the LISTEN is in place; each later one is a notification.
        const connected = Deferred.makeUnsafe<void>()
        yield* Effect.forkScoped(
          Stream.runForEach(client.listen("wh_processed"), (detail) =>
            Effect.sync(() => {
              if (!Deferred.isDoneUnsafe(connected)) return void Deferred.doneUnsafe(connected, Exit.void)
              details.push(detail)
              if (details.length >= expected) Deferred.doneUnsafe(done, Exit.void)
            })
          )
        )
        yield* Deferred.await(connected)
        /** Claims, fetches and completes every pending row of the stream in one completion; returns its notifications' details. */
        const completeAll = (stream: string, notifications: number) =>
          Effect.gen(function* () {
            details.length = 0
            expected = notifications
            done = Deferred.makeUnsafe()
            const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30 })
            const pending = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed })
            const byPerspective = new Map<string, Array<(typeof pending)[number]>>()
            for (const p of pending) byPerspective.set(p.perspectiveName, [...(byPerspective.get(p.perspectiveName) ?? []), p])
            yield* coordinator.reportCompletions(
              [...byPerspective].map(([perspectiveName, rows]) => ({
                workIds: rows.map((r) => r.workId),
                streamId: stream,
                perspectiveName,
                lastEventId: rows.at(-1)!.eventId,
                status: Completed,
                cursorAtFetch: rows[0]!.cursorLastEventId
              }))
            )
            yield* Deferred.await(done)
            return { details: [...details], pending }
          })
        const small = EventId.unsafeMake()
        const [event] = (yield* store.append(small, [Bank.Deposited.make({ accountId: small, amount: 5 })])).events
        const one = yield* completeAll(small, 2)
        expect(one.details.sort()).toEqual([`activity\t${event!.eventId}`, `balance\t${event!.eventId}`])

        // 2 perspectives x 200 events: 2 x ceil(200 / 180) = 4 notifications, each under the 8,000-byte payload limit.
        const large = EventId.unsafeMake()
        const appended = yield* store.append(
          large,
          Array.from({ length: 200 }, (_, i) => Bank.Deposited.make({ accountId: large, amount: i }))
        )
        const big = yield* completeAll(large, 4)
        expect(big.pending).toHaveLength(400)
        expect(big.details).toHaveLength(4)
        for (const d of big.details) expect(Buffer.byteLength(`bank\n${d}`)).toBeLessThan(8000)
        const named = (perspective: string) =>
          big.details.filter((d) => d!.startsWith(`${perspective}\t`)).flatMap((d) => d!.split("\t")[1]!.split(","))
        const ids = appended.events.map((e) => e.eventId).sort()
        expect(named("balance").sort()).toEqual(ids)
        expect(named("activity").sort()).toEqual(ids)
        expect(yield* client.query("select 1 from wh_perspective_events")).toEqual([])
      }).pipe(
        // The listener's scope closes before the database is dropped.
        Effect.scoped,
        onPorts
      ),
    60_000
  )
})
