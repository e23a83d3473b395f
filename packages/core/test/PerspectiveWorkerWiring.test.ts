import { describe, expect, it } from "@effect/vitest"
import {
  EventDefinition,
  EventRegistry,
  InstanceProvider,
  Perspective,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  Receptor,
  WorkCoordinator
} from "@whizbang/core"
import { Effect, Layer, Schema, type Scope } from "effect"

const Opened = EventDefinition.make("Opened", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })
// Not registered with the worker below.
const Closed = EventDefinition.make("Closed", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })

const ports = Layer.mergeAll(
  WorkCoordinator.layerMemory,
  PerspectiveStore.layerMemory,
  InstanceProvider.layerMemory(),
  PerspectiveRewinder.layerUnsupported
)

describe("PerspectiveWorker start-up checks", () => {
  it.effect("refuses wiring that names unknown event types or perspectives, listing every problem", () =>
    Effect.gen(function* () {
      const events = EventRegistry.make([Opened])
      const perspective = Perspective.make({
        name: "accounts",
        events: [Opened, Closed],
        model: Schema.Struct({ n: Schema.Number }),
        initial: { n: 0 },
        apply: { Opened: (m) => ({ n: m.n + 1 }), Closed: (m) => m }
      })
      const receptor = Receptor.make({
        name: "notify",
        handles: ["Shipped"],
        stage: "PostPerspective",
        perspective: "orders",
        handle: () => Effect.void
      })
      const error = yield* Effect.flip(
        Effect.scoped(PerspectiveWorker.make({ events, perspectives: [perspective], receptors: [receptor] }))
      )
      expect(error._tag).toBe("WorkerConfigurationError")
      const problems = (error as PerspectiveWorker.WorkerConfigurationError).problems
      expect(problems).toHaveLength(3)
      expect(problems.join("\n")).toMatch(/"accounts" handles "Closed"/)
      expect(problems.join("\n")).toMatch(/"notify" fires on "Shipped"/)
      expect(problems.join("\n")).toMatch(/perspective "orders", which is not registered/)
    }).pipe(Effect.provide(ports))
  )

  it.effect("refuses invalid options with a typed error naming the option", () =>
    Effect.gen(function* () {
      const events = EventRegistry.make([Opened])
      const error = yield* Effect.flip(
        Effect.scoped(PerspectiveWorker.make({ events, perspectives: [], options: { maxStreamsPerBatch: -1 } }))
      )
      expect(error._tag).toBe("InvalidWorkerOptions")
      expect(error.message).toMatch(/maxStreamsPerBatch/)
    }).pipe(Effect.provide(ports))
  )

  it.effect("definitions are plain values: their mistakes fail the worker's start-up with their typed errors", () =>
    Effect.gen(function* () {
      const events = EventRegistry.make([Opened])
      const perspective = (name: string) =>
        Perspective.make({
          name,
          events: [Opened],
          model: Schema.Struct({ n: Schema.Number }),
          initial: { n: 0 },
          apply: { Opened: (m) => m }
        })
      const start = (config: PerspectiveWorker.Config) => Effect.flip(Effect.scoped(PerspectiveWorker.make(config)))

      const badName = yield* start({ events, perspectives: [perspective("Accounts")] })
      expect(badName).toMatchObject({ _tag: "InvalidPerspectiveName", perspectiveName: "Accounts", suggestion: "accounts" })
      const duplicate = yield* start({ events, perspectives: [perspective("accounts"), perspective("accounts")] })
      expect(duplicate).toMatchObject({ _tag: "DuplicatePerspectiveName", perspectiveName: "accounts" })
      const twice = yield* start({ events: EventRegistry.make([Opened, Opened]), perspectives: [] })
      expect(twice).toMatchObject({ _tag: "InvalidEventDefinition", eventType: "Opened", detail: "defined twice" })
      const receptor = Receptor.make({ name: "1bad", handles: [Opened], stage: "PostPerspective", handle: () => Effect.void })
      const badReceptor = yield* start({ events, perspectives: [], receptors: [receptor] })
      expect(badReceptor).toMatchObject({ _tag: "InvalidReceptor", receptor: "1bad" })
    }).pipe(Effect.provide(ports))
  )

  it.effect("requires a PerspectiveRewinder: a composition without one does not type-check, and forced, its start dies naming it", () =>
    Effect.gen(function* () {
      const events = EventRegistry.make([Opened])
      const withoutRewinder = Layer.mergeAll(WorkCoordinator.layerMemory, PerspectiveStore.layerMemory, InstanceProvider.layerMemory())
      const worker = PerspectiveWorker.layer({ events, perspectives: [] }).pipe(Layer.provide(withoutRewinder))
      // @ts-expect-error the worker still requires PerspectiveRewinder
      const build: Effect.Effect<unknown, unknown, Scope.Scope> = Layer.build(worker)
      const exit = yield* Effect.exit(Effect.scoped(build))
      expect(exit._tag).toBe("Failure")
      expect(String(exit)).toMatch(/PerspectiveRewinder/)
    })
  )
})
