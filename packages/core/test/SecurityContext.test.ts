import { describe, expect, it } from "@effect/vitest"
import { type Envelope, Receptor, SecurityContext } from "@whizbang/core"
import { Effect, Option, Ref } from "effect"

const envelope = (scope: Envelope.EventScope): Envelope.Envelope => ({
  eventId: "01a2267b-9f30-7682-89bb-461c853d3b96",
  streamId: "01a2267b-9f31-73ae-8677-129ce0d24db9",
  streamVersion: 1,
  eventType: "Deposited",
  payload: {},
  metadata: { correlationId: "01a2267b-9f30-7682-89bb-461c853d3b96", causationId: null, timestamp: "2026-01-01T00:00:00.000Z" },
  scope
})

const userOf = Effect.map(SecurityContext.current, (c) => Option.map(c, (s) => [s.userId, s.source] as const))

describe("SecurityContext.withEnvelope", () => {
  it.effect("without a provider, uses the envelope's scope and runs each callback exactly once", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make<Array<string | undefined>>([])
      const seen = yield* SecurityContext.withEnvelope(envelope({ userId: "alice" }), userOf).pipe(
        Effect.provideService(SecurityContext.SecurityCallbacks, [(context) => Ref.update(calls, (all) => [...all, context.userId])])
      )
      expect(seen).toEqual(Option.some(["alice", "envelope"]))
      expect(yield* Ref.get(calls)).toEqual(["alice"])
    })
  )

  it.effect("a provider's context wins, and callbacks do not run", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make(0)
      const seen = yield* SecurityContext.withEnvelope(envelope({ userId: "alice" }), userOf).pipe(
        Effect.provideService(SecurityContext.SecurityContextProvider, {
          establish: () => Effect.succeed(Option.some({ userId: "from-token" }))
        }),
        Effect.provideService(SecurityContext.SecurityCallbacks, [() => Ref.update(calls, (n) => n + 1)])
      )
      expect(seen).toEqual(Option.some(["from-token", "provider"]))
      expect(yield* Ref.get(calls)).toBe(0)
    })
  )

  it.effect("a provider that fails or returns nothing falls back to the envelope's scope", () =>
    Effect.gen(function* () {
      const failing = yield* SecurityContext.withEnvelope(envelope({ userId: "bob" }), userOf).pipe(
        Effect.provideService(SecurityContext.SecurityContextProvider, { establish: () => Effect.fail("token expired") })
      )
      const empty = yield* SecurityContext.withEnvelope(envelope({ userId: "bob" }), userOf).pipe(
        Effect.provideService(SecurityContext.SecurityContextProvider, { establish: () => Effect.succeed(Option.none()) })
      )
      expect(failing).toEqual(Option.some(["bob", "envelope"]))
      expect(empty).toEqual(Option.some(["bob", "envelope"]))
    })
  )

  it.effect("a provider returning nothing for an envelope without scope leaves the context unset", () =>
    Effect.gen(function* () {
      const seen = yield* SecurityContext.withEnvelope(envelope({}), userOf).pipe(
        Effect.provideService(SecurityContext.SecurityContextProvider, { establish: () => Effect.succeed(Option.none()) })
      )
      expect(seen).toEqual(Option.none())
    })
  )

  it.effect("each envelope gets its own context and none leaks after the call", () =>
    Effect.gen(function* () {
      const a = yield* SecurityContext.withEnvelope(envelope({ userId: "a" }), userOf)
      const b = yield* SecurityContext.withEnvelope(envelope({ userId: "b" }), userOf)
      expect([a, b]).toEqual([Option.some(["a", "envelope"]), Option.some(["b", "envelope"])])
      expect(yield* SecurityContext.current).toEqual(Option.none())
    })
  )
})

describe("Receptor.make and Receptor.validate", () => {
  it.effect("validates names, handled types, stage options and sync timeouts", () =>
    Effect.gen(function* () {
      const ok = yield* Receptor.validate(
        Receptor.make({ name: "notify", handles: ["A", "A", "B"], stage: "PostAllPerspectives", handle: () => Effect.void })
      )
      expect(ok.handles).toEqual(["A", "B"])
      expect(ok.mode).toBe("inline")
      const bad = (options: Parameters<typeof Receptor.make>[0]) =>
        Effect.map(Effect.flip(Receptor.validate(Receptor.make(options))), (e) => e.detail)
      expect(yield* bad({ name: "x; drop", handles: ["A"], handle: () => Effect.void })).toMatch(/receptor name/)
      expect(yield* bad({ name: "x", handles: [], handle: () => Effect.void })).toMatch(/at least one/)
      expect(yield* bad({ name: "x", handles: ["A"], perspective: "p", handle: () => Effect.void })).toMatch(/PostPerspective/)
      expect(
        yield* bad({ name: "x", handles: ["A"], awaitPerspectiveSync: [{ perspective: "p", timeout: -5 }], handle: () => Effect.void })
      ).toMatch(/zero or positive/)
    })
  )
})
