import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, type Scope } from "effect"
import { type Classify, ParkedWaits, type Settled } from "../src/internal/parkedWaits.js"
import { ChangeSignal, parseDetail, type Processed } from "../src/internal/processedListener.js"

const p = "order_summary"

type Verdict = "processed" | "deadLettered" | "failing"

/** What a failing verdict's event is held by. */
const failure = { eventId: "head", streamId: "s", perspectiveName: p, error: "boom", attempts: 1, nextAttemptAt: undefined }

/** A database that answers from `verdicts` (absent: pending; failing: pending, held) and records every question. */
const fakeDatabase = (verdicts: Record<string, Verdict>) => {
  const asked: Array<ReadonlyArray<string>> = []
  const classify: Classify = (_perspective, ids) =>
    Effect.sync(() => {
      asked.push([...ids].sort())
      return {
        pending: ids.filter((id) => verdicts[id] === undefined || verdicts[id] === "failing"),
        deadLettered: ids.filter((id) => verdicts[id] === "deadLettered"),
        failing: ids.filter((id) => verdicts[id] === "failing").map((eventId) => ({ eventId, failing: failure }))
      }
    })
  return { asked, classify }
}

const setup = (
  verdicts: Record<string, Verdict> = {}
): Effect.Effect<{ signal: ChangeSignal; parked: ParkedWaits; asked: Array<ReadonlyArray<string>> }, never, Scope.Scope> =>
  Effect.gen(function* () {
    const signal = new ChangeSignal()
    const { asked, classify } = fakeDatabase(verdicts)
    const parked = new ParkedWaits(signal, classify)
    yield* parked.start(yield* Effect.scope)
    return { signal, parked, asked }
  })

/** What the listener does per notification. */
const notify = (signal: ChangeSignal, parked: ParkedWaits, processed: Processed) => {
  signal.bump()
  parked.notice(processed)
}

const parkAll = (parked: ParkedWaits, waits: ReadonlyArray<ReadonlyArray<string>>, generation = 0) =>
  Effect.gen(function* () {
    const fibers = yield* Effect.forEach(waits, (ids) => Effect.forkChild(parked.park(p, ids, generation)))
    while (parked.size < waits.length) yield* Effect.yieldNow
    return fibers
  })

const isRunning = (fiber: Fiber.Fiber<Settled>) => fiber.pollUnsafe() === undefined

