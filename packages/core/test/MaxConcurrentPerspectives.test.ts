/**
 * `maxConcurrentPerspectives` bounds how many perspectives' model loads one cycle runs at once (the applies are
 * synchronous folds, so the loads are what overlaps).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Schema } from "effect"
import * as EventId from "../src/EventId.js"
import * as EventDefinition from "../src/EventDefinition.js"
import * as EventRegistry from "../src/EventRegistry.js"
import * as InstanceProvider from "../src/InstanceProvider.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveRewinder from "../src/PerspectiveRewinder.js"
import * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as PerspectiveWorker from "../src/PerspectiveWorker.js"
import * as WorkCoordinator from "../src/WorkCoordinator.js"

const Pinged = EventDefinition.make("Pinged", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })
const events = EventRegistry.make([Pinged])
const perspectives = ["p_one", "p_two", "p_three"].map((name) =>
  Perspective.make({
    name,
    events: [Pinged],
    model: Schema.Struct({ n: Schema.Number }),
    initial: { n: 0 },
    apply: { Pinged: (m) => ({ n: m.n + 1 }) }
  })
)

// A store whose model loads take a while and record how many run at once.
const countingStore = (peak: { now: number; max: number }) =>
  Layer.effect(
    PerspectiveStore.PerspectiveStore,
    Effect.map(PerspectiveStore.makeMemory, (store) =>
      PerspectiveStore.PerspectiveStore.of({
        ...store,
        getMany: (name, ids) =>
          Effect.acquireUseRelease(
            Effect.sync(() => {
              peak.now++
              peak.max = Math.max(peak.max, peak.now)
            }),
            () => Effect.andThen(Effect.sleep(Duration.millis(30)), store.getMany(name, ids)),
            () => Effect.sync(() => void peak.now--)
          )
      })
    )
  )

const peakLoads = (maxConcurrentPerspectives: number) =>
  Effect.gen(function* () {
    const peak = { now: 0, max: 0 }
    yield* Effect.gen(function* () {
      const memory = yield* WorkCoordinator.Memory
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const streamId = EventId.unsafeMake()
      const payload = yield* events.encode("Pinged", { id: streamId })
      yield* memory.enqueue(
        perspectives.map((p) => ({
          workId: EventId.unsafeMake(),
          streamId,
          perspectiveName: p.name,
          eventId: EventId.unsafeMake(),
          eventType: "Pinged",
          payload
        }))
      )
      yield* worker.requestImmediatePoll
      yield* worker.awaitIdle
      expect((yield* worker.stats).eventsApplied).toBe(3)
    }).pipe(
      Effect.provide(
        PerspectiveWorker.layer({
          events,
          perspectives,
          options: { maxConcurrentPerspectives, pollingInterval: Duration.millis(20) }
        }).pipe(
          Layer.provideMerge(
            Layer.mergeAll(
              WorkCoordinator.layerMemory,
              countingStore(peak),
              InstanceProvider.layerMemory(),
              PerspectiveRewinder.layerUnsupported
            )
          )
        )
      ),
      Effect.scoped
    )
    return peak.max
  })

describe("maxConcurrentPerspectives", () => {
  it.live("1: a cycle loads one perspective's models at a time", () => Effect.map(peakLoads(1), (max) => expect(max).toBe(1)), 20_000)
  it.live("3: the three perspectives of a cycle load together", () => Effect.map(peakLoads(3), (max) => expect(max).toBe(3)), 20_000)
})
