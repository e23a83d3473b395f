import { describe, expect, it } from "@effect/vitest"
import { type Envelope, PerspectiveStore, PerspectiveWorker, Receptor } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { Deferred, Duration, Effect, type Layer, Option } from "effect"
import * as Dispatcher from "../src/Dispatcher.js"
import * as EventCompletionAwaiter from "../src/EventCompletionAwaiter.js"
import * as FireAt from "../src/FireAt.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as PgSyncInquiry from "../src/PgSyncInquiry.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncAwareLens from "../src/SyncAwareLens.js"
import * as SyncContext from "../src/SyncContext.js"
import * as SyncFilter from "../src/SyncFilter.js"
import * as SyncResult from "../src/SyncResult.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

// The worker runs on the real clock: each scenario builds its own pipeline (and database) with `it.live`.
const scenario = <A, E>(name: string, setup: Pipeline.Setup, body: Effect.Effect<A, E, any>, timeout = 60_000) =>
  it.live(
    name,
    () => Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(Pipeline.layer(setup) as Layer.Layer<any>)))) as Effect.Effect<void, E>,
    timeout
  )

const awaiter = Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)

/** A receptor the worker fires (detached) after order_summary applied an OrderPlaced; it awaits the stream. */
const workerFired = Deferred.makeUnsafe<{ readonly eventId: string; readonly context: Option.Option<SyncContext.SyncContext> }>()
const afterPlaced = FireAt.receptor("PostPerspectiveAsync", {
  name: "after_placed",
  handles: [Orders.OrderPlaced],
  awaitPerspectiveSync: [{ perspective: "order_summary", fireBehavior: "FireAlways", timeout: Duration.seconds(20) }],
  handle: (envelope) =>
    Effect.flatMap(SyncContext.Current, (context) => Deferred.succeed(workerFired, { eventId: envelope.eventId, context }))
})
const dispatcher = Effect.service(Dispatcher.Dispatcher)

