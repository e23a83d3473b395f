// A claim that fetches what it claimed in the same statement: the same streams and events as a claim followed by a
// fetch, and the worker's cycle right after a claim sends no fetch of its own.
import { describe, expect, it } from "@effect/vitest"
import {
  EventId,
  EventStore,
  InstanceProvider,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Bank from "./fixtures/bank.js"
import { explained } from "./fixtures/explained.js"
import { recording } from "./fixtures/recording.js"

const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }
const names = Bank.perspectives.map((p) => p.name)
/** The Postgres ports on a fresh `bank` schema, as every test here runs them. */
const withPorts = <A, E>(
  effect: Effect.Effect<
    A,
    E,
    WorkCoordinator.WorkCoordinator | EventStore.EventStore | PerspectiveStore.PerspectiveStore | PgClient.PgClient
  >
) =>
  effect.pipe(
    Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
    Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
    Effect.scoped
  )

const fetchOptions = { limit: 100, backgroundLimit: 2_000, perspectiveNames: names, withModels: true }

/** `streams` new streams of `perStream` stored events each, every event pending for every perspective. */
const loadPending = (client: PgClient.Shape, streams: number, perStream: number) =>
  Effect.andThen(
    client.query(
      `INSERT INTO wh_events (event_id, stream_id, stream_version, event_type, payload)
       SELECT gen_random_uuid(), s.id, v, 'Deposited', jsonb_build_object('accountId', s.id, 'amount', v)
       FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $1::int)) s, generate_series(1, $2::int) v`,
      [streams, perStream]
    ),
    client.query(
      `INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
       SELECT gen_random_uuid(), e.stream_id, p.name, e.event_id, 0 FROM wh_events e, unnest($1::text[]) AS p(name)`,
      [names]
    )
  )

