import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as SyncFilter from "../src/SyncFilter.js"
import { uuid } from "./support.js"

const reasonOf = (builder: SyncFilter.SyncFilterBuilder) => Effect.map(Effect.flip(builder.build()), (e) => e.reason._tag)

describe("SyncFilter", () => {
  describe("entry points", () => {
    it.effect("forStream keeps the stream id", () =>
      Effect.gen(function* () {
        const s = uuid()
        expect((yield* SyncFilter.forStream(s).build()).filter).toEqual({ _tag: "Stream", streamId: s })
      })
    )

    it.effect("forStream with a non-UUID id is a typed error", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(SyncFilter.forStream("order-1").build())
        expect(error._tag).toBe("SyncFilterError")
        expect(error.reason).toEqual({ _tag: "InvalidStreamId", streamId: "order-1" })
      })
    )

    it.effect("forEventTypes takes one type, many types, or arrays of them", () =>
      Effect.gen(function* () {
        expect((yield* SyncFilter.forEventTypes("A").build()).filter).toEqual({ _tag: "EventTypes", eventTypes: ["A"] })
        expect((yield* SyncFilter.forEventTypes("A", "B", "C").build()).filter).toEqual({ _tag: "EventTypes", eventTypes: ["A", "B", "C"] })
        expect((yield* SyncFilter.forEventTypes(["A", "B"], "C").build()).filter).toEqual({
          _tag: "EventTypes",
          eventTypes: ["A", "B", "C"]
        })
      })
    )

    it.effect("forEventTypes with no, absent or empty types is a typed error", () =>
      Effect.gen(function* () {
        expect(yield* reasonOf(SyncFilter.forEventTypes())).toBe("MissingEventTypes")
        expect(yield* reasonOf(SyncFilter.forEventTypes(undefined))).toBe("MissingEventTypes")
        expect(yield* reasonOf(SyncFilter.forEventTypes([]))).toBe("MissingEventTypes")
        expect(yield* reasonOf(SyncFilter.forEventTypes(""))).toBe("InvalidEventType")
      })
    )

    it.effect("currentScope and all", () =>
      Effect.gen(function* () {
        expect((yield* SyncFilter.currentScope().build()).filter).toEqual({ _tag: "CurrentScope" })
        expect((yield* SyncFilter.all().build()).filter).toEqual({ _tag: "All" })
      })
    )
  })

  describe("combinators", () => {
    const s1 = uuid()
    const s2 = uuid()
    const stream = (streamId: string) => ({ _tag: "Stream", streamId })
    const types = (...eventTypes: Array<string>) => ({ _tag: "EventTypes", eventTypes })

    it.effect("each combinator returns a builder with the combined tree", () =>
      Effect.gen(function* () {
        const base = SyncFilter.forStream(s1)
        const cases: Array<[SyncFilter.SyncFilterBuilder, unknown]> = [
          [base.and(SyncFilter.forEventTypes("A")), { _tag: "And", left: stream(s1), right: types("A") }],
          [base.or(SyncFilter.forEventTypes("A")), { _tag: "Or", left: stream(s1), right: types("A") }],
          [base.andStream(s2), { _tag: "And", left: stream(s1), right: stream(s2) }],
          [base.orStream(s2), { _tag: "Or", left: stream(s1), right: stream(s2) }],
          [base.andEventTypes("A", "B"), { _tag: "And", left: stream(s1), right: types("A", "B") }],
          [base.orEventTypes("A"), { _tag: "Or", left: stream(s1), right: types("A") }],
          [base.andCurrentScope(), { _tag: "And", left: stream(s1), right: { _tag: "CurrentScope" } }]
        ]
        for (const [builder, tree] of cases) {
          expect(typeof builder.build).toBe("function")
          expect(builder.filter).toEqual(tree)
        }
      })
    )

    it.effect("nest left to right", () =>
      Effect.gen(function* () {
        const built = yield* SyncFilter.forStream(s1)
          .andEventTypes("A")
          .and(SyncFilter.forEventTypes("B"))
          .or(SyncFilter.forEventTypes("C"))
          .build()
        expect(built.filter).toEqual({
          _tag: "Or",
          left: { _tag: "And", left: { _tag: "And", left: stream(s1), right: types("A") }, right: types("B") },
          right: types("C")
        })
      })
    )

    it.effect("builders are immutable", () =>
      Effect.gen(function* () {
        const base = SyncFilter.forStream(s1)
        base.andEventTypes("A").withTimeout(1)
        const built = yield* base.build()
        expect(built.filter).toEqual(stream(s1))
        expect(Duration.toMillis(built.timeout)).toBe(5000)
      })
    )

    it.effect("an invalid part anywhere in the chain fails build", () =>
      Effect.gen(function* () {
        expect(yield* reasonOf(SyncFilter.forEventTypes("A").andStream("nope"))).toBe("InvalidStreamId")
        expect(yield* reasonOf(SyncFilter.all().or(SyncFilter.forEventTypes()))).toBe("MissingEventTypes")
        expect(yield* reasonOf(SyncFilter.currentScope().orEventTypes())).toBe("MissingEventTypes")
      })
    )
  })

  describe("build", () => {
    it.effect("defaults: 5 s timeout, debugger-aware", () =>
      Effect.gen(function* () {
        const built = yield* SyncFilter.currentScope().build()
        expect(Duration.toMillis(built.timeout)).toBe(5000)
        expect(built.debuggerAwareTimeout).toBe(true)
      })
    )

    it.effect("withTimeout overrides; zero is allowed; negative is a typed error", () =>
      Effect.gen(function* () {
        expect(Duration.toMillis((yield* SyncFilter.all().withTimeout(10_000).build()).timeout)).toBe(10_000)
        expect(Duration.toMillis((yield* SyncFilter.all().withTimeout("2 seconds").build()).timeout)).toBe(2000)
        expect(Duration.toMillis((yield* SyncFilter.all().withTimeout(0).build()).timeout)).toBe(0)
        expect(yield* reasonOf(SyncFilter.all().withTimeout(-1))).toBe("InvalidTimeout")
        expect(yield* reasonOf(SyncFilter.all().withTimeout(Number.NaN))).toBe("InvalidTimeout")
      })
    )

    it.effect("withDebuggerAwareTimeout(false) turns it off", () =>
      Effect.gen(function* () {
        expect((yield* SyncFilter.all().withDebuggerAwareTimeout(false).build()).debuggerAwareTimeout).toBe(false)
      })
    )
  })

  describe("a filter that can match nothing says so", () => {
    const [s1, s2] = [uuid(), uuid()]

    it.effect("an AND no event can meet is refused at build (MatchesNothing), wherever it sits in the tree", () =>
      Effect.gen(function* () {
        const refused = [
          SyncFilter.forStream(s1).andStream(s2),
          SyncFilter.forEventTypes("A").andEventTypes("B"),
          SyncFilter.forStream(s1).andEventTypes("A").and(SyncFilter.forEventTypes("B").orStream(s2)),
          SyncFilter.all().and(SyncFilter.forStream(s1)).and(SyncFilter.forStream(s2).andCurrentScope())
        ]
        for (const builder of refused) expect(yield* reasonOf(builder)).toBe("MatchesNothing")
        const error = yield* Effect.flip(SyncFilter.forStream(s1).andStream(s2).build())
        expect(error.message).toBe(
          `the filter (forStream(${s1}) AND forStream(${s2})) can match no event: it joins with AND two different streams, or event types with none in common`
        )
        // A filter built by hand is checked the same way.
        expect((yield* Effect.flip(SyncFilter.check(SyncFilter.forEventTypes("A").andEventTypes("B").filter))).reason._tag).toBe(
          "MatchesNothing"
        )
        const accepted = [
          SyncFilter.forStream(s1).andStream(s1),
          SyncFilter.forEventTypes("A", "B").andEventTypes("B"),
          SyncFilter.forStream(s1).andStream(s2).or(SyncFilter.forEventTypes("A")),
          SyncFilter.currentScope().andStream(s1).andEventTypes("A"),
          SyncFilter.all().andEventTypes("A")
        ]
        for (const builder of accepted) yield* builder.build()
      })
    )

    it("needsScope: true only when nothing but this scope's events can match", () => {
      const needs = (builder: SyncFilter.SyncFilterBuilder) => SyncFilter.needsScope(builder.filter)
      expect(needs(SyncFilter.currentScope())).toBe(true)
      expect(needs(SyncFilter.forStream(s1).andCurrentScope())).toBe(true)
      expect(needs(SyncFilter.currentScope().or(SyncFilter.forEventTypes("A").andCurrentScope()))).toBe(true)
      expect(needs(SyncFilter.currentScope().orStream(s1))).toBe(false)
      expect(needs(SyncFilter.forEventTypes("A"))).toBe(false)
      expect(needs(SyncFilter.all())).toBe(false)
    })
  })

  describe("matches", () => {
    const s = uuid()
    const other = uuid()
    it.effect("evaluates the tree", () =>
      Effect.gen(function* () {
        const filter = (yield* SyncFilter.forStream(s).andEventTypes("A").orEventTypes("B").build()).filter
        const m = (streamId: string, eventType: string, inCurrentScope = false) =>
          SyncFilter.matches(filter, { streamId, eventType, inCurrentScope })
        expect([m(s, "A"), m(s, "C"), m(other, "A"), m(other, "B")]).toEqual([true, false, false, true])
        const scope = (yield* SyncFilter.currentScope().build()).filter
        expect(SyncFilter.matches(scope, { streamId: s, eventType: "A", inCurrentScope: false })).toBe(false)
        expect(SyncFilter.matches(scope, { streamId: s, eventType: "A", inCurrentScope: true })).toBe(true)
      })
    )
  })
})
