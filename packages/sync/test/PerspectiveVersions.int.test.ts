import { describe, expect, it } from "@effect/vitest"
import { EventStore } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { Duration, Effect, Fiber, type Layer, Option } from "effect"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as PgSyncInquiry from "../src/PgSyncInquiry.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { isRunning, uuid } from "./support.js"

// Waits across perspective versions: a wait for "order_summary" (or any version's key) is satisfied only when
// every SERVING version ('live', 'ready') of the base has applied its events. No worker: the tests play the
// version registry, the completions and their NOTIFY in SQL.
type Services = Layer.Success<ReturnType<typeof Pipeline.layer>>
const scenario = <A, E>(name: string, body: Effect.Effect<A, E, Services>) =>
  it.live(name, () => Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(Pipeline.layer({ worker: false }))))), 60_000)

const services = Effect.all({
  inquiry: Effect.service(PgSyncInquiry.PgSyncInquiry),
  awaiter: Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter),
  store: Effect.service(EventStore.EventStore),
  tracker: Effect.service(SyncEventTracker.SyncEventTracker),
  sql: Effect.service(PgClient.PgClient)
})

const v1 = "order_summary"
const v2 = "order_summary__v2"
type State = "building" | "ready" | "live" | "retiring" | "retired"

// After each change of a state, the `@versions` notification, as the registry and the hand-over send it
// (`wh_notify_versions`, migration 0019; a trigger sent it before).
const notifyVersions = (sql: PgClient.Shape, key: string) => sql.query("SELECT wh_notify_versions(ARRAY[$1::text])", [key])

/** Registers the versions (as the lead's registration would) with the summary's event types; the pipeline's start-up registered v1 already (live). */
const register = (sql: PgClient.Shape, versions: ReadonlyArray<readonly [key: string, version: number, state: State]>) =>
  Effect.forEach(versions, ([key, version, state]) =>
    sql
      .query(
        `INSERT INTO wh_perspective_versions (perspective_name, base_name, version, state, event_types)
       VALUES ($1, 'order_summary', $2, $3, ARRAY['OrderPlaced', 'OrderShipped', 'Rejected'])
       ON CONFLICT (perspective_name) DO UPDATE SET state = excluded.state`,
        [key, version, state]
      )
      .pipe(Effect.andThen(notifyVersions(sql, key)))
  )

const setState = (sql: PgClient.Shape, key: string, state: State) =>
  sql
    .query(`UPDATE wh_perspective_versions SET state = $2 WHERE perspective_name = $1`, [key, state])
    .pipe(Effect.andThen(notifyVersions(sql, key)))

/** What a completion of version `key` does: delete its work row, advance its cursor and, if asked, NOTIFY (completeWork.ts's payload). */
const complete = (sql: PgClient.Shape, key: string, streamId: string, eventId: string, notify: boolean) =>
  sql.withTransaction(
    Effect.gen(function* () {
      yield* sql.query(`DELETE FROM wh_perspective_events WHERE event_id = $1 AND perspective_name = $2`, [eventId, key])
      yield* sql.query(
        `INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id, status) VALUES ($1, $2, $3, 2)
         ON CONFLICT (stream_id, perspective_name) DO UPDATE SET last_event_id = excluded.last_event_id`,
        [streamId, key, eventId]
      )
      if (notify) {
        yield* sql.query(`SELECT pg_notify('wh_processed', current_schema() || E'\\n' || $1::text || E'\\t' || $2::text)`, [key, eventId])
      }
    })
  )

/** Polls (with a deadline) until `condition` holds. */
const until = (condition: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 2_000; i++) {
      if (yield* condition) return
      yield* Effect.sleep(Duration.millis(5))
    }
    return yield* Effect.die(new Error("condition not reached within 10 s"))
  })

/** A wait for `e` on the base name, forked and parked on the database (its first check done). */
const parkedWait = (
  awaiter: PerspectiveSyncAwaiter.PerspectiveSyncAwaiter["Service"],
  inquiry: PgSyncInquiry.PgSyncInquiry["Service"],
  e: string
) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(awaiter.waitForEvents(v1, [e], { timeout: "20 seconds" }))
    yield* until(Effect.map(inquiry.parkedWaits, (w) => w.parked === 1))
    return fiber
  })

