import { describe, expect, it } from "@effect/vitest"
import {
  EventDefinition,
  EventRegistry,
  InstanceProvider,
  Perspective,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator
} from "@whizbang/core"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"

const Opened = EventDefinition.make("Opened", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })

const accounts = Perspective.make({
  name: "accounts",
  events: [Opened],
  model: Schema.Struct({ n: Schema.Number }),
  initial: { n: 0 },
  apply: { Opened: (m) => ({ n: m.n + 1 }) }
})

describe("PerspectiveWorker stopped while it commits", () => {
  it.effect("the hooks of what a cycle committed run before the worker stops (a stop mid-commit waits for them)", () => {
    const committed = Deferred.makeUnsafe<void>()
    const released = Deferred.makeUnsafe<void>()
    // The completion reaches the store, then the call waits: the worker is stopped right there.
    const coordinator = Layer.effect(
      WorkCoordinator.WorkCoordinator,
      Effect.map(
        Effect.service(WorkCoordinator.WorkCoordinator),
        (inner): WorkCoordinator.Shape => ({
          ...inner,
          reportCompletions: (completions) =>
            Effect.andThen(
              inner.reportCompletions(completions),
              Effect.andThen(Deferred.succeed(committed, undefined), Deferred.await(released))
            )
        })
      )
    ).pipe(Layer.provideMerge(WorkCoordinator.layerMemory))
    const rewinder = Layer.succeed(PerspectiveRewinder.PerspectiveRewinder, {
      rewindFlagged: (targets) => Effect.succeed(targets.map((t) => ({ ...t, outcome: "notDue" as const, replayedEventIds: [] })))
    })
    return Effect.gen(function* () {
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([
        { workId: "w1", streamId: "s1", perspectiveName: "accounts", eventId: "0000-1", eventType: "Opened", payload: { id: "s1" } }
      ])
      const seen: Array<string> = []
      const scope = yield* Scope.make()
      yield* Scope.provide(
        PerspectiveWorker.make({
          events: EventRegistry.make([Opened]),
          perspectives: [accounts],
          options: { pollingInterval: Duration.millis(100) },
          hooks: { onPerspectiveEventProcessed: (group) => Effect.sync(() => seen.push(...group.eventIds)) }
        }),
        scope
      )
      while (!(yield* Deferred.isDone(committed))) yield* TestClock.adjust(Duration.millis(10))
      // Stop the worker while its completion call is in flight, then let the call return.
      const stopping = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      yield* Deferred.succeed(released, undefined)
      yield* Fiber.join(stopping)
      expect((yield* memory.workRows).length).toBe(0)
      expect(seen).toEqual(["0000-1"])
    }).pipe(Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinder)))
  })

  it.effect("a stop during a rewind does not wait for it, and the hooks of what the cycle committed still run", () => {
    const rewinding = Deferred.makeUnsafe<void>()
    // s2's pair is flagged for a rewind that never ends; s1's work is applied and committed.
    const coordinator = Layer.effect(
      WorkCoordinator.WorkCoordinator,
      Effect.map(
        Effect.service(WorkCoordinator.WorkCoordinator),
        (inner): WorkCoordinator.Shape => ({
          ...inner,
          fetchPendingEvents: (request) =>
            Effect.map(inner.fetchPendingEvents(request), (rows) =>
              rows.map((r) => (r.streamId === "s2" ? { ...r, rewindRequired: true } : r))
            )
        })
      )
    ).pipe(Layer.provideMerge(WorkCoordinator.layerMemory))
    const rewinder = Layer.succeed(PerspectiveRewinder.PerspectiveRewinder, {
      rewindFlagged: () => Effect.andThen(Deferred.succeed(rewinding, undefined), Effect.never)
    })
    return Effect.gen(function* () {
      const memory = yield* WorkCoordinator.Memory
      yield* memory.enqueue([
        { workId: "w1", streamId: "s1", perspectiveName: "accounts", eventId: "0000-1", eventType: "Opened", payload: { id: "s1" } },
        { workId: "w2", streamId: "s2", perspectiveName: "accounts", eventId: "0000-2", eventType: "Opened", payload: { id: "s2" } }
      ])
      const seen: Array<string> = []
      const scope = yield* Scope.make()
      yield* Scope.provide(
        PerspectiveWorker.make({
          events: EventRegistry.make([Opened]),
          perspectives: [accounts],
          options: { pollingInterval: Duration.millis(100) },
          hooks: { onPerspectiveEventProcessed: (group) => Effect.sync(() => seen.push(...group.eventIds)) }
        }),
        scope
      )
      while (!(yield* Deferred.isDone(rewinding))) yield* TestClock.adjust(Duration.millis(10))
      yield* Scope.close(scope, Exit.void)
      expect(seen).toEqual(["0000-1"])
      expect((yield* memory.workRows).map((r) => r.streamId)).toEqual(["s2"])
    }).pipe(Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinder)))
  })
})
