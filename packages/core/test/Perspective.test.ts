import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as EventDefinition from "../src/EventDefinition.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveRegistry from "../src/PerspectiveRegistry.js"
import * as PerspectiveRunner from "../src/PerspectiveRunner.js"

const Counter = Schema.Struct({ count: Schema.Number, last: Schema.String })
type Counter = typeof Counter.Type

const event = (eventId: string, eventType: string, payload: unknown = {}): Perspective.EventEnvelope => ({
  eventId,
  streamId: "s1",
  streamVersion: 1,
  eventType,
  payload
})

const order = Schema.Struct({ orderId: Schema.String })
const defineEvent = <const T extends string>(type: T) => EventDefinition.make(type, { payload: order, streamId: (p) => p.orderId })
const OrderPlaced = defineEvent("OrderPlaced")
const OrderCancelled = defineEvent("OrderCancelled")
const OrderPurged = defineEvent("OrderPurged")
const OrderBroken = defineEvent("OrderBroken")
const OrderShipped = defineEvent("OrderShipped")
const OrderCorrupted = defineEvent("OrderCorrupted")
const CustomerRenamed = defineEvent("CustomerRenamed")

const make = (name = "order_counter") =>
  Perspective.make({
    name,
    events: [OrderPlaced, OrderCancelled, OrderPurged, OrderBroken, OrderCorrupted],
    model: Counter,
    initial: { count: 0, last: "" },
    apply: {
      OrderPlaced: (m, e) => ({ count: m.count + 1, last: e.eventId }),
      OrderCancelled: (m) => ({ model: m, action: "delete" }),
      OrderPurged: (m) => Perspective.outcome(m, "purge"),
      OrderBroken: () => {
        throw new Error("boom")
      },
      // A handler bug: returns a model its schema cannot encode.
      OrderCorrupted: () => ({ count: "many", last: "" }) as unknown as Counter
    }
  })
// The definition as the layers see it: validated.
const counter = (name?: string) => Perspective.validate(make(name))

describe("Perspective definitions", () => {
  it("a definition is a plain value; making one never fails", () => {
    const p = make("Not A Valid Name")
    expect(p.name).toBe("Not A Valid Name")
    expect(p.events.map((d) => d.type)).toEqual(["OrderPlaced", "OrderCancelled", "OrderPurged", "OrderBroken", "OrderCorrupted"])
  })

  it.effect("a valid definition knows its table and event types", () =>
    Effect.gen(function* () {
      const p = yield* counter()
      expect(p.tableName).toBe("wh_per_order_counter")
      expect(p.eventTypes).toEqual(["OrderPlaced", "OrderCancelled", "OrderPurged", "OrderBroken", "OrderCorrupted"])
    })
  )

  for (const bad of ["", "Orders", "1orders", "order-summary", "orders; DROP TABLE x", "a".repeat(49), "ordérs", "_x"]) {
    it.effect(`rejects the hostile or invalid name ${JSON.stringify(bad.slice(0, 20))}`, () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(counter(bad))
        expect(error._tag).toBe("InvalidPerspectiveName")
        if (error._tag === "InvalidPerspectiveName") expect(error.perspectiveName).toBe(bad)
      })
    )
  }

  it.effect("accepts a 48-character name and suggests snake_case for camelCase", () =>
    Effect.gen(function* () {
      expect((yield* counter("a".repeat(48))).name).toHaveLength(48)
      const error = yield* Effect.flip(Perspective.validateName("OrderSummaryV2"))
      expect(error.suggestion).toBe("order_summary_v2")
      expect(error.message).toContain(`did you mean "order_summary_v2"`)
      expect((yield* Effect.flip(Perspective.validateName("HTTPLog"))).suggestion).toBe("http_log")
      expect((yield* Effect.flip(Perspective.validateName("x;--"))).suggestion).toBe("x")
    })
  )

  it.effect("an event type listed without a handler is a definition error naming it (only a cast gets there)", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Perspective.validate(
          Perspective.make({
            name: "orders",
            events: [OrderPlaced, OrderShipped],
            model: Counter,
            initial: { count: 0, last: "" },
            apply: { OrderPlaced: (m: Counter) => m } as unknown as Perspective.Handlers<Counter, typeof OrderPlaced | typeof OrderShipped>
          })
        )
      )
      expect(error._tag).toBe("MissingEventHandler")
      if (error._tag === "MissingEventHandler") expect(error.eventTypes).toEqual(["OrderShipped"])
    })
  )

  it.effect("apply normalises plain models and outcomes", () =>
    Effect.gen(function* () {
      const p = yield* counter()
      const m = { count: 1, last: "e0" }
      expect(yield* Perspective.applyEvent(p, m, event("e1", "OrderPlaced"))).toEqual({
        model: { count: 2, last: "e1" },
        action: "none"
      })
      expect((yield* Perspective.applyEvent(p, m, event("e2", "OrderCancelled"))).action).toBe("delete")
      expect((yield* Perspective.applyEvent(p, m, event("e3", "OrderPurged"))).action).toBe("purge")
    })
  )

  it.effect("a throwing handler or an unknown event type fails that event with ApplyFailed", () =>
    Effect.gen(function* () {
      const p = yield* counter()
      const thrown = yield* Effect.flip(Perspective.applyEvent(p, p.initial, event("e1", "OrderBroken")))
      expect(thrown).toMatchObject({ _tag: "ApplyFailed", eventId: "e1", reason: "boom" })
      const unknown = yield* Effect.flip(Perspective.applyEvent(p, p.initial, event("e2", "toString")))
      expect(unknown.reason).toContain(`no handler for event type "toString"`)
    })
  )
})