const appendOne = (store: EventStore.EventStore["Service"]) =>
  Effect.gen(function* () {
    const s = uuid()
    const [e] = (yield* store.append(s, [Orders.placed(s, 1)])).events.map((x) => x.eventId)
    return { s, e: e! }
  })

describe("read-your-writes across perspective versions (real Postgres)", () => {
  scenario(
    "(a) v1 live, v2 ready: a wait on the base name stays pending while only v1 applied the event; v2's completion ends it Synced",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "ready"]
      ])
      const { e, s } = yield* appendOne(store)
      // The append routed the event to both versions.
      const rows = yield* sql.query<{ perspective_name: string }>(
        `SELECT perspective_name FROM wh_perspective_events WHERE event_id = $1 ORDER BY perspective_name`,
        [e]
      )
      expect(rows.map((r) => r.perspective_name)).toEqual([v1, v2])
      expect(yield* inquiry.pendingForStream(v1, s)).toEqual([e])
      yield* complete(sql, v1, s, e, true)
      expect(yield* inquiry.classify(v1, [e])).toEqual({ pending: [e], processed: [], deadLettered: [], failing: [] })
      expect(yield* inquiry.pendingForStream(v1, s)).toEqual([e]) // still in v2's queue
      const early = yield* awaiter.waitForEvents(v1, [e], { timeout: "300 millis", debuggerAwareTimeout: false })
      expect(early).toMatchObject({ _tag: "TimedOut", pending: [e] })

      const fiber = yield* parkedWait(awaiter, inquiry, e)
      yield* complete(sql, v2, s, e, true)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
      expect(yield* inquiry.classify(v1, [e])).toEqual({ pending: [], processed: [e], deadLettered: [], failing: [] })
    })
  )

  scenario(
    "(b) the same through v2's key: it means every serving version of the base (v2 applied, v1 not yet)",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "ready"]
      ])
      const { e, s } = yield* appendOne(store)
      yield* complete(sql, v2, s, e, true)
      expect((yield* inquiry.classify(v2, [e])).pending).toEqual([e])
      const fiber = yield* Effect.forkChild(awaiter.waitForEvents(v2, [e], { timeout: "20 seconds" }))
      yield* until(Effect.map(inquiry.parkedWaits, (w) => w.parked === 1))
      expect(isRunning(fiber)).toBe(true)
      yield* complete(sql, v1, s, e, true)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
    })
  )

  scenario(
    "(c) a version still 'building' is not waited on, whichever name the wait gives",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "building"]
      ])
      const { e, s } = yield* appendOne(store)
      yield* complete(sql, v1, s, e, false)
      expect((yield* inquiry.classify(v2, [e])).processed).toEqual([e])
      expect((yield* awaiter.waitForEvents(v1, [e], { timeout: "5 seconds" }))._tag).toBe("NoPendingEvents")
      expect((yield* awaiter.waitForEvents(v2, [e], { timeout: "5 seconds" }))._tag).toBe("NoPendingEvents")
      expect(yield* inquiry.pendingForStream(v1, s)).toEqual([])
    })
  )

  scenario(
    "(d) a retired version is not waited on; when nothing serves, the retired key asked for counts as done",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "ready"]
      ])
      const { e, s } = yield* appendOne(store)
      yield* complete(sql, v1, s, e, false)
      // Rolled back: v2 retired with the event still in its queue.
      yield* setState(sql, v2, "retired")
      expect((yield* awaiter.waitForEvents(v2, [e], { timeout: "5 seconds" }))._tag).toBe("NoPendingEvents")
      // Nothing serves any more: the key asked for decides, and a retired key is no longer processed.
      yield* setState(sql, v1, "retired")
      const unknown = uuid()
      expect(yield* inquiry.classify(v2, [e, unknown])).toEqual({ pending: [unknown], processed: [e], deadLettered: [], failing: [] })
      expect(yield* inquiry.pendingForStream(v2, s)).toEqual([])
    })
  )

  scenario(
    "(e) a wait parked on the base name: v1's notification re-checks without ending it; only v2's notification ends it",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "ready"]
      ])
      const { e, s } = yield* appendOne(store)
      const fiber = yield* parkedWait(awaiter, inquiry, e)
      const { sweeps } = yield* inquiry.parkedWaits
      // v1's payload names the event, but v2 serves too: the notification sweeps that wait instead of ending it.
      yield* complete(sql, v1, s, e, true)
      yield* until(Effect.map(inquiry.parkedWaits, (w) => w.sweeps > sweeps))
      expect(isRunning(fiber)).toBe(true)
      expect((yield* inquiry.parkedWaits).parked).toBe(1)
      yield* complete(sql, v2, s, e, true)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
    })
  )

  scenario(
    "(f) a version made ready while a wait is parked: the registry's notice comes first, so the base's payload re-checks; v2's completion ends it",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "building"]
      ])
      const { e, s } = yield* appendOne(store)
      const fiber = yield* parkedWait(awaiter, inquiry, e)
      yield* setState(sql, v2, "ready")
      const { sweeps } = yield* inquiry.parkedWaits
      yield* complete(sql, v1, s, e, true)
      yield* until(Effect.map(inquiry.parkedWaits, (w) => w.sweeps > sweeps))
      expect(isRunning(fiber)).toBe(true)
      yield* complete(sql, v2, s, e, true)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
    })
  )

  scenario(
    "a base served by its version 1 alone (as the pipeline registers it) keeps the unversioned behaviour: settled from the payload without a sweep",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store } = yield* services
      // After start-up the listener's first connect sweeps the parked waits and has the registry read; until that
      // read returns a payload is re-checked too (on a loaded machine that came after the first wait once). So
      // waits go on until one is settled without a sweep: with the fast path broken, none is.
      let fast = false
      for (let attempt = 0; attempt < 20 && !fast; attempt++) {
        const { e, s } = yield* appendOne(store)
        const fiber = yield* parkedWait(awaiter, inquiry, e)
        const { sweeps } = yield* inquiry.parkedWaits
        yield* complete(sql, v1, s, e, true)
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
        fast = (yield* inquiry.parkedWaits).sweeps === sweeps
      }
      expect(fast).toBe(true)
    })
  )

  scenario(
    "this process's tracker mark (v1's) does not end a wait while v2 serves too; without versions the mark alone still does",
    Effect.gen(function* () {
      const { awaiter, inquiry, sql, store, tracker } = yield* services
      // Without versions: the mark alone ends the wait (the database is not even updated).
      const plain = yield* appendOne(store)
      yield* tracker.trackEvent({ eventId: plain.e, streamId: plain.s, eventType: "OrderPlaced", perspectiveName: v1 })
      const quick = yield* Effect.forkChild(awaiter.waitForEvents(v1, [plain.e], { timeout: "20 seconds" }))
      yield* until(Effect.map(inquiry.parkedWaits, (w) => w.parked === 1))
      yield* tracker.markProcessedByPerspective([plain.e], v1)
      expect((yield* Fiber.join(quick))._tag).toBe("Synced")

      yield* register(sql, [
        [v1, 1, "live"],
        [v2, 2, "ready"]
      ])
      const { e, s } = yield* appendOne(store)
      yield* tracker.trackEvent({ eventId: e, streamId: s, eventType: "OrderPlaced", perspectiveName: v1 })
      const fiber = yield* parkedWait(awaiter, inquiry, e)
      yield* complete(sql, v1, s, e, false)
      yield* tracker.markProcessedByPerspective([e], v1)
      // The mark is confirmed with the database, which still has v2 pending: the wait goes on.
      expect(Option.isNone(yield* Effect.timeoutOption(Fiber.await(fiber), "300 millis"))).toBe(true)
      yield* complete(sql, v2, s, e, true)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", pending: [] })
    })
  )
})