describe("claim and fetch in one statement", () => {
  it.live("returns the streams and events a claim and then a fetch return, models included, excluded streams left alone", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const models = yield* PerspectiveStore.PerspectiveStore
      const client = yield* PgClient.PgClient
      const streams = Array.from({ length: 3 }, () => EventId.unsafeMake())
      for (const [i, id] of streams.entries()) {
        yield* store.append(
          id,
          Array.from({ length: i + 1 }, (_, k) => Bank.Deposited.make({ accountId: id, amount: k + 1 }))
        )
      }
      yield* models.writeBatch([{ perspectiveName: "balance", streamId: streams[1]!, data: { balance: 7, audits: 0 }, action: "none" }])
      const request = { instanceId: "", maxStreams: 10, leaseSeconds: 30, perspectiveNames: names, exclude: [streams[2]!] }

      const together = yield* coordinator.claimAndFetch!({ ...request, ...fetchOptions })
      yield* client.query("DELETE FROM wh_active_streams")
      const claimed = yield* coordinator.claimWork(request)
      const fetched = yield* coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed, ...fetchOptions })

      expect([...together.streams].sort()).toEqual([streams[0]!, streams[1]!].sort())
      expect(together.streams).toEqual(claimed)
      const order = (rows: ReadonlyArray<WorkCoordinator.PendingEvent>) =>
        [...rows].sort((a, b) =>
          `${a.streamId}${a.perspectiveName}${a.eventId}`.localeCompare(`${b.streamId}${b.perspectiveName}${b.eventId}`)
        )
      expect(order(together.pending)).toEqual(order(fetched))
      expect(together.pending).toHaveLength(2 * (1 + 2))
      expect(together.pending.find((r) => r.streamId === streams[1] && r.perspectiveName === "balance")?.storedModel).toEqual({
        data: { balance: 7, audits: 0 }
      })
      // Nothing left to claim: an empty claim, which also drops this instance's idle leases.
      yield* client.query("UPDATE wh_active_streams SET instance_id = NULL")
      yield* client.query("DELETE FROM wh_perspective_events WHERE stream_id <> $1", [streams[2]!])
      const none = yield* coordinator.claimAndFetch!({ ...request, ...fetchOptions })
      expect(none).toEqual({ streams: [], pending: [] })
    }).pipe(withPorts)
  )

  it.live("after a claim whose background streams were all held behind planned history, the next claims take live work only", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const client = yield* PgClient.PgClient
      // Three streams whose work is background (fires = false) and whose history is still planned: blocked.
      const held = Array.from({ length: 3 }, () => EventId.unsafeMake())
      for (const id of held) yield* store.append(id, [Bank.Deposited.make({ accountId: id, amount: 1 })])
      yield* client.query("UPDATE wh_perspective_events SET fires = false")
      yield* client.query(
        `INSERT INTO wh_perspective_backfill (perspective_name, stream_id, through_event_id)
         SELECT DISTINCT perspective_name, stream_id, event_id FROM wh_perspective_events`
      )
      const request = { instanceId: "", maxStreams: 10, leaseSeconds: 30, perspectiveNames: names, exclude: [] }
      const first = yield* coordinator.claimAndFetch!({ ...request, ...fetchOptions })
      expect([...first.streams].sort()).toEqual([...held].sort())
      // Nothing of them fetched: their pairs wait for the replay.
      expect(first.pending).toEqual([])
      // Their leases given up (as the worker's cycles would): the background tier rests, live work is still claimed.
      yield* client.query("DELETE FROM wh_active_streams")
      const live = EventId.unsafeMake()
      yield* store.append(live, [Bank.Deposited.make({ accountId: live, amount: 2 })])
      const second = yield* coordinator.claimAndFetch!({ ...request, ...fetchOptions })
      expect(second.streams).toEqual([live])
    }).pipe(withPorts)
  )

  it.live("a row of another shape than the fetch's (a column's type changed under it) is an UnexpectedRow naming the fetch", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const client = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      yield* store.append(id, [Bank.Deposited.make({ accountId: id, amount: 1 })])
      yield* client.query("ALTER TABLE wh_perspective_events ALTER COLUMN attempts TYPE text")
      const claimed = yield* coordinator.claimWork({ instanceId: "", maxStreams: 10, leaseSeconds: 30, perspectiveNames: names })
      expect(claimed).toEqual([id])
      const error = yield* Effect.flip(coordinator.fetchPendingEvents({ instanceId: "", streamIds: claimed, ...fetchOptions }))
      expect(error.reason).toMatchObject({ _tag: "UnexpectedRow", operation: "fetchPendingEvents.fetchPendingEvents" })
      expect(error.detail).toContain("attempts")
    }).pipe(withPorts)
  )

  it.live(
    "reads the work rows and events of the streams it claims, never a scan of the queue or of every event",
    () =>
      Effect.gen(function* () {
        const coordinator = yield* WorkCoordinator.WorkCoordinator
        const client = yield* PgClient.PgClient
        // 20,000 streams with 2 pending events each (one per perspective: 80,000 work rows), planned on fresh statistics,
        // of which a claim takes 300: a join of the claimed streams with the work rows, or of the late-arrival candidates
        // with the events, may be planned as a scan of the whole table (PostgreSQL 17 did, at this size).
        yield* loadPending(client, 20_000, 2)
        yield* client.query("ANALYZE wh_events; ANALYZE wh_perspective_events; ANALYZE wh_perspective_cursors")
        const request = { instanceId: "", maxStreams: 300, leaseSeconds: 30, perspectiveNames: names }
        const { result, plans, setupErrors } = yield* explained("WITH live", coordinator.claimAndFetch!({ ...request, ...fetchOptions }))
        expect(setupErrors).toEqual([])
        expect(result.streams).toHaveLength(300)
        expect(result.pending).toHaveLength(1_200)
        expect(plans.length).toBeGreaterThan(0)
        const scans = plans.flatMap((plan) => [...plan.matchAll(/Seq Scan on (wh_perspective_events|wh_events)\b/g)].map((m) => m[1]))
        expect(scans).toEqual([])
      }).pipe(withPorts),
    60_000
  )

  it.live("reads the cursors by key even while their table was never analysed (a new service's plan)", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const client = yield* PgClient.PgClient
      // The cursors table is empty and never analysed, as in a new service whose plans are cached per connection: a join
      // of the work rows with the cursors had been planned as a hash of the whole cursors table once per claimed stream
      // (a sequential scan with loops = 300), which cost 464-480 ms instead of 58-60 once 10,000 cursors existed. The
      // bench's shape (5,000 streams of 10 events each) is one where PostgreSQL 15 chose that plan.
      yield* loadPending(client, 5_000, 10)
      yield* client.query("ANALYZE wh_events; ANALYZE wh_perspective_events")
      const request = { instanceId: "", maxStreams: 300, leaseSeconds: 30, perspectiveNames: names }
      const { result, plans, setupErrors } = yield* explained("WITH live", coordinator.claimAndFetch!({ ...request, ...fetchOptions }))
      expect(setupErrors).toEqual([])
      expect(result.streams).toHaveLength(300)
      expect(plans.length).toBeGreaterThan(0)
      const repeatedScans = plans.flatMap((plan) =>
        [...plan.matchAll(/Seq Scan on wh_perspective_cursors\b[^\n]*loops=(\d+)/g)].map((m) => Number(m[1])).filter((loops) => loops > 1)
      )
      expect(repeatedScans).toEqual([])
    }).pipe(withPorts)
  )

  it.live("reads each claimed pair's cursor and backfill state once, however many work rows the pair has", () =>
    Effect.gen(function* () {
      const coordinator = yield* WorkCoordinator.WorkCoordinator
      const client = yield* PgClient.PgClient
      // A running service: every stream already has its cursors, and the tables are analysed (the backfill table
      // empty). The work rows used to be joined with the claimed streams' cursors inside the per-stream lookup,
      // which read all of them once per claimed stream (loops = 300 here), and the backfill test ran once per work row
      // (loops = 6,000): 70-75 ms for this claim on PostgreSQL 15 instead of 53 (bench/src/claimAndFetchPlan.ts).
      yield* loadPending(client, 600, 10)
      // Cursors below every pending event, so nothing is a late arrival.
      yield* client.query(
        `INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id)
         SELECT DISTINCT stream_id, perspective_name, '00000000-0000-0000-0000-000000000000'::uuid FROM wh_perspective_events`
      )
      yield* client.query(
        "ANALYZE wh_events; ANALYZE wh_perspective_events; ANALYZE wh_perspective_cursors; ANALYZE wh_perspective_backfill"
      )
      const request = { instanceId: "", maxStreams: 300, leaseSeconds: 30, perspectiveNames: names }
      const { result, plans, setupErrors } = yield* explained("WITH live", coordinator.claimAndFetch!({ ...request, ...fetchOptions }))
      expect(setupErrors).toEqual([])
      expect(result.streams).toHaveLength(300)
      expect(result.pending).toHaveLength(300 * 10 * names.length)
      expect(plans.length).toBeGreaterThan(0)
      const loopsOf = (pattern: RegExp) => plans.flatMap((plan) => [...plan.matchAll(pattern)].map((m) => Number(m[1])))
      expect(loopsOf(/CTE Scan on cursors\b[^\n]*loops=(\d+)/g).filter((loops) => loops > 1)).toEqual([])
      const pairs = 300 * names.length
      expect(loopsOf(/Scan on wh_perspective_backfill\b[^\n]*loops=(\d+)/g).filter((loops) => loops > pairs)).toEqual([])
    }).pipe(withPorts)
  )

  it.live("the worker applies a claimed stream without a fetch of its own", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      yield* worker.awaitIdle
      const id = EventId.unsafeMake()
      const { sent } = yield* recording(
        Effect.andThen(store.append(id, [Bank.Deposited.make({ accountId: id, amount: 5 })]), worker.awaitIdle)
      )
      expect((yield* models.getMany("balance", [id])).get(id)?.data).toEqual({ balance: 5, audits: 0 })
      // The fetch on its own takes stream ids as a parameter; the claim's fetch takes what the claim claimed.
      expect(sent.filter((t) => t.includes("FROM unnest($2::uuid[]) AS s(id)"))).toEqual([])
      expect(sent.filter((t) => t.includes("SELECT stream_id FROM claimed")).length).toBeGreaterThan(0)
    }).pipe(
      Effect.provide(
        PgPerspectivePipeline.layer(config).pipe(
          Layer.provide(PerspectiveRewinder.layerUnsupported),
          Layer.provide(InstanceProvider.layerMemory()),
          Layer.orDie
        )
      ),
      Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
      Effect.scoped
    )
  )
})
