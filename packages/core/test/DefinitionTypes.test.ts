// Type tests: `pnpm typecheck` fails when a `@ts-expect-error` below stops being an error, so each one proves
// that a mistake a user can make in a definition does not compile.
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Exit, Option, Schema } from "effect"
import * as EventDefinition from "../src/EventDefinition.js"
import * as EventRegistry from "../src/EventRegistry.js"
import * as Perspective from "../src/Perspective.js"
import * as PerspectiveStore from "../src/PerspectiveStore.js"
import * as Receptor from "../src/Receptor.js"

const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.accountId
})
const Renamed = EventDefinition.make("Renamed", {
  payload: Schema.Struct({ accountId: Schema.String, owner: Schema.String }),
  streamId: (p) => p.accountId
})
const Account = Schema.Struct({ total: Schema.Number, owner: Schema.String })

const account = Perspective.make({
  name: "account",
  events: [Deposited, Renamed],
  model: Account,
  initial: { total: 0, owner: "" },
  apply: {
    Deposited: (m, e) => {
      expectTypeOf(e.payload).toEqualTypeOf<{ readonly accountId: string; readonly amount: number }>()
      expectTypeOf(e.eventType).toEqualTypeOf<"Deposited">()
      expectTypeOf(e.streamVersion).toEqualTypeOf<number>()
      return { ...m, total: m.total + e.payload.amount }
    },
    Renamed: (m, e) => ({ ...m, owner: e.payload.owner })
  }
})

describe("definitions are typed values", () => {
  it("a perspective is a plain value typed by its model", () => {
    expectTypeOf(account).toEqualTypeOf<Perspective.Perspective<typeof Account.Type, typeof Account.Encoded>>()
    expectTypeOf<Perspective.ModelOf<typeof account>>().toEqualTypeOf<{ readonly total: number; readonly owner: string }>()
    expect(account.eventTypes).toEqual(["Deposited", "Renamed"])
  })

  it("a misspelled event key, a missing handler and a wrong payload field do not compile", () => {
    const misspelled = Perspective.make({
      name: "misspelled",
      events: [Deposited],
      model: Account,
      initial: { total: 0, owner: "" },
      apply: {
        Deposited: (m) => m,
        // @ts-expect-error "Depositted" is not one of the listed definitions' types
        Depositted: (m: typeof Account.Type) => m
      }
    })
    const missing = Perspective.make({
      name: "missing",
      events: [Deposited, Renamed],
      model: Account,
      initial: { total: 0, owner: "" },
      // @ts-expect-error Renamed is listed, so it needs a handler
      apply: { Deposited: (m) => m }
    })
    const wrongField = Perspective.make({
      name: "wrong_field",
      events: [Deposited],
      model: Account,
      initial: { total: 0, owner: "" },
      // @ts-expect-error Deposited has no "amout"
      apply: { Deposited: (m, e) => ({ ...m, total: m.total + e.payload.amout }) }
    })
    const wrongModel = Perspective.make({
      name: "wrong_model",
      events: [Deposited],
      model: Account,
      initial: { total: 0, owner: "" },
      // @ts-expect-error the handler must return the model (or an outcome of it)
      apply: { Deposited: (m, e) => ({ ...m, total: String(e.payload.amount) }) }
    })
    expect([misspelled, missing, wrongField, wrongModel].map((p) => p.name)).toHaveLength(4)
  })

  it("a receptor's envelope is typed by what it handles", () => {
    const receptor = Receptor.make({
      name: "notify",
      handles: [Deposited, "AuditRequested"],
      handle: (envelope) => {
        if (envelope.eventType === "Deposited") {
          expectTypeOf(envelope.payload).toEqualTypeOf<{ readonly accountId: string; readonly amount: number }>()
        } else {
          expectTypeOf(envelope.payload).toEqualTypeOf<unknown>()
        }
        return Effect.void
      }
    })
    expectTypeOf(receptor).toMatchTypeOf<Receptor.Receptor>()
    Receptor.make({
      name: "typo",
      handles: [Deposited],
      // @ts-expect-error Deposited has no "amout"
      handle: (envelope) => Effect.succeed(envelope.payload.amout)
    })
    Receptor.make({
      name: "before_apply",
      handles: [Deposited],
      // @ts-expect-error no stage runs before a perspective applies an event (see the core README: a redone cycle would re-fire it)
      stage: "PrePerspective",
      handle: () => Effect.void
    })
  })

  it("a receptor names the perspectives it waits for by their definitions", () => {
    const receptor = Receptor.make({
      name: "after_account",
      handles: [Deposited],
      stage: "PostPerspective",
      perspective: account,
      awaitPerspectiveSync: [{ perspective: account, eventTypes: ["Deposited"] }],
      handle: () => Effect.void
    })
    expect([receptor.perspective, receptor.awaitPerspectiveSync.map((s) => s.perspective)]).toEqual(["account", ["account"]])
  })

  it("reads go through the perspective and return its model", () => {
    expectTypeOf(PerspectiveStore.getById(account, "id")).toEqualTypeOf<
      Effect.Effect<
        Option.Option<{ readonly total: number; readonly owner: string }>,
        PerspectiveStore.PerspectiveStoreError,
        PerspectiveStore.PerspectiveStore
      >
    >()
    // Never run: only type-checked.
    const byName = () =>
      // @ts-expect-error a read takes the perspective value, not its name
      PerspectiveStore.getById("account", "id")
    expect(typeof byName).toBe("function")
  })

  it.effect("typed reads decode the stored model; a row that does not decode is a PerspectiveStoreError", () =>
    Effect.gen(function* () {
      const store = yield* PerspectiveStore.PerspectiveStore
      yield* store.writeBatch([
        { perspectiveName: "account", streamId: "a", data: { total: 3, owner: "ann" }, action: "none" },
        { perspectiveName: "account", streamId: "b", data: { total: "three" }, action: "none" }
      ])
      expect(yield* PerspectiveStore.getById(account, "a")).toEqual(Option.some({ total: 3, owner: "ann" }))
      expect(yield* PerspectiveStore.getById(account, "missing")).toEqual(Option.none())
      expect((yield* PerspectiveStore.getRow(account, "a")).pipe(Option.map((row) => row.version))).toEqual(Option.some(1))
      const models = yield* PerspectiveStore.getMany(account, ["a", "missing"])
      expect([...models]).toEqual([["a", { total: 3, owner: "ann" }]])
      const error = yield* Effect.flip(PerspectiveStore.getById(account, "b"))
      expect(error.message).toContain(`the stored model of perspective "account", row b, does not decode`)
      expect((yield* PerspectiveStore.query(account, { where: { owner: "ann" } })).map((row) => row.data.owner)).toEqual(["ann"])
    }).pipe(Effect.provide(PerspectiveStore.layerMemory))
  )

  it("a registry is a plain value; its mistakes surface when validated", () => {
    const registry = EventRegistry.make([Deposited, Deposited])
    const exit = Effect.runSyncExit(EventRegistry.validate(registry))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(Effect.runSync(EventRegistry.validate(EventRegistry.make([Deposited, Renamed]))).definitions.size).toBe(2)
  })
})
