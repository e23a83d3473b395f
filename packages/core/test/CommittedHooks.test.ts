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

const audit = Perspective.make({
  name: "audit",
  events: [Opened],
  model: Schema.Struct({ n: Schema.Number }),
  initial: { n: 0 },
  apply: { Opened: (m) => ({ n: m.n + 1 }) }
})

/** The memory coordinator with some of its operations replaced (`change` gets the real one). */
const coordinatorWith = (change: (inner: WorkCoordinator.Shape) => Partial<WorkCoordinator.Shape>) =>
  Layer.effect(
    WorkCoordinator.WorkCoordinator,
    Effect.map(Effect.service(WorkCoordinator.WorkCoordinator), (inner): WorkCoordinator.Shape => ({ ...inner, ...change(inner) }))
  ).pipe(Layer.provideMerge(WorkCoordinator.layerMemory))

/** A rewinder with nothing due (no pair is flagged in these tests). */
const rewinderNotDue = Layer.succeed(PerspectiveRewinder.PerspectiveRewinder, {
  rewindFlagged: (targets) => Effect.succeed(targets.map((t) => ({ ...t, outcome: "notDue" as const, replayedEventIds: [] })))
})

describe("PerspectiveWorker stopped around a commit", () => {
  it.effect(
    "a stop while a completion call hangs interrupts it after the grace: a database that does not answer does not hold the stop",
    () => {
      const called = Deferred.makeUnsafe<void>()
      // The completion reaches the store, then the call never returns (a connection that went silent).
      const coordinator = coordinatorWith((inner) => ({
        reportCompletions: (completions) =>
          Effect.andThen(inner.reportCompletions(completions), Effect.andThen(Deferred.succeed(called, undefined), Effect.never))
      }))
      return Effect.gen(function* () {
        const memory = yield* WorkCoordinator.Memory
        yield* memory.enqueue([
          { workId: "w1", streamId: "s1", perspectiveName: "accounts", eventId: "0000-1", eventType: "Opened", payload: { id: "s1" } }
        ])
        const scope = yield* Scope.make()
        yield* Scope.provide(
          PerspectiveWorker.make({
            events: EventRegistry.make([Opened]),
            perspectives: [accounts],
            options: { pollingInterval: Duration.millis(100) }
          }),
          scope
        )
        while (!(yield* Deferred.isDone(called))) yield* TestClock.adjust(Duration.millis(10))
        const stopping = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
        yield* TestClock.adjust(Duration.millis(4_900))
        expect(stopping.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(Duration.millis(200))
        const stopped = yield* Effect.timeoutOption(Fiber.join(stopping), Duration.seconds(5))
        expect(stopped._tag).toBe("Some")
        expect((yield* memory.workRows).length).toBe(0)
      }).pipe(Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinderNotDue)))
    }
  )

  it.effect("a stop while a committed completion's answer is on its way waits for it, and the hooks of what it committed run", () => {
    const called = Deferred.makeUnsafe<void>()
    const answer = Deferred.makeUnsafe<void>()
    // The completion commits (the memory store), then its answer is slow to come back.
    const coordinator = coordinatorWith((inner) => ({
      reportCompletions: (completions) =>
        Effect.andThen(inner.reportCompletions(completions), Effect.andThen(Deferred.succeed(called, undefined), Deferred.await(answer)))
    }))
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
      while (!(yield* Deferred.isDone(called))) yield* TestClock.adjust(Duration.millis(10))
      const stopping = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* TestClock.adjust(Duration.seconds(1))
      expect(stopping.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(answer, undefined)
      yield* Fiber.join(stopping)
      expect(seen).toEqual(["0000-1"])
      expect((yield* memory.workRows).length).toBe(0)
    }).pipe(Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinderNotDue)))
  })

  it.effect(
    "a stop after the commit (during the rewind that follows it) does not wait for the rewind, and the hooks of what the cycle committed still run",
    () => {
      const rewinding = Deferred.makeUnsafe<void>()
      // One stream, so one cycle: its `audit` pair is flagged for a rewind that never ends; its `accounts` work is
      // applied and committed first.
      const coordinator = coordinatorWith((inner) => ({
        fetchPendingEvents: (request) =>
          Effect.map(inner.fetchPendingEvents(request), (rows) =>
            rows.map((r) => (r.perspectiveName === "audit" ? { ...r, rewindRequired: true } : r))
          )
      }))
      const rewinder = Layer.succeed(PerspectiveRewinder.PerspectiveRewinder, {
        rewindFlagged: () => Effect.andThen(Deferred.succeed(rewinding, undefined), Effect.never)
      })
      return Effect.gen(function* () {
        const memory = yield* WorkCoordinator.Memory
        yield* memory.enqueue([
          { workId: "w1", streamId: "s1", perspectiveName: "accounts", eventId: "0000-1", eventType: "Opened", payload: { id: "s1" } },
          { workId: "w2", streamId: "s1", perspectiveName: "audit", eventId: "0000-1", eventType: "Opened", payload: { id: "s1" } }
        ])
        const seen: Array<string> = []
        const scope = yield* Scope.make()
        yield* Scope.provide(
          PerspectiveWorker.make({
            events: EventRegistry.make([Opened]),
            perspectives: [accounts, audit],
            options: { pollingInterval: Duration.millis(100) },
            hooks: { onPerspectiveEventProcessed: (group) => Effect.sync(() => seen.push(...group.eventIds)) }
          }),
          scope
        )
        while (!(yield* Deferred.isDone(rewinding))) yield* TestClock.adjust(Duration.millis(10))
        yield* Scope.close(scope, Exit.void)
        expect(seen).toEqual(["0000-1"])
        expect((yield* memory.workRows).map((r) => r.perspectiveName)).toEqual(["audit"])
      }).pipe(Effect.provide(Layer.mergeAll(coordinator, PerspectiveStore.layerMemory, InstanceProvider.layerMemory(), rewinder)))
    }
  )
})
