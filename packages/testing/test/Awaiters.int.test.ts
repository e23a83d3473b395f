import { describe, expect, it } from "@effect/vitest"
import {
  EventDefinition,
  EventId,
  EventRegistry,
  EventStore,
  InstanceProvider,
  Perspective,
  PerspectiveRewinder,
  type PerspectiveWorker
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { Duration, Effect, Fiber, Layer, Schema } from "effect"
import * as LifecycleStageAwaiter from "../src/LifecycleStageAwaiter.js"
import * as MessageAwaiter from "../src/MessageAwaiter.js"
import * as MultiHostPerspectiveAwaiter from "../src/MultiHostPerspectiveAwaiter.js"
import * as PgTestDatabase from "../src/PgTestDatabase.js"

const payload = Schema.Struct({ id: Schema.String, n: Schema.Number })
const Added = EventDefinition.make("Added", { payload, streamId: (p) => p.id })
const Broken = EventDefinition.make("Broken", { payload, streamId: (p) => p.id })
const Other = EventDefinition.make("Other", { payload, streamId: (p) => p.id })
const events = EventRegistry.make([Added, Broken, Other])
const sum = Perspective.make({
  name: "sum",
  events: [Added, Broken],
  model: Schema.Struct({ total: Schema.Number }),
  initial: { total: 0 },
  apply: {
    Added: (m, e) => ({ total: m.total + e.payload.n }),
    Broken: () => {
      throw new Error("broken")
    }
  }
})
const fast = { pollingInterval: Duration.millis(50), notifyHealthyPollingInterval: Duration.millis(50), maxPerspectiveEventAttempts: 2 }

const withPipeline = <A, E>(
  stages: LifecycleStageAwaiter.LifecycleStageAwaiterShape,
  body: Effect.Effect<
    A,
    E,
    | EventStore.EventStore
    | PerspectiveWorker.PerspectiveWorker
    | PgClient.PgClient
    | MessageAwaiter.MessageAwaiter
    | MultiHostPerspectiveAwaiter.MultiHostPerspectiveAwaiter
  >
) =>
  Effect.gen(function* () {
    const receptors = yield* stages.receptorsFor([Added, Broken])
    const pipeline = PgPerspectivePipeline.layer({
      events,
      perspectives: [sum],
      options: fast,
      failureBackoff: { initial: Duration.millis(5), multiplier: 1, max: Duration.millis(5) },
      receptors
    }).pipe(Layer.provide(PerspectiveRewinder.layerUnsupported))
    return yield* body.pipe(
      Effect.provide(
        Layer.mergeAll(MessageAwaiter.layer, MultiHostPerspectiveAwaiter.layer).pipe(Layer.provideMerge(pipeline), Layer.orDie)
      )
    )
  }).pipe(
    Effect.provide(
      InstanceProvider.layerMemory({ serviceName: "awaiters-test" }).pipe(Layer.provideMerge(PgTestDatabase.layer({ schema: "awaiters" })))
    ),
    Effect.scoped
  )

describe("testing awaiters", () => {
  it.live(
    "MessageAwaiter: the first matching append, before or during the wait; a timeout names the type and what was seen",
    () =>
      Effect.gen(function* () {
        const stages = yield* LifecycleStageAwaiter.make
        yield* withPipeline(
          stages,
          Effect.gen(function* () {
            const store = yield* EventStore.EventStore
            const id = EventId.unsafeMake()
            const later = yield* Effect.forkChild(
              MessageAwaiter.awaitMessage(Added, { where: (e) => (e.payload as { n: number }).n === 2 })
            )
            yield* store.append(id, [Added.make({ id, n: 1 })])
            yield* store.append(id, [Added.make({ id, n: 2 })])
            expect((yield* Fiber.join(later)).streamVersion).toBe(2)
            expect((yield* MessageAwaiter.awaitMessage("Added")).streamVersion).toBe(1) // recorded before the wait
            const error = yield* Effect.flip(MessageAwaiter.awaitMessage(Other, { timeout: Duration.millis(50) }))
            expect(error._tag).toBe("AwaiterTimeoutError")
            expect(error.message).toContain(`"Other"`)
            expect(error.message).toContain("seen: Added")
          })
        )
      }),
    60_000
  )

  it.live(
    "LifecycleStageAwaiter and MultiHostPerspectiveAwaiter: stages per event; perspectives done, dead letters named; timeouts name what is missing",
    () =>
      Effect.gen(function* () {
        const stages = yield* LifecycleStageAwaiter.make
        yield* withPipeline(
          stages,
          Effect.gen(function* () {
            const store = yield* EventStore.EventStore
            const hosts = yield* MultiHostPerspectiveAwaiter.MultiHostPerspectiveAwaiter
            const id = EventId.unsafeMake()
            const appended = yield* store.append(id, [Added.make({ id, n: 1 }), Broken.make({ id, n: 0 })])
            const [good, bad] = appended.events.map((e) => e.eventId) as [string, string]
            const done = yield* hosts.awaitPerspectives({ perspectives: ["sum"], eventIds: [good, bad] })
            expect(done.deadLettered).toEqual([{ perspectiveName: "sum", eventId: bad }])
            expect((yield* stages.awaitStage("PostAllPerspectives", { eventId: good })).envelope.eventId).toBe(good)
            expect((yield* stages.awaitStage("DeadLettered", { eventId: bad })).deadLetteredBy).toEqual(["sum"])
            const never = yield* Effect.flip(stages.awaitStage("PostAllPerspectives", { eventId: bad, timeout: Duration.millis(50) }))
            expect(never.message).toContain(`stage PostAllPerspectives for event ${bad}`)
            expect(never.message).toContain("DeadLettered")
            const missing = EventId.unsafeMake()
            const notYet = yield* Effect.flip(hosts.awaitPerspectives({ eventIds: [missing], timeout: Duration.millis(100) }))
            expect(notYet._tag).toBe("AwaiterTimeoutError")
            expect(notYet.message).toContain(`not yet committed: ${missing}`)
            // A pending event whose apply failed (in backoff): the timeout says why it is stuck.
            const sql = yield* Effect.service(PgClient.PgClient)
            const held = EventId.unsafeMake()
            yield* sql.query(
              `INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, attempts, error, scheduled_for, partition_number)
               VALUES ($1, $2, 'nobody_runs_it', $3, 3, 'boom', now() + interval '1 hour', 0)`,
              [EventId.unsafeMake(), id, held]
            )
            const stuck = yield* Effect.flip(hosts.awaitPerspectives({ perspectives: ["nobody_runs_it"], timeout: Duration.millis(100) }))
            expect(stuck.message).toContain(`nobody_runs_it/${held} (failing after 3 attempt(s): boom)`)
          })
        )
      }),
    60_000
  )
})
