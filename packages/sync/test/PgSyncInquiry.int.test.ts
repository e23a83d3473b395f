import { describe, expect, it } from "@effect/vitest"
import { EventStore } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { Effect, type Layer } from "effect"
import * as PgSyncInquiry from "../src/PgSyncInquiry.js"
import * as SyncInquiry from "../src/SyncInquiry.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

// No worker: the tests play the worker's part in SQL, so each rule is reached deliberately.
const scenario = <A, E>(name: string, body: Effect.Effect<A, E, any>) =>
  it.live(
    name,
    () =>
      Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(Pipeline.layer({ worker: false }) as Layer.Layer<any>)))) as Effect.Effect<
        void,
        E
      >,
    60_000
  )

const services = Effect.all({
  inquiry: Effect.service(PgSyncInquiry.PgSyncInquiry),
  store: Effect.service(EventStore.EventStore),
  sql: Effect.service(PgClient.PgClient)
})

/** What the completion transaction does: delete the work row and advance the cursor. */
const complete = (sql: PgClient.Shape, streamId: string, eventId: string, advanceTo = eventId) =>
  sql.withTransaction(
    Effect.gen(function* () {
      yield* sql.query(`DELETE FROM wh_perspective_events WHERE event_id = $1 AND perspective_name = 'order_summary'`, [eventId])
      yield* sql.query(
        `INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id, status) VALUES ($1, 'order_summary', $2, 2)
       ON CONFLICT (stream_id, perspective_name) DO UPDATE SET last_event_id = excluded.last_event_id`,
        [streamId, advanceTo]
      )
    })
  )

