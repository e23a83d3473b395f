import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, LifecycleStage, PerspectiveRewinder, PerspectiveWorker, Receptor } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgStatus } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Effect, Layer, Ref } from "effect"
import * as DeadLetters from "../src/DeadLetters.js"
import * as Bank from "./fixtures/bank.js"

// A dead-lettered event's lifecycle ends in the DeadLettered stage; retrying its dead letter successfully must then
// fire PostAllPerspectives / PostLifecycle (the lifecycle is parked, not forgotten), and discarding it must end it.

type Seen = ReadonlyArray<readonly [stage: string, eventId: string, deadLetteredBy: ReadonlyArray<string>]>

const harness = Effect.gen(function* () {
  const seen = yield* Ref.make<Seen>([])
  const postLifecycle = yield* Deferred.make<string>()
  const deadLettered = yield* Deferred.make<string>()
  const record = (stage: string) => (envelope: { eventId: string }) =>
    Effect.gen(function* () {
      const by = yield* LifecycleStage.DeadLetteredBy
      yield* Ref.update(seen, (all) => [...all, [stage, envelope.eventId, by] as const])
      if (stage === "PostLifecycle") yield* Deferred.succeed(postLifecycle, envelope.eventId)
      if (stage === "DeadLettered") yield* Deferred.succeed(deadLettered, envelope.eventId)
    })
  const receptors = [
    Receptor.make({ name: "after_all", handles: [Bank.Audited], stage: "PostAllPerspectives", handle: record("PostAllPerspectives") }),
    Receptor.make({ name: "last", handles: [Bank.Audited], stage: "PostLifecycle", handle: record("PostLifecycle") }),
    Receptor.make({ name: "lost", handles: [Bank.Audited], stage: "DeadLettered", handle: record("DeadLettered") })
  ]
  const pipeline = PgPerspectivePipeline.layer({
    events: Bank.events,
    perspectives: Bank.perspectives,
    options: {
      pollingInterval: 50,
      notifyHealthyPollingInterval: 50,
      maxPerspectiveEventAttempts: 2,
      drainBatcher: { slidingWindow: 5, maxWait: 50, maxSize: 1000 }
    },
    failureBackoff: { initial: 5, multiplier: 1, max: 5 },
    receptors
  }).pipe(
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bank" })),
    Layer.provideMerge(PgTestDatabase.layer({ schema: "bank", maxConnections: 8 })),
    Layer.orDie
  )
  return { seen, postLifecycle, deadLettered, pipeline }
})

const lifecycleRows = Effect.flatMap(PgClient.PgClient, (client) =>
  client.query<{ parked: boolean }>("select claimed_at = 'infinity' as parked from wh_lifecycle_pending")
)

/** Appends one rejected audit and waits until its DeadLettered stage fired; returns the event and its letter. */
const deadLetterOne = (deadLettered: Deferred.Deferred<string>) =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    const client = yield* PgClient.PgClient
    const id = EventId.unsafeMake()
    Bank.audits.reject = true
    const appended = yield* store.append(id, [Bank.Audited.make({ accountId: id })])
    const eventId = appended.events[0]!.eventId
    expect(yield* Deferred.await(deadLettered).pipe(Effect.timeout("20 seconds"))).toBe(eventId)
    // The stage fired; the lifecycle row is parked right after its receptors ran: go round idle polls until then.
    yield* Effect.gen(function* () {
      while ((yield* lifecycleRows).length !== 1 || !(yield* lifecycleRows)[0]!.parked) yield* PerspectiveWorker.awaitIdle
    }).pipe(Effect.timeout("20 seconds"))
    const [letter] = yield* client.query<{ id: string }>("select id from wh_dead_letters where event_id = $1", [eventId])
    return { eventId, letterId: letter!.id }
  })

describe("a dead-lettered event's lifecycle", () => {
  it.live(
    "retried successfully: PostAllPerspectives and PostLifecycle fire once after DeadLettered; nothing is left owed",
    () =>
      Effect.gen(function* () {
        const { seen, postLifecycle, deadLettered, pipeline } = yield* harness
        yield* Effect.gen(function* () {
          const { eventId, letterId } = yield* deadLetterOne(deadLettered)
          // Parked, not owed: the operator sees a dead-lettered lifecycle and nothing pending.
          expect(yield* lifecycleRows).toEqual([{ parked: true }])
          expect((yield* PgStatus.snapshot()).lifecycles).toEqual({ pending: 0, deadLetteredEvents: 1 })

          Bank.audits.reject = false
          const retried = yield* DeadLetters.retry(letterId)
          expect(retried.eventId).toBe(eventId)
          expect(yield* Deferred.await(postLifecycle).pipe(Effect.timeout("20 seconds"))).toBe(eventId)
          yield* PerspectiveWorker.awaitIdle
          expect(yield* Ref.get(seen)).toEqual([
            ["DeadLettered", eventId, ["balance"]],
            ["PostAllPerspectives", eventId, []],
            ["PostLifecycle", eventId, []]
          ])
          expect(yield* lifecycleRows).toEqual([])
          expect((yield* PgStatus.snapshot()).lifecycles).toEqual({ pending: 0, deadLetteredEvents: 0 })
        }).pipe(Effect.provide(pipeline), Effect.scoped)
      }),
    60_000
  )

  it.live(
    "discarded: the parked lifecycle is deleted and no completion stage ever fires",
    () =>
      Effect.gen(function* () {
        const { seen, deadLettered, pipeline } = yield* harness
        yield* Effect.gen(function* () {
          const { eventId, letterId } = yield* deadLetterOne(deadLettered)
          expect(yield* lifecycleRows).toEqual([{ parked: true }])
          yield* DeadLetters.discard(letterId)
          expect(yield* lifecycleRows).toEqual([])
          // A worker restart's orphan reconciliation finds nothing to fire either.
          yield* PerspectiveWorker.awaitIdle
          expect(yield* Ref.get(seen)).toEqual([["DeadLettered", eventId, ["balance"]]])
          expect((yield* PgStatus.snapshot()).lifecycles).toEqual({ pending: 0, deadLetteredEvents: 0 })
        }).pipe(Effect.provide(pipeline), Effect.scoped)
      }),
    60_000
  )
})
