import { describe, expect, it } from "@effect/vitest"
import {
  EventId,
  EventStore,
  InstanceProvider,
  LifecycleStage,
  PerspectiveRewinder,
  PerspectiveWorker,
  Receptor,
  SecurityContext
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgStatus } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Duration, Effect, Layer, Option, Ref } from "effect"
import * as Bank from "./fixtures/bank.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

interface Fired {
  readonly stage: string
  readonly receptor: string
  readonly eventId: string
  readonly userId: string | undefined
  readonly source: string | undefined
  /** For PostAllPerspectives: cursors of this event's stream at or past the event, when it fired. */
  readonly cursorsDone?: number
}

/** Receptors that record what they saw; PostAllPerspectives also checks both perspectives committed the event. */
const recordingReceptors = (fired: Ref.Ref<Array<Fired>>) =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const record = (stage: string, receptor: string) => (envelope: { eventId: string; streamId: string }) =>
      Effect.gen(function* () {
        const context = yield* SecurityContext.current
        const cursorsDone =
          stage === "PostAllPerspectives"
            ? (yield* client.query<{ n: number }>(
                "select count(*)::int as n from wh_perspective_cursors where stream_id = $1 and last_event_id >= $2",
                [envelope.streamId, envelope.eventId]
              ))[0]!.n
            : undefined
        yield* Ref.update(fired, (all) => [
          ...all,
          {
            stage,
            receptor,
            eventId: envelope.eventId,
            userId: Option.getOrUndefined(context)?.userId,
            source: Option.getOrUndefined(context)?.source,
            ...(cursorsDone === undefined ? {} : { cursorsDone })
          }
        ])
      })
    return [
      Receptor.make({
        name: "per_perspective",
        handles: [Bank.Deposited],
        stage: "PostPerspective",
        handle: record("PostPerspective", "per_perspective")
      }),
      Receptor.make({
        name: "after_all",
        handles: [Bank.Deposited, Bank.Withdrawn],
        stage: "PostAllPerspectives",
        handle: record("PostAllPerspectives", "after_all")
      }),
      Receptor.make({ name: "last", handles: [Bank.Deposited], stage: "PostLifecycle", handle: record("PostLifecycle", "last") })
    ]
  })

const withPipeline = <A, E>(
  fired: Ref.Ref<Array<Fired>>,
  body: Effect.Effect<A, E, EventStore.EventStore | PerspectiveWorker.PerspectiveWorker | PgClient.PgClient>,
  before?: Effect.Effect<void, never, PgClient.PgClient>
) =>
  Effect.gen(function* () {
    if (before) yield* before
    const receptors = yield* recordingReceptors(fired)
    return yield* body.pipe(
      Effect.provide(
        PgPerspectivePipeline.layer({ events: Bank.events, perspectives: Bank.perspectives, options: fast, receptors }).pipe(
          Layer.provide(PerspectiveRewinder.layerUnsupported),
          Layer.orDie
        )
      )
    )
  }).pipe(
    Effect.provide(
      Layer.mergeAll(InstanceProvider.layerMemory({ serviceName: "lifecycle-test" })).pipe(
        Layer.provideMerge(PgTestDatabase.layer({ schema: "bank" }))
      )
    ),
    Effect.scoped
  )

