/**
 * The database-free worker path, assembled from the primitives the PerspectiveWorker loop will use:
 * drain queue -> sliding-window batch -> one fetch for many streams -> dedup cache -> runner -> completion
 * strategy -> completion queue. The loop itself comes later; this proves the pieces fit and keep their promises.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Queue, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as BatchedCompletionStrategy from "../src/internal/batchedCompletionStrategy.js"
import type * as CompletionStrategy from "../src/CompletionStrategy.js"
import * as EventDefinition from "../src/EventDefinition.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveRegistry from "../src/PerspectiveRegistry.js"
import { PerspectiveStatus } from "../src/PerspectiveStatus.js"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"
import * as SlidingWindowBatcher from "../src/internal/slidingWindowBatcher.js"
import * as WorkCoordinator from "../src/WorkCoordinator.js"

const Added = EventDefinition.make("Added", { payload: Schema.Struct({}), streamId: () => "" })
const Broken = EventDefinition.make("Broken", { payload: Schema.Struct({}), streamId: () => "" })

const setup = Effect.gen(function* () {
  const applied = yield* Ref.make<ReadonlyArray<string>>([])
  const log = yield* Ref.make<ReadonlyArray<string>>([])
  const counter = Perspective.make({
    name: "counter",
    events: [Added, Broken],
    model: Schema.Number,
    initial: 0,
    apply: {
      Added: (n) => n + 1,
      Broken: () => {
        throw new Error("cannot apply")
      }
    }
  })
  const registry = yield* PerspectiveRegistry.make([counter])
  const cache = yield* ProcessedEventCache.make({
    observer: {
      deduped: (ids, perspectiveName, streamId) => Ref.update(log, (l) => [...l, `deduped ${ids} ${perspectiveName} ${streamId}`]),
      markedInFlight: (ids) => Ref.update(log, (l) => [...l, `inFlight ${ids}`])
    }
  })
  const strategy = yield* BatchedCompletionStrategy.make()
  const channels = {
    drain: yield* Queue.unbounded<string>(),
    completions: yield* Queue.unbounded<CompletionStrategy.PerspectiveCompletion>()
  }
  const coordinator = yield* WorkCoordinator.WorkCoordinator
  const memory = yield* WorkCoordinator.Memory

  /** One pass over the given pending events of one (stream, perspective). */
  const processGroup = (events: ReadonlyArray<WorkCoordinator.PendingEvent>) =>
    Effect.gen(function* () {
      const { streamId, perspectiveName } = events[0]!
      const runner = yield* registry.get(perspectiveName)
      const fresh = new Set(
        yield* cache.filterUnprocessed(
          events.map((e) => e.workId),
          perspectiveName,
          streamId
        )
      )
      const todo = events.filter((e) => fresh.has(e.workId))
      if (todo.length === 0) return
      const outcome = yield* runner.run(
        streamId,
        undefined,
        todo.map((e) => ({ ...e, streamVersion: 1 }))
      )
      const appliedWork = todo.filter((e) => outcome.appliedEventIds.includes(e.eventId)).map((e) => e.workId)
      yield* Ref.update(applied, (a) => [...a, ...appliedWork])
      yield* Ref.update(log, (l) => [...l, `applied ${appliedWork}`])
      yield* cache.markInFlight(appliedWork)
      if (outcome.lastEventId !== undefined) {
        const completion = {
          workIds: appliedWork,
          streamId,
          perspectiveName,
          lastEventId: outcome.lastEventId,
          status: PerspectiveStatus.Completed
        }
        yield* strategy.reportCompletion(completion, coordinator)
        yield* Queue.offer(channels.completions, completion)
      }
      if (outcome.failure !== undefined) {
        const failed = todo.find((e) => e.eventId === outcome.failure!.eventId)!
        yield* strategy.reportFailure({ workId: failed.workId, streamId, perspectiveName, error: outcome.failure.reason }, coordinator)
      }
    })

  const processStreams = (streamIds: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const events = yield* coordinator.fetchPendingEvents({ instanceId: "A", streamIds })
      const groups = new Map<string, Array<WorkCoordinator.PendingEvent>>()
      for (const e of events) {
        const key = `${e.streamId}/${e.perspectiveName}`
        groups.set(key, [...(groups.get(key) ?? []), e])
      }
      for (const group of groups.values()) yield* processGroup(group)
    })

  return {
    applied: Ref.get(applied),
    log: Ref.get(log),
    registry,
    cache,
    strategy,
    channels,
    coordinator,
    memory,
    processStreams,
    processGroup
  }
})