describe("PerspectiveRunner", () => {
  it.effect("folds events in event-id order from the initial model and encodes the result", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const outcome = yield* runner.run("s1", undefined, [event("e2", "OrderPlaced"), event("e1", "OrderPlaced")])
      expect(outcome).toEqual({
        perspectiveName: "order_counter",
        streamId: "s1",
        model: { count: 2, last: "e2" },
        action: "none",
        appliedEventIds: ["e1", "e2"],
        lastEventId: "e2"
      })
    })
  )

  it.effect("continues from the stored model; the last event's action wins", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const deleted = yield* runner.run("s1", { count: 5, last: "e0" }, [event("e1", "OrderPlaced"), event("e2", "OrderCancelled")])
      expect(deleted.action).toBe("delete")
      expect(deleted.model).toEqual({ count: 6, last: "e1" })
      const recreated = yield* runner.run("s1", undefined, [event("e1", "OrderCancelled"), event("e2", "OrderPlaced")])
      expect(recreated.action).toBe("none")
    })
  )

  it.effect("stops at the failing event and reports what applied before it", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const outcome = yield* runner.run("s1", undefined, [
        event("e1", "OrderPlaced"),
        event("e2", "OrderBroken"),
        event("e3", "OrderPlaced")
      ])
      expect(outcome.appliedEventIds).toEqual(["e1"])
      expect(outcome.lastEventId).toBe("e1")
      expect(outcome.model).toEqual({ count: 1, last: "e1" })
      expect(outcome.failure?.eventId).toBe("e2")
    })
  )

  it.effect("a stored model that does not decode fails at the first event and applies nothing", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const outcome = yield* runner.run("s1", { count: "many" }, [event("e1", "OrderPlaced")])
      expect(outcome.appliedEventIds).toEqual([])
      expect(outcome.failure?.eventId).toBe("e1")
      expect(outcome.failure?.reason).toContain("stored model no longer decodes")
      expect(outcome.failure?.reason).toContain("no event is at fault")
      expect(outcome.storedModelUnreadable).toBe(true)
    })
  )

  it.effect("a model that does not encode is blamed on the event that produced it, and the prefix applies", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const outcome = yield* runner.run("s1", undefined, [
        event("e1", "OrderPlaced"),
        event("e2", "OrderPlaced"),
        event("e3", "OrderCorrupted"),
        event("e4", "OrderPlaced")
      ])
      expect(outcome.appliedEventIds).toEqual(["e1", "e2"])
      expect(outcome.lastEventId).toBe("e2")
      expect(outcome.model).toEqual({ count: 2, last: "e2" })
      expect(outcome.failure?.eventId).toBe("e3")
      expect(outcome.failure?.reason).toContain("does not encode")
      expect(outcome.storedModelUnreadable).toBeUndefined()
    })
  )

  it.effect("an unencodable model from the first event applies nothing and blames that event", () =>
    Effect.gen(function* () {
      const runner = PerspectiveRunner.make(yield* counter())
      const outcome = yield* runner.run("s1", { count: 1, last: "e0" }, [event("e1", "OrderCorrupted"), event("e2", "OrderPlaced")])
      expect(outcome.appliedEventIds).toEqual([])
      expect(outcome.lastEventId).toBeUndefined()
      expect(outcome.failure?.eventId).toBe("e1")
    })
  )
})

describe("PerspectiveRegistry", () => {
  const other = Perspective.make({
    name: "order_list",
    events: [OrderPlaced, CustomerRenamed],
    model: Schema.Array(Schema.String),
    initial: [],
    apply: { OrderPlaced: (m, e) => [...m, e.eventId], CustomerRenamed: (m) => m }
  })

  it.effect("finds a runner by its registered name and routes event types to perspective names", () =>
    Effect.gen(function* () {
      const registry = yield* PerspectiveRegistry.make([make(), other])
      expect(registry.names).toEqual(["order_counter", "order_list"])
      expect((yield* registry.get("order_list")).perspectiveName).toBe("order_list")
      expect(registry.perspectivesFor("OrderPlaced")).toEqual(["order_counter", "order_list"])
      expect(registry.perspectivesFor("CustomerRenamed")).toEqual(["order_list"])
      expect(registry.perspectivesFor("Nope")).toEqual([])
    })
  )

  it.effect("an unknown name is a typed error naming it", () =>
    Effect.gen(function* () {
      const registry = yield* PerspectiveRegistry.make([make()])
      const error = yield* Effect.flip(registry.get("ghost"))
      expect(error._tag).toBe("UnknownPerspective")
      expect(error.perspectiveName).toBe("ghost")
      expect(error.message).toContain(`"ghost"`)
    })
  )

  it.effect("duplicate perspective names are rejected", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(PerspectiveRegistry.make([make(), make()]))
      expect(error).toMatchObject({ _tag: "DuplicatePerspectiveName", perspectiveName: "order_counter" })
    })
  )

  it.effect("building a registry validates each definition's name", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(PerspectiveRegistry.make([make(), make("OrderCounter")]))
      expect(error).toMatchObject({ _tag: "InvalidPerspectiveName", perspectiveName: "OrderCounter", suggestion: "order_counter" })
    })
  )

  it.effect("the layer provides the registry service", () =>
    Effect.gen(function* () {
      const p = yield* counter()
      const names = yield* Effect.gen(function* () {
        return (yield* PerspectiveRegistry.PerspectiveRegistry).names
      }).pipe(Effect.provide(PerspectiveRegistry.layer([p])))
      expect(names).toEqual(["order_counter"])
    })
  )
})