describe("PgSyncInquiry rules (real Postgres)", () => {
  scenario(
    "pending while the work row exists; processed once it is deleted AND the cursor passed the event",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const s = uuid()
      const [e1, e2] = (yield* store.append(s, [Orders.placed(s, 1), Orders.placed(s, 2)])).events.map((e) => e.eventId)
      expect(yield* inquiry.classify("order_summary", [e1!, e2!])).toEqual({
        pending: [e1, e2],
        processed: [],
        deadLettered: [],
        failing: []
      })
      yield* complete(sql, s, e1!)
      expect(yield* inquiry.classify("order_summary", [e1!, e2!])).toEqual({
        pending: [e2],
        processed: [e1],
        deadLettered: [],
        failing: []
      })
      // e2's row vanishes without the cursor vouching for it: the database cannot prove it applied.
      yield* sql.query(`DELETE FROM wh_perspective_events WHERE event_id = $1`, [e2])
      expect((yield* inquiry.classify("order_summary", [e2!])).pending).toEqual([e2])
      yield* complete(sql, s, e2!)
      expect([...(yield* inquiry.classify("order_summary", [e1!, e2!])).processed].sort()).toEqual([e1, e2].sort())
    })
  )

  scenario(
    "an unknown or uncommitted event is pending; an event the perspective does not handle is processed",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const s = uuid()
      const [noted] = (yield* store.append(s, [Orders.noted(s)])).events.map((e) => e.eventId)
      const unknown = uuid()
      const result = yield* inquiry.classify("order_summary", [unknown, noted!, "not-a-uuid"])
      expect([...result.pending].sort()).toEqual([unknown, "not-a-uuid"].sort())
      expect(result.processed).toEqual([noted])
      // Uncommitted: appended and completed inside an open transaction, asked from another connection (a fresh
      // fiber outside the transaction's context). Until the commit, the database cannot vouch for it.
      const { id, seenOutside } = yield* sql.withTransaction(
        Effect.gen(function* () {
          const [id] = (yield* store.append(s, [Orders.placed(s, 5)])).events.map((e) => e.eventId)
          yield* complete(sql, s, id!)
          const seenOutside = yield* Effect.promise(() => Effect.runPromise(inquiry.classify("order_summary", [id!])))
          return { id: id!, seenOutside }
        })
      )
      expect(seenOutside.pending).toEqual([id])
      expect((yield* inquiry.classify("order_summary", [id])).processed).toEqual([id])
    })
  )

  scenario(
    "a dead-lettered event is not pending and is named; debug-mode rows marked processed are processed",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const s = uuid()
      const [bad, kept] = (yield* store.append(s, [Orders.rejected(s), Orders.placed(s, 1)])).events.map((e) => e.eventId)
      yield* sql.query(
        `
      WITH moved AS (DELETE FROM wh_perspective_events WHERE event_id = $1 RETURNING work_id, stream_id, perspective_name, event_id)
      INSERT INTO wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, error, attempts)
      SELECT work_id, stream_id, perspective_name, event_id, 'Rejected', 'boom', 3 FROM moved`,
        [bad]
      )
      yield* sql.query(`UPDATE wh_perspective_events SET processed_at = now() WHERE event_id = $1`, [kept])
      expect(yield* inquiry.classify("order_summary", [bad!, kept!])).toEqual({
        pending: [],
        processed: [kept],
        deadLettered: [bad],
        failing: []
      })
      const port = inquiry.port
      expect(yield* port.pendingEventIds("order_summary", [bad!, kept!])).toEqual({
        pendingEventIds: [],
        deadLetteredEventIds: [bad],
        failing: []
      })
    })
  )

  scenario(
    "a failing head (error set by a failed attempt) holds its stream: its event and the later ones are pending and name it",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const [s, other] = [uuid(), uuid()]
      const [done, head, later] = (yield* store.append(s, [Orders.placed(s, 1), Orders.rejected(s), Orders.placed(s, 2)])).events.map(
        (e) => e.eventId
      )
      const [elsewhere] = (yield* store.append(other, [Orders.placed(other, 1)])).events.map((e) => e.eventId)
      yield* complete(sql, s, done!)
      // What reportFailures writes: attempts, the error, the backoff.
      yield* sql.query(
        `UPDATE wh_perspective_events SET attempts = 3, error = 'boom', scheduled_for = '2030-01-01T00:00:00Z' WHERE event_id = $1`,
        [head]
      )
      const classified = yield* inquiry.classify("order_summary", [done!, head!, later!, elsewhere!])
      const failing = { eventId: head, streamId: s, perspectiveName: "order_summary", error: "boom", attempts: 3 }
      expect(classified).toMatchObject({
        pending: [head, later, elsewhere],
        processed: [done],
        deadLettered: [],
        failing: [
          { eventId: head, failing },
          { eventId: later, failing }
        ]
      })
      expect(classified.failing[0]!.failing.nextAttemptAt).toEqual(new Date("2030-01-01T00:00:00Z"))
      expect(yield* inquiry.port.pendingEventIds("order_summary", [later!])).toMatchObject({
        pendingEventIds: [later],
        failing: [{ eventId: later, failing }]
      })
      // A retry that succeeds deletes the row: nothing holds the stream any more.
      yield* complete(sql, s, head!)
      expect((yield* inquiry.classify("order_summary", [later!])).failing).toEqual([])
    })
  )

  scenario(
    "stream discovery brings the stream's events still in dead letters when asked; a retried or discarded one no longer",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const [s, other] = [uuid(), uuid()]
      const [bad, pending] = (yield* store.append(s, [Orders.rejected(s), Orders.placed(s, 1)])).events.map((e) => e.eventId)
      const [otherBad] = (yield* store.append(other, [Orders.rejected(other)])).events.map((e) => e.eventId)
      const deadLetter = (id: string) =>
        sql.query(
          `WITH moved AS (DELETE FROM wh_perspective_events WHERE event_id = $1 RETURNING work_id, stream_id, perspective_name, event_id)
           INSERT INTO wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, error, attempts)
           SELECT work_id, stream_id, perspective_name, event_id, 'Rejected', 'boom', 3 FROM moved`,
          [id]
        )
      yield* deadLetter(bad!)
      yield* deadLetter(otherBad!)
      expect(yield* inquiry.pendingForStream("order_summary", s)).toEqual([pending])
      expect(yield* inquiry.pendingForStream("order_summary", s, undefined, { deadLettered: true })).toEqual([bad, pending])
      expect(yield* inquiry.pendingForStream("order_summary", s, ["OrderPlaced"], { deadLettered: true })).toEqual([pending])
      expect(yield* inquiry.pendingForStream("order_summary", s, ["Rejected"], { deadLettered: true })).toEqual([bad])
      // Without a stream, dead letters are never brought (every stream's pending events only).
      expect(yield* inquiry.pendingForStream("order_summary", undefined, undefined, { deadLettered: true })).toEqual([pending])
      // Discarded (or retried: the letter is deleted, a fresh work row queued): the stream no longer lacks it.
      yield* sql.query(`DELETE FROM wh_dead_letters WHERE event_id = $1`, [bad])
      expect(yield* inquiry.pendingForStream("order_summary", s, undefined, { deadLettered: true })).toEqual([pending])
    })
  )

  scenario(
    "cross-scope discovery and the inquiry model: the stream's pending events of the listed types",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const s = uuid()
      const [placed, shipped] = (yield* store.append(s, [Orders.placed(s, 1), Orders.shipped(s)])).events.map((e) => e.eventId)
      yield* store.append(uuid(), [Orders.placed(uuid(), 1)]).pipe(Effect.ignore)
      expect(yield* inquiry.pendingForStream("order_summary", s)).toEqual([placed, shipped])
      expect(yield* inquiry.pendingForStream("order_summary", s, ["OrderShipped"])).toEqual([shipped])
      const byIds = yield* inquiry.inquire(yield* SyncInquiry.make({ perspectiveName: "order_summary", eventIds: [placed!] }))
      expect(SyncInquiry.isFullySynced(byIds)).toBe(false)
      yield* complete(sql, s, placed!)
      const unasked = yield* inquiry.inquire(yield* SyncInquiry.make({ perspectiveName: "order_summary", eventIds: [placed!] }))
      expect(unasked.processedEventIds).toBeUndefined() // includeProcessedEventIds defaults to off
      expect(SyncInquiry.isFullySynced(unasked)).toBe(false)
      const synced = yield* inquiry.inquire(
        yield* SyncInquiry.make({ perspectiveName: "order_summary", eventIds: [placed!], includeProcessedEventIds: true })
      )
      expect(synced.processedEventIds).toEqual([placed])
      expect(SyncInquiry.isFullySynced(synced)).toBe(true)
      const byStream = yield* inquiry.inquire(
        yield* SyncInquiry.make({ perspectiveName: "order_summary", streamId: s, includePendingEventIds: true })
      )
      expect(byStream).toMatchObject({ pendingCount: 1, pendingEventIds: [shipped], streamId: s })
      expect(SyncInquiry.isFullySynced(byStream)).toBe(false)
    })
  )

  scenario(
    "a check probes each table by key, never scans it, under plans made while the tables were small and never analysed; so does a stream's discovery",
    Effect.gen(function* () {
      const { inquiry, sql, store } = yield* services
      const appendOrders = (streams: number, perStream: number) =>
        Effect.forEach(
          Array.from({ length: streams }, () => uuid()),
          (s) =>
            Effect.map(
              store.append(
                s,
                Array.from({ length: perStream }, (_, k) => Orders.placed(s, k + 1))
              ),
              (r) => r.events
            ),
          { concurrency: 4 }
        ).pipe(Effect.map((appended) => appended.flat().map((e) => e.eventId)))
      // A new service: a few events, and the checks (on every pooled connection) plan while the tables are tiny.
      const first = yield* appendOrders(4, 5)
      yield* Effect.forEach(Array.from({ length: 12 }), () => inquiry.classify("order_summary", first), { concurrency: 4 })
      // Then it grows (no ANALYZE), and a check asks about many events at once, as coalesced first checks do.
      const grown = yield* appendOrders(40, 80)
      const asked = grown.filter((_, k) => k % 100 === 0)
      // One asked stream is failing at its head: its facts come from one more probe of the work rows' key.
      yield* sql.query(
        `UPDATE wh_perspective_events SET attempts = 1, error = 'boom', scheduled_for = now() + interval '1 hour'
                        WHERE event_id = $1`,
        [grown[0]]
      )
      // This connection's scans not flushed to the statistics yet, by table (one connection: a transaction).
      const scans = sql.query<{ relname: string; seq_scan: number; idx_scan: number }>(
        `SELECT relname, seq_scan::int AS seq_scan, idx_scan::int AS idx_scan FROM pg_stat_xact_user_tables
         WHERE schemaname = current_schema() AND relname IN ('wh_events', 'wh_perspective_events', 'wh_perspective_cursors', 'wh_dead_letters')
         ORDER BY relname`
      )
      const [before, after] = yield* sql.withTransaction(
        Effect.gen(function* () {
          const before = yield* scans
          for (let k = 0; k < 10; k++) {
            const classified = yield* inquiry.classify("order_summary", asked)
            expect(classified.pending).toHaveLength(asked.length)
            expect(classified.failing.map((f) => f.eventId)).toEqual([grown[0]])
          }
          return [before, yield* scans] as const
        })
      )
      expect(grown.length).toBe(3_200)
      const delta = after.map((a) => {
        const b = before.find((r) => r.relname === a.relname)
        return { relname: a.relname, seq_scan: a.seq_scan - (b?.seq_scan ?? 0), probed: a.idx_scan > (b?.idx_scan ?? 0) }
      })
      expect(delta).toEqual(
        ["wh_dead_letters", "wh_events", "wh_perspective_cursors", "wh_perspective_events"].map((relname) => ({
          relname,
          seq_scan: 0,
          probed: true
        }))
      )
      // A stream read's discovery (with the stream's dead letters), even under a generic plan: the work rows by key.
      const [{ stream_id: s }] = (yield* sql.query<{ stream_id: string }>(
        "SELECT stream_id::text AS stream_id FROM wh_events WHERE event_id = $1",
        [grown[100]]
      )) as [{ stream_id: string }]
      const work = (rows: ReadonlyArray<{ relname: string; seq_scan: number }>) => rows.find((r) => r.relname === "wh_perspective_events")!
      const [generic, afterGeneric] = yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql.query("SET LOCAL plan_cache_mode = force_generic_plan")
          const before = yield* scans
          for (let k = 0; k < 10; k++) {
            expect(yield* inquiry.pendingForStream("order_summary", s, undefined, { deadLettered: true })).toHaveLength(80)
          }
          return [before, yield* scans] as const
        })
      )
      expect(work(afterGeneric).seq_scan - work(generic).seq_scan).toBe(0)
    })
  )

  scenario(
    "a NOTIFY on wh_processed for this schema wakes a change waiter",
    Effect.gen(function* () {
      const { inquiry, sql } = yield* services
      const changes = inquiry.port.changes!
      // The listener bumps the counter once it is connected; wait for that first.
      yield* changes.awaitChangeAfter(0)
      const before = yield* changes.current
      yield* sql.query("SELECT pg_notify('wh_processed', current_schema())")
      yield* changes.awaitChangeAfter(before)
      expect(yield* changes.current).toBeGreaterThan(before)
    })
  )
})