describe("ParkedWaits", () => {
  it.effect("a notification naming an event settles that wait from its payload: no query, and the other waits are not woken", () =>
    Effect.gen(function* () {
      const { signal, parked, asked } = yield* setup()
      const [a, b] = yield* parkAll(parked, [["e1"], ["e2", "e3"]])
      notify(signal, parked, new Map([[p, new Set(["e1", "e9"])]]))
      expect(yield* Fiber.join(a!)).toEqual({ pendingEventIds: [], deadLetteredEventIds: [], generation: 0 })
      expect(isRunning(b!)).toBe(true)
      // Another perspective's events do not settle it either.
      notify(signal, parked, new Map([["other", new Set(["e2"])]]))
      yield* Effect.yieldNow
      expect(isRunning(b!)).toBe(true)
      notify(signal, parked, new Map([[p, new Set(["e3"])]]))
      expect(yield* Fiber.join(b!)).toEqual({ pendingEventIds: ["e2"], deadLetteredEventIds: [], generation: 0 })
      expect(asked).toEqual([])
      expect(parked.sweeps).toBe(0)
      expect(parked.size).toBe(0)
    }).pipe(Effect.scoped)
  )

  it.effect("a notification without detail runs ONE sweep for every parked wait and wakes only the waits it settles", () =>
    Effect.gen(function* () {
      const { signal, parked, asked } = yield* setup({ e1: "processed", e3: "deadLettered" })
      const [a, b, c] = yield* parkAll(parked, [["e1"], ["e2"], ["e3", "e4"]])
      notify(signal, parked, undefined)
      expect(yield* Fiber.join(a!)).toEqual({ pendingEventIds: [], deadLetteredEventIds: [], generation: 1 })
      expect(yield* Fiber.join(c!)).toEqual({ pendingEventIds: ["e4"], deadLetteredEventIds: ["e3"], generation: 1 })
      expect(isRunning(b!)).toBe(true)
      expect(asked).toEqual([["e1", "e2", "e3", "e4"]])
      expect(parked.sweeps).toBe(1)
      yield* Fiber.interrupt(b!)
      expect(parked.size).toBe(0)
    }).pipe(Effect.scoped)
  )

  it.effect("a sweep also wakes a wait held by a failing event (a failure notifies without detail), with the failure", () =>
    Effect.gen(function* () {
      const { signal, parked } = yield* setup({ e2: "failing" })
      const [a, b] = yield* parkAll(parked, [["e1"], ["e2", "e3"]])
      notify(signal, parked, undefined)
      expect(yield* Fiber.join(b!)).toEqual({
        pendingEventIds: ["e2", "e3"],
        deadLetteredEventIds: [],
        failing: [{ eventId: "e2", failing: failure }],
        generation: 1
      })
      expect(isRunning(a!)).toBe(true)
      yield* Fiber.interrupt(a!)
    }).pipe(Effect.scoped)
  )

  it.effect("a wait that parks after notifications it missed replays them: settled at once without a query", () =>
    Effect.gen(function* () {
      const { signal, parked, asked } = yield* setup({ e1: "processed" })
      // The wait read generation 0, then checked the database; meanwhile e1's completion was notified.
      notify(signal, parked, new Map([[p, new Set(["e1"])]]))
      expect(yield* parked.park(p, ["e1", "e2"], 0)).toEqual({ pendingEventIds: ["e2"], deadLetteredEventIds: [], generation: 0 })
      // Parking again with that generation replays the same notice, which names nothing it still waits for; the
      // ring covers every missed notice and all had detail, so no sweep either.
      const [again] = yield* parkAll(parked, [["e2"]])
      yield* Effect.yieldNow
      expect(isRunning(again!)).toBe(true)
      expect(asked).toEqual([])
      yield* Fiber.interrupt(again!)
    }).pipe(Effect.scoped)
  )

  it.effect("a wait that missed a notification without detail asks for a sweep when it parks", () =>
    Effect.gen(function* () {
      const { signal, parked, asked } = yield* setup({ e2: "deadLettered" })
      notify(signal, parked, undefined)
      yield* Effect.yieldNow
      expect(asked).toEqual([])
      expect(yield* parked.park(p, ["e2"], 0)).toEqual({ pendingEventIds: [], deadLetteredEventIds: ["e2"], generation: 1 })
      expect(asked).toEqual([["e2"]])
    }).pipe(Effect.scoped)
  )

  it.effect("versions: notices match waits by base name; a key that is not the only server re-classifies exactly the waits it names", () =>
    Effect.gen(function* () {
      const signal = new ChangeSignal()
      const { asked, classify } = fakeDatabase({ e1: "processed" })
      // What PgSyncInquiry says once a classify saw "balance" served by v1 and v2.
      const versioned = new Set(["balance"])
      const parked = new ParkedWaits(signal, classify, (base, key) => key === base && !versioned.has(base))
      yield* parked.start(yield* Effect.scope)
      const onBase = yield* Effect.forkChild(parked.park("balance", ["e1"], 0))
      const onKey = yield* Effect.forkChild(parked.park("balance__v2", ["e2"], 0))
      const other = yield* Effect.forkChild(parked.park(p, ["e1"], 0))
      while (parked.size < 3) yield* Effect.yieldNow
      // Names v1 (the base) and e1: not settled from the payload (v2 serves too), swept: the database says processed.
      notify(signal, parked, new Map([["balance", new Set(["e1"])]]))
      expect(yield* Fiber.join(onBase)).toEqual({ pendingEventIds: [], deadLetteredEventIds: [], generation: 1 })
      expect(asked).toEqual([["e1"]]) // only the named wait of that base, not `other` (another base)
      // A v2 notice for e2 wakes the wait on "balance__v2" (same base), again through the database: still pending.
      notify(signal, parked, new Map([["balance__v2", new Set(["e2"])]]))
      while (asked.length < 2) yield* Effect.yieldNow
      expect(asked[1]).toEqual(["e2"])
      expect(isRunning(onKey)).toBe(true)
      expect(isRunning(other)).toBe(true)
      // A base without versions keeps the fast path: no query.
      notify(signal, parked, new Map([[p, new Set(["e1"])]]))
      expect((yield* Fiber.join(other)).pendingEventIds).toEqual([])
      expect(asked.length).toBe(2)
      yield* Fiber.interrupt(onKey)
    }).pipe(Effect.scoped)
  )

  it.effect(
    "a payload whose key does not alone serve the base (another version serves too) is asked about first, then settled on the other's",
    () =>
      Effect.gen(function* () {
        const signal = new ChangeSignal()
        const { asked, classify } = fakeDatabase({})
        let alone = false
        const parked = new ParkedWaits(signal, classify, (baseName, key) => key === baseName && alone)
        yield* parked.start(yield* Effect.scope)
        const fiber = yield* Effect.forkChild(parked.park(p, ["e1"], 0))
        while (parked.size < 1) yield* Effect.yieldNow
        notify(signal, parked, new Map([[p, new Set(["e1"])]]))
        while (asked.length < 1) yield* Effect.yieldNow
        expect(asked).toEqual([["e1"]])
        expect(isRunning(fiber)).toBe(true) // the database (this fake) still says pending
        // The other version went away (the registry's notice): the key alone serves; its payload settles at once.
        alone = true
        notify(signal, parked, new Map([[p, new Set(["e1"])]]))
        expect(yield* Fiber.join(fiber)).toMatchObject({ pendingEventIds: [] })
        expect(asked).toHaveLength(1)
      }).pipe(Effect.scoped)
  )

  it.effect("a failing sweep leaves the waits parked (the next signal asks again)", () =>
    Effect.gen(function* () {
      const signal = new ChangeSignal()
      let fail = true
      const parked = new ParkedWaits(signal, () =>
        fail ? Effect.fail(new Error("connection lost")) : Effect.succeed({ pending: [], deadLettered: [] })
      )
      yield* parked.start(yield* Effect.scope)
      const [a] = yield* parkAll(parked, [["e1"]])
      notify(signal, parked, undefined)
      while (parked.sweeps < 1) yield* Effect.yieldNow
      yield* Effect.yieldNow
      expect(isRunning(a!)).toBe(true)
      fail = false
      notify(signal, parked, undefined)
      expect(Exit.isSuccess(yield* Fiber.await(a!))).toBe(true)
    }).pipe(Effect.scoped)
  )
})

describe("the wh_processed payload detail", () => {
  it("reads `<perspective>\\t<id>,<id>` lines; no detail or a line it cannot read means 'anything may have changed'", () => {
    expect(parseDetail("order_summary\ta,b\nstock\tc")).toEqual(
      new Map([
        ["order_summary", new Set(["a", "b"])],
        ["stock", new Set(["c"])]
      ])
    )
    expect(parseDetail(undefined)).toBeUndefined()
    expect(parseDetail("")).toBeUndefined()
    expect(parseDetail("order_summary\ta\ngarbage")).toBeUndefined()
  })
})
