import { describe, expect, it } from "@effect/vitest"
import {
  EventId,
  EventStore,
  InstanceProvider,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator,
  PerspectiveRewinder
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgWorkCoordinator } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Fiber, Layer } from "effect"
import * as Bank from "./fixtures/bank.js"

const options = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 },
  lease: Duration.seconds(1)
}
const config = { events: Bank.events, perspectives: Bank.perspectives, options }

/** A worker whose completion is cut off by `crash`: before the commit, or after it but before the acknowledgement. */
const crashingWorker = (crash: "before-commit" | "after-commit", reached: Deferred.Deferred<void>) => {
  const coordinator = Layer.effect(
    WorkCoordinator.WorkCoordinator,
    Effect.map(PgWorkCoordinator.make({ lease: Duration.seconds(1) }), (real) => ({
      ...real,
      reportCompletions: (completions) =>
        (crash === "after-commit" ? real.reportCompletions(completions) : Effect.void).pipe(
          Effect.andThen(Deferred.succeed(reached, undefined)),
          Effect.andThen(Effect.never)
        )
    }))
  )
  return PerspectiveWorker.layer(config).pipe(
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provide(coordinator),
    Layer.provideMerge(PgPerspectivePipeline.layerPorts(config))
  )
}

const scenario = (crash: "before-commit" | "after-commit") =>
  Effect.gen(function* () {
    const streams = Array.from({ length: 30 }, () => EventId.unsafeMake())
    const reached = yield* Deferred.make<void>()
    yield* Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      yield* Effect.forEach(
        streams,
        (id) => store.append(id, [Bank.Deposited.make({ accountId: id, amount: 5 }), Bank.Withdrawn.make({ accountId: id, amount: 2 })]),
        { discard: true }
      )
    }).pipe(
      Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
      Effect.scoped
    )
    // First process: applies in memory, then "crashes" at the chosen point (its fibers are interrupted).
    const first = yield* Effect.forkChild(
      Effect.never.pipe(
        Effect.provide(
          crashingWorker(crash, reached).pipe(Layer.provide(InstanceProvider.layerMemory({ serviceName: "crashing" })), Layer.orDie)
        ),
        Effect.scoped
      )
    )
    yield* Deferred.await(reached)
    yield* Fiber.interrupt(first)
    // Second process: a fresh instance takes over once the first one's 1 s leases expire.
    yield* Effect.gen(function* () {
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      const client = yield* PgClient.PgClient
      for (;;) {
        yield* worker.awaitIdle
        const [pending] = yield* client.query<{ n: number }>("select count(*)::int as n from wh_perspective_events")
        if (pending!.n === 0) break
      }
      const balances = yield* models.getMany("balance", streams)
      const activity = yield* models.getMany("activity", streams)
      expect(streams.map((id) => balances.get(id)?.data)).toEqual(streams.map(() => ({ balance: 3, audits: 0 })))
      // Every event applied exactly once: two events -> version 2 and two entries in the ordered log.
      expect(streams.map((id) => [activity.get(id)?.version, (activity.get(id)?.data as { order: Array<number> }).order])).toEqual(
        streams.map(() => [2, [5, -2]])
      )
    }).pipe(
      Effect.provide(
        PgPerspectivePipeline.layer(config).pipe(
          Layer.provide(PerspectiveRewinder.layerUnsupported),
          Layer.provide(InstanceProvider.layerMemory({ serviceName: "survivor" })),
          Layer.orDie
        )
      ),
      Effect.scoped
    )
  }).pipe(Effect.provide(PgTestDatabase.layer({ schema: "bank" })), Effect.scoped)

describe("crash between apply and commit", () => {
  it.live("a crash before the commit re-applies the work exactly once on the next instance", () => scenario("before-commit"), 60_000)
  it.live("a crash after the commit but before the acknowledgement applies nothing twice", () => scenario("after-commit"), 60_000)
})