describe("read-your-writes on Postgres", () => {
  scenario(
    "an HTTP-like flow append -> wait -> read sees the write every time (1,000 iterations, zero stale reads)",
    {},
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const streams = Array.from({ length: 50 }, () => uuid())
      const totals = new Map<string, number>()
      let stale = 0
      const outcomes = new Map<string, number>()
      for (let i = 0; i < 1000; i++) {
        const s = streams[i % streams.length]!
        const amount = (i % 7) + 1
        totals.set(s, (totals.get(s) ?? 0) + amount)
        // One "request": its own scope; append, then read through the sync-aware lens.
        const { row, sync } = yield* ScopedEventTracker.withScope(
          Effect.gen(function* () {
            yield* store.append(s, [Orders.placed(s, amount)])
            return yield* SyncAwareLens.getById(Orders.summary, s, SyncFilter.currentScope().withTimeout(Duration.seconds(10)))
          })
        )
        outcomes.set(sync._tag, (outcomes.get(sync._tag) ?? 0) + 1)
        const data = Option.getOrUndefined(Option.map(row, (r) => r.data))
        if (data?.total !== totals.get(s)) stale++
      }
      expect(stale).toBe(0)
      // Synced, or NoPendingEvents when the worker applied the event before the wait's first check.
      expect([...outcomes.keys()].filter((tag) => tag !== "Synced" && tag !== "NoPendingEvents")).toEqual([])
    }),
    180_000
  )

  scenario(
    "a caller that did not track the event (cross-scope) is woken through the database",
    {},
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      // Appended in another scope of this process: tracked, but the waiter asks only by stream.
      yield* ScopedEventTracker.withScope(store.append(s, [Orders.placed(s, 4), Orders.shipped(s)]))
      const result = yield* (yield* awaiter).waitForStream("order_summary", s, { timeout: Duration.seconds(10) })
      expect(SyncResult.isFresh(result)).toBe(true)
      expect(result).toMatchObject({ deadLettered: [], pending: [] })
      const { row } = yield* SyncAwareLens.getById(Orders.summary, s)
      expect(Option.getOrThrow(row).data).toEqual({ total: 4, shipped: true, count: 2 })
    })
  )

  scenario(
    "worker not running: the wait times out, and the database still reports the event pending",
    { worker: false },
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const [e] = (yield* store.append(s, [Orders.placed(s, 1)])).events.map((x) => x.eventId)
      const result = yield* (yield* awaiter).waitForEvents("order_summary", [e!], { timeout: Duration.millis(300) })
      expect(result).toMatchObject({ _tag: "TimedOut", eventsAwaited: 1 })
      expect((yield* (yield* Effect.service(PgSyncInquiry.PgSyncInquiry)).classify("order_summary", [e!])).pending).toEqual([e])
    })
  )

  const ran: Array<string> = []
  const contexts: Array<Option.Option<SyncContext.SyncContext>> = []
  const receptors = [
    Receptor.make({
      name: "strict",
      handles: ["OrderPlaced"],
      awaitPerspectiveSync: [{ perspective: "order_summary", timeout: Duration.millis(300) }],
      handle: () => Effect.sync(() => void ran.push("strict"))
    }),
    Receptor.make({
      name: "lenient",
      handles: ["OrderShipped"],
      awaitPerspectiveSync: [{ perspective: "order_summary", timeout: Duration.millis(300), fireBehavior: "FireAlways" }],
      handle: () => Effect.map(SyncContext.Current, (c) => void contexts.push(c))
    })
  ]
  scenario(
    "worker not running: FireOnSuccess fails with PerspectiveSyncTimeoutError (handler not run); FireAlways runs with TimedOut",
    { worker: false, receptors },
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const [placed, shipped] = (yield* store.append(s, [Orders.placed(s, 1), Orders.shipped(s)])).events
      const d = yield* dispatcher
      const error = yield* Effect.flip(d.localInvoke(Dispatcher.event(placed!)))
      expect(error).toMatchObject({ _tag: "PerspectiveSyncTimeoutError", receptor: "strict", perspectiveName: "order_summary" })
      expect(Duration.toMillis((error as { timeout: Duration.Duration }).timeout)).toBe(300)
      expect(ran).toEqual([])
      yield* d.localInvoke(Dispatcher.event(shipped!))
      expect(contexts).toHaveLength(1)
      expect(Option.getOrThrow(contexts[0]!)).toMatchObject({ outcome: "TimedOut", perspectiveName: "order_summary", streamId: s })
    })
  )

  const seen: Array<unknown> = []
  const notify = Receptor.make({
    name: "notify",
    handles: ["OrderShipped"],
    awaitPerspectiveSync: [{ perspective: "order_summary" }],
    handle: (envelope: Envelope.Envelope) =>
      Effect.gen(function* () {
        // Cross-scope: the event came from elsewhere; after the sync the handler reads its effect.
        const row = yield* Effect.orDie(models!.getById("order_summary", envelope.streamId))
        seen.push({ outcome: Option.map(yield* SyncContext.Current, (c) => c.outcome), data: Option.map(row, (r) => r.data) })
      })
  })
  // Receptors close over their services: the handler's store is captured when the scenario starts.
  let models: PerspectiveStore.Shape | undefined
  scenario(
    "with the worker: an incoming event's receptor runs after the perspective applied it",
    { receptors: [notify] },
    Effect.gen(function* () {
      models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const appended = yield* ScopedEventTracker.withScope(store.append(s, [Orders.placed(s, 3), Orders.shipped(s)]))
      yield* (yield* dispatcher).localInvoke(Dispatcher.event(appended.events[1]!))
      expect(seen).toEqual([{ outcome: Option.some("Synced"), data: Option.some({ total: 3, shipped: true, count: 2 }) }])
    })
  )

  scenario(
    "a dead-lettered event ends the wait and is named in the result",
    {
      // One attempt: the failure dead-letters at once (with more, the first failure already answers Failing).
      config: {
        options: { ...Pipeline.fast, maxPerspectiveEventAttempts: 1 },
        failureBackoff: { initial: Duration.millis(10), multiplier: 2, max: Duration.millis(20) }
      }
    },
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const { result, ids } = yield* ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const ids = (yield* store.append(s, [Orders.placed(s, 2), Orders.rejected(s), Orders.placed(s, 5)])).events.map((e) => e.eventId)
          const result = yield* (yield* awaiter).wait("order_summary", SyncFilter.currentScope().withTimeout(Duration.seconds(20)))
          return { result, ids }
        })
      )
      expect(result).toMatchObject({ _tag: "DeadLettered", eventsAwaited: 3, deadLettered: [ids[1]] })
      expect(SyncResult.isFresh(result)).toBe(false)
      // A stream read waits for the stream's other events and still reports the old dead letter it lacks.
      const { row, sync } = yield* SyncAwareLens.getById(Orders.summary, s)
      expect(Option.getOrThrow(row).data).toEqual({ total: 7, shipped: false, count: 2 })
      expect(sync).toMatchObject({ _tag: "DeadLettered", deadLettered: [ids[1]], pending: [] })
      const letters = yield* (yield* Effect.service(PgClient.PgClient)).query<{ event_id: string }>("select event_id from wh_dead_letters")
      expect(letters.map((l) => l.event_id)).toEqual([ids[1]])
    })
  )

  scenario(
    "a receptor the worker fires honours awaitPerspectiveSync: it runs after the stream settled, with its SyncContext",
    {
      workerReceptors: [afterPlaced],
      config: {
        options: { ...Pipeline.fast, maxPerspectiveEventAttempts: 1 },
        failureBackoff: { initial: Duration.millis(10), multiplier: 2, max: Duration.millis(20) }
      }
    },
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const ids = yield* ScopedEventTracker.withScope(
        Effect.map(store.append(s, [Orders.placed(s, 2), Orders.rejected(s)]), (r) => r.events.map((e) => e.eventId))
      )
      const fired = yield* Deferred.await(workerFired)
      expect(fired.eventId).toBe(ids[0])
      // Without the gate the handler would run at once with no context; with it, after the rejected event settled.
      expect(Option.map(fired.context, (c) => [c.outcome, c.deadLettered])).toEqual(Option.some(["DeadLettered", [ids[1]]]))
    })
  )

  scenario(
    "a stream whose head is failing answers every wait at its first failure with Failing (the event, its error, attempts, next attempt), not at the timeout",
    {
      // Defaults-like: many attempts, a long backoff: the stream stays failing for the whole test.
      config: {
        options: { ...Pipeline.fast, maxPerspectiveEventAttempts: 10 },
        failureBackoff: { initial: Duration.seconds(60), multiplier: 2, max: Duration.seconds(120) }
      }
    },
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const completion = yield* Effect.service(EventCompletionAwaiter.EventCompletionAwaiter)
      const [s, healthy] = [uuid(), uuid()]
      const timeout = Duration.seconds(20)
      const { bad, later, result } = yield* ScopedEventTracker.withScope(
        Effect.gen(function* () {
          const [bad, later] = (yield* store.append(s, [Orders.rejected(s), Orders.placed(s, 5)])).events.map((e) => e.eventId)
          const result = yield* (yield* awaiter).wait("order_summary", SyncFilter.currentScope().withTimeout(timeout))
          return { bad: bad!, later: later!, result }
        })
      )
      expect(result._tag).toBe("Failing")
      if (result._tag !== "Failing") return
      const [failing] = result.failing
      expect(result.failing).toHaveLength(1)
      expect(failing).toMatchObject({ eventId: bad, streamId: s, perspectiveName: "order_summary", attempts: 1 })
      expect(failing!.error).toContain("rejected by the summary")
      expect(failing!.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now() + 30_000)
      expect([...result.pending].sort()).toEqual([bad, later].sort())
      expect(Duration.toMillis(result.elapsed)).toBeLessThan(5_000)
      expect(SyncResult.isFresh(result)).toBe(false)
      // The later event is held by it: every way to wait says so at once, naming the failing event.
      const held = [
        yield* (yield* awaiter).waitForEvents("order_summary", [later], { timeout }),
        (yield* SyncAwareLens.getById(Orders.summary, s, { timeout })).sync,
        yield* completion.waitForEvents([later], { timeout })
      ]
      for (const r of held) {
        expect(r).toMatchObject({ _tag: "Failing", failing: [{ eventId: bad, attempts: 1 }] })
        expect(r.pending).toContain(later) // the stream read (discovery) awaits the failing event itself too
        expect(Duration.toMillis(r.elapsed)).toBeLessThan(5_000)
      }
      // Other streams are not held.
      yield* store.append(healthy, [Orders.placed(healthy, 1)])
      expect(SyncResult.isFresh(yield* (yield* awaiter).wait("order_summary", SyncFilter.forStream(healthy).withTimeout(timeout)))).toBe(
        true
      )
    })
  )

  scenario(
    "after the worker deleted the work rows, the inquiry still says processed",
    {},
    Effect.gen(function* () {
      const store = yield* TrackedEventStore.make
      const s = uuid()
      const ids = (yield* store.append(s, [Orders.placed(s, 1), Orders.noted(s)])).events.map((e) => e.eventId)
      yield* (yield* Effect.service(PerspectiveWorker.PerspectiveWorker)).awaitIdle
      const sql = yield* Effect.service(PgClient.PgClient)
      expect(yield* sql.query("select 1 from wh_perspective_events")).toEqual([])
      const classified = yield* (yield* Effect.service(PgSyncInquiry.PgSyncInquiry)).classify("order_summary", ids)
      expect([...classified.processed].sort()).toEqual([...ids].sort())
    })
  )
})