const work = (workId: string, streamId: string, eventId: string, eventType = "Added") => ({
  workId,
  streamId,
  perspectiveName: "counter",
  eventId,
  eventType,
  payload: {}
})

describe("worker primitives: dedup, strategies, channels", () => {
  it.effect("the same work handed over twice is applied once; the observer names perspective and stream", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const pending = { ...work("w1", "s1", "e1"), attempts: 0 }
      yield* t.processGroup([pending])
      yield* t.processGroup([pending]) // SQL re-delivered it before the completion was acknowledged
      expect(yield* t.applied).toEqual(["w1"])
      expect(yield* t.log).toEqual(["applied w1", "inFlight w1", "deduped w1 counter s1"])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("different work ids are both applied, and streams dedup independently", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.processGroup([{ ...work("w1", "s1", "e1"), attempts: 0 }])
      yield* t.processGroup([{ ...work("w2", "s1", "e2"), attempts: 0 }])
      yield* t.processGroup([{ ...work("w3", "s2", "e1"), attempts: 0 }])
      expect(yield* t.applied).toEqual(["w1", "w2", "w3"])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("drain stream ids are batched and processed through one fetch; completions reach the channel and the batched strategy", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.memory.enqueue([work("w1", "s1", "e1"), work("w2", "s1", "e2"), work("w3", "s2", "e3")])
      const claimed = yield* t.coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 300 })
      yield* Queue.offerAll(t.channels.drain, [...claimed, "s1"]) // a duplicate drain signal coalesces
      const batchFiber = yield* Effect.forkChild(SlidingWindowBatcher.take(t.channels.drain))
      yield* TestClock.adjust("300 millis")
      const batch = yield* Fiber.join(batchFiber)
      expect(batch.items).toEqual(["s1", "s2"])
      yield* t.processStreams(batch.items)
      expect(yield* t.applied).toEqual(["w1", "w2", "w3"])
      expect((yield* Queue.takeAll(t.channels.completions)).map((c) => c.workIds)).toEqual([["w1", "w2"], ["w3"]])
      // batched: nothing reached the coordinator yet
      expect((yield* t.memory.workRows).length).toBe(3)
      expect(yield* t.strategy.flush(t.coordinator)).toEqual({ completions: 2, failures: 0 })
      expect(yield* t.memory.workRows).toEqual([])
      expect((yield* t.memory.cursors).map((c) => [c.streamId, c.lastEventId])).toEqual([
        ["s1", "e2"],
        ["s2", "e3"]
      ])
      // acknowledged: retention starts now
      expect(yield* t.cache.activateRetention).toBe(3)
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("a failure stops the stream at the failing event and is reported through the strategy", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.memory.enqueue([work("w1", "s1", "e1"), work("w2", "s1", "e2", "Broken"), work("w3", "s1", "e3")])
      yield* t.coordinator.claimWork({ instanceId: "A", maxStreams: 10, leaseSeconds: 300 })
      yield* t.processStreams(["s1"])
      expect(yield* t.applied).toEqual(["w1"])
      expect((yield* t.strategy.pendingFailures).map((f) => f.item)).toEqual([
        { workId: "w2", streamId: "s1", perspectiveName: "counter", error: "cannot apply" }
      ])
      yield* t.strategy.flush(t.coordinator)
      const rows = yield* t.memory.workRows
      expect(rows.map((r) => [r.workId, r.attempts])).toEqual([
        ["w2", 1],
        ["w3", 0]
      ])
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )

  it.effect("work for an unregistered perspective is a clear error naming it", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const error = yield* Effect.flip(t.processGroup([{ ...work("w1", "s1", "e1"), perspectiveName: "ghost", attempts: 0 }]))
      expect(error).toMatchObject({ _tag: "UnknownPerspective", perspectiveName: "ghost" })
    }).pipe(Effect.provide(WorkCoordinator.layerMemory))
  )
})
