import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as TrackedEventTypeRegistry from "../src/TrackedEventTypeRegistry.js"

describe("TrackedEventTypeRegistry", () => {
  it.effect("static mappings: shouldTrack, first and all perspective names", () =>
    Effect.gen(function* () {
      const registry = yield* TrackedEventTypeRegistry.make({
        OrderCreated: ["OrderPerspective", "ReportingPerspective"],
        PaymentProcessed: ["PaymentPerspective"]
      })
      expect(yield* registry.shouldTrack("OrderCreated")).toBe(true)
      expect(yield* registry.getPerspectiveName("OrderCreated")).toEqual(Option.some("OrderPerspective"))
      expect(yield* registry.getPerspectiveNames("OrderCreated")).toEqual(["OrderPerspective", "ReportingPerspective"])
      expect(yield* registry.getPerspectiveNames("PaymentProcessed")).toEqual(["PaymentPerspective"])
    })
  )

  it.effect("unknown type -> none", () =>
    Effect.gen(function* () {
      const registry = yield* TrackedEventTypeRegistry.make({ OrderCreated: ["OrderPerspective"] })
      expect(yield* registry.shouldTrack("Unknown")).toBe(false)
      expect(yield* registry.getPerspectiveName("Unknown")).toEqual(Option.none())
      expect(yield* registry.getPerspectiveNames("Unknown")).toEqual([])
    })
  )

  it.effect("dynamic registration after construction; duplicates count once", () =>
    Effect.gen(function* () {
      const registry = yield* TrackedEventTypeRegistry.TrackedEventTypeRegistry
      expect(yield* registry.shouldTrack("OrderShipped")).toBe(false)
      yield* registry.register("OrderShipped", "ShippingPerspective")
      yield* registry.register("OrderShipped", ["ShippingPerspective", "OrderPerspective"])
      expect(yield* registry.getPerspectiveNames("OrderShipped")).toEqual(["ShippingPerspective", "OrderPerspective"])
      expect(yield* registry.getPerspectiveNames("OrderCreated")).toEqual(["OrderPerspective", "AuditPerspective"])
      yield* registry.register("OrderCreated", "AuditPerspective")
      expect(yield* registry.getPerspectiveNames("OrderCreated")).toEqual(["OrderPerspective", "AuditPerspective"])
    }).pipe(Effect.provide(TrackedEventTypeRegistry.layer([["OrderCreated", ["OrderPerspective", "AuditPerspective"]]])))
  )

  it.effect("bad input -> typed error", () =>
    Effect.gen(function* () {
      const registry = yield* TrackedEventTypeRegistry.make()
      const reason = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string } }>) =>
        Effect.map(Effect.flip(effect), (e) => e.reason._tag)
      expect(yield* reason(registry.register("", "P"))).toBe("InvalidEventType")
      expect(yield* reason(registry.register("A", ""))).toBe("InvalidPerspectiveName")
      expect(yield* reason(registry.register("A", []))).toBe("InvalidPerspectiveName")
      expect(yield* reason(TrackedEventTypeRegistry.make({ A: ["P", " "] }))).toBe("InvalidPerspectiveName")
      const error = yield* Effect.flip(
        Effect.provide(TrackedEventTypeRegistry.TrackedEventTypeRegistry, TrackedEventTypeRegistry.layer({ "": ["P"] }))
      )
      expect(error._tag).toBe("TrackedEventTypeRegistryError")
      expect(yield* registry.shouldTrack("A")).toBe(false)
    })
  )

  it.effect("consumes codegen's generated trackedEventTypes map as is, alone or with the perspectives' routing", () =>
    Effect.gen(function* () {
      // The exact declared type codegen emits in whizbang.generated.ts.
      const trackedEventTypes: Readonly<Record<string, ReadonlyArray<string>>> = {
        OrderPaid: ["customer_stats", "order_summary"],
        OrderPlaced: ["customer_stats"]
      }
      const alone = yield* TrackedEventTypeRegistry.make(trackedEventTypes)
      expect(yield* alone.getPerspectiveNames("OrderPaid")).toEqual(["customer_stats", "order_summary"])
      const merged = yield* Effect.provide(
        TrackedEventTypeRegistry.TrackedEventTypeRegistry,
        TrackedEventTypeRegistry.layerFromPerspectives([{ name: "order_summary", eventTypes: ["OrderPlaced"] }], trackedEventTypes)
      )
      expect(yield* merged.getPerspectiveNames("OrderPlaced")).toEqual(["order_summary", "customer_stats"])
      expect(yield* merged.getPerspectiveNames("OrderPaid")).toEqual(["customer_stats", "order_summary"])
    })
  )
})