describe("lifecycle stages and security context", () => {
  it.live(
    "fires PostPerspective per (event, perspective), then PostAllPerspectives once per event after every perspective committed, then PostLifecycle",
    () =>
      Effect.gen(function* () {
        const fired = yield* Ref.make<Array<Fired>>([])
        yield* withPipeline(
          fired,
          Effect.gen(function* () {
            const store = yield* EventStore.EventStore
            const worker = yield* PerspectiveWorker.PerspectiveWorker
            const streams = Array.from({ length: 20 }, () => EventId.unsafeMake())
            const appended = yield* Effect.forEach(
              streams,
              (id) =>
                store.append(id, [Bank.Deposited.make({ accountId: id, amount: 1 }), Bank.Withdrawn.make({ accountId: id, amount: 1 })]),
              { concurrency: 4 }
            )
            yield* worker.awaitIdle
            const all = yield* Ref.get(fired)
            const deposits = appended.map((a) => a.events[0]!.eventId)
            const withdrawals = appended.map((a) => a.events[1]!.eventId)
            const count = (stage: string, id: string) => all.filter((f) => f.stage === stage && f.eventId === id).length
            for (const id of deposits) {
              expect(count("PostPerspective", id)).toBe(2) // balance and activity both handle Deposited
              expect(count("PostAllPerspectives", id)).toBe(1)
              expect(count("PostLifecycle", id)).toBe(1)
              const order = all.filter((f) => f.eventId === id && f.stage !== "PostPerspective").map((f) => f.stage)
              expect(order).toEqual(["PostAllPerspectives", "PostLifecycle"])
            }
            for (const id of withdrawals) expect(count("PostAllPerspectives", id)).toBe(1)
            expect(all.filter((f) => f.stage === "PostAllPerspectives").every((f) => f.cursorsDone === 2)).toBe(true)
            const client = yield* PgClient.PgClient
            expect((yield* client.query<{ n: number }>("select count(*)::int as n from wh_lifecycle_pending"))[0]!.n).toBe(0)
          })
        )
      }),
    60_000
  )

  it.live(
    "gives each envelope of a batch its own security context, never leaking to the next",
    () =>
      Effect.gen(function* () {
        const fired = yield* Ref.make<Array<Fired>>([])
        yield* withPipeline(
          fired,
          Effect.gen(function* () {
            const store = yield* EventStore.EventStore
            const worker = yield* PerspectiveWorker.PerspectiveWorker
            const id = EventId.unsafeMake()
            const users = ["alice", "bob", undefined, "carol", "alice"]
            const ids: Array<string> = []
            for (const userId of users) {
              const result = yield* store.append(
                id,
                [Bank.Deposited.make({ accountId: id, amount: 1 })],
                userId ? { scope: { userId } } : {}
              )
              ids.push(result.events[0]!.eventId)
            }
            yield* worker.awaitIdle
            const seen = (yield* Ref.get(fired)).filter((f) => f.stage === "PostLifecycle")
            expect(ids.map((eventId) => seen.find((f) => f.eventId === eventId)?.userId)).toEqual(users)
            expect(seen.filter((f) => f.userId !== undefined).every((f) => f.source === "envelope")).toBe(true)
          })
        )
      }),
    60_000
  )

  it.live(
    "fires orphaned lifecycles at start-up (all perspectives done before a crash, stages never fired)",
    () =>
      Effect.gen(function* () {
        const fired = yield* Ref.make<Array<Fired>>([])
        const eventId = EventId.unsafeMake()
        const streamId = EventId.unsafeMake()
        const orphan = Effect.gen(function* () {
          const client = yield* PgClient.PgClient
          // The event was fully processed (no work rows) but the process died before its lifecycle fired.
          yield* client.query(
            `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope) values ($1, $2, 1, 'Deposited', $3, '{}', '{"userId": "dora"}')`,
            [eventId, streamId, JSON.stringify({ accountId: streamId, amount: 4 })]
          )
          yield* client.query("insert into wh_lifecycle_pending (event_id, stream_id) values ($1, $2)", [eventId, streamId])
        }).pipe(Effect.orDie)
        yield* withPipeline(
          fired,
          Effect.gen(function* () {
            const worker = yield* PerspectiveWorker.PerspectiveWorker
            yield* worker.awaitIdle
            const client = yield* PgClient.PgClient
            expect((yield* client.query<{ n: number }>("select count(*)::int as n from wh_lifecycle_pending"))[0]!.n).toBe(0)
          }),
          orphan
        )
        const all = yield* Ref.get(fired)
        expect(all.filter((f) => f.eventId === eventId).map((f) => [f.stage, f.userId])).toEqual([
          ["PostAllPerspectives", "dora"],
          ["PostLifecycle", "dora"]
        ])
      }),
    60_000
  )

  it.live(
    "an event one perspective dead-lettered: never PostAllPerspectives / PostLifecycle; DeadLettered fires once, naming the perspective",
    () =>
      Effect.gen(function* () {
        const seen = yield* Ref.make<Array<readonly [string, string, ReadonlyArray<string>]>>([])
        const record = (stage: string) => (envelope: { eventId: string }) =>
          Effect.flatMap(LifecycleStage.DeadLetteredBy, (by) => Ref.update(seen, (all) => [...all, [stage, envelope.eventId, by] as const]))
        const receptors = [
          Receptor.make({
            name: "after_all",
            handles: [Bank.Deposited, Bank.Audited],
            stage: "PostAllPerspectives",
            handle: record("PostAllPerspectives")
          }),
          Receptor.make({ name: "last", handles: [Bank.Deposited, Bank.Audited], stage: "PostLifecycle", handle: record("PostLifecycle") }),
          Receptor.make({ name: "lost", handles: [Bank.Deposited, Bank.Audited], stage: "DeadLettered", handle: record("DeadLettered") })
        ]
        const pipeline = PgPerspectivePipeline.layer({
          events: Bank.events,
          perspectives: Bank.perspectives,
          options: { ...fast, maxPerspectiveEventAttempts: 2 },
          failureBackoff: { initial: Duration.millis(5), multiplier: 1, max: Duration.millis(5) },
          receptors
        }).pipe(Layer.provide(PerspectiveRewinder.layerUnsupported), Layer.orDie)
        const { bad, good } = yield* Effect.gen(function* () {
          const store = yield* EventStore.EventStore
          const worker = yield* PerspectiveWorker.PerspectiveWorker
          const id = EventId.unsafeMake()
          const appended = yield* store.append(id, [
            Bank.Deposited.make({ accountId: id, amount: 1 }),
            Bank.Audited.make({ accountId: id, fail: true }),
            Bank.Deposited.make({ accountId: id, amount: 2 })
          ])
          yield* worker.awaitIdle
          const client = yield* PgClient.PgClient
          // Only the dead-lettered event's row is left, parked (claimed_at = infinity) for a retry of its dead letter.
          expect(
            yield* client.query("select event_id::text as event_id, claimed_at = 'infinity' as parked from wh_lifecycle_pending")
          ).toEqual([{ event_id: appended.events[1]!.eventId, parked: true }])
          expect((yield* client.query<{ n: number }>("select count(*)::int as n from wh_dead_letters"))[0]!.n).toBe(1)
          // The operator sees the dead-lettered lifecycle as such, and nothing left owed.
          expect((yield* PgStatus.snapshot()).lifecycles).toEqual({ pending: 0, deadLetteredEvents: 1 })
          return { bad: appended.events[1]!.eventId, good: [appended.events[0]!.eventId, appended.events[2]!.eventId] }
        }).pipe(
          Effect.provide(pipeline),
          Effect.provide(
            InstanceProvider.layerMemory({ serviceName: "lifecycle-test" }).pipe(
              Layer.provideMerge(PgTestDatabase.layer({ schema: "bank" }))
            )
          ),
          Effect.scoped
        )
        const all = yield* Ref.get(seen)
        expect(all.filter(([, id]) => id === bad)).toEqual([["DeadLettered", bad, ["balance"]]])
        for (const id of good)
          expect(all.filter(([, e]) => e === id).map(([stage, , by]) => [stage, by])).toEqual([
            ["PostAllPerspectives", []],
            ["PostLifecycle", []]
          ])
      }),
    60_000
  )
})
