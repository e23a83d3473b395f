import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import * as CoalescingQueue from "../src/internal/coalescingQueue.js"

interface Req {
  readonly key: string
  readonly value: number
}

/** A queue whose statements finish only when the test opens their gate; records what each call carried. */
const harness = (options: {
  maxInFlight: number
  maxBatch?: number
  maxWeight?: number
  many?: (rs: ReadonlyArray<Req>) => Effect.Effect<ReadonlyArray<Exit.Exit<number, string>>>
}) =>
  Effect.gen(function* () {
    const calls: Array<ReadonlyArray<number>> = []
    const gates: Array<Deferred.Deferred<void>> = []
    const gate = Effect.flatMap(Deferred.make<void>(), (d) => {
      gates.push(d)
      return Deferred.await(d)
    })
    const submit = CoalescingQueue.make<Req, number, string>({
      maxInFlight: options.maxInFlight,
      maxBatch: options.maxBatch ?? 100,
      maxWeight: options.maxWeight,
      // A request weighs its value (the test's stand-in for an append's events).
      weight: (r) => Math.abs(r.value),
      key: (r) => r.key,
      one: (r) =>
        Effect.andThen(
          Effect.sync(() => calls.push([r.value])),
          Effect.andThen(gate, r.value < 0 ? Effect.fail(`refused ${r.value}`) : Effect.succeed(r.value * 10))
        ),
      many:
        options.many ??
        ((rs) =>
          Effect.andThen(
            Effect.sync(() => calls.push(rs.map((r) => r.value))),
            Effect.as(
              gate,
              rs.map((r) => (r.value < 0 ? Exit.fail(`refused ${r.value}`) : Exit.succeed(r.value * 10)))
            )
          ))
    })
    const openAll = Effect.suspend(() => Effect.forEach(gates.splice(0), (d) => Deferred.succeed(d, undefined), { discard: true }))
    return { submit, calls, gates, openAll }
  })

/** Lets every forked fiber run until it blocks. */
const settle = Effect.repeat(Effect.yieldNow, { times: 20 })

describe("CoalescingQueue", () => {
  it.effect("runs a request at once while a slot is free, and batches only what waits for one", () =>
    Effect.gen(function* () {
      const { submit, calls, openAll } = yield* harness({ maxInFlight: 2 })
      const fibers = yield* Effect.forEach([1, 2, 3, 4, 5], (value) => Effect.forkChild(submit({ key: `s${value}`, value })))
      yield* settle
      // Two alone (the free slots); the other three wait for a slot.
      expect(calls).toEqual([[1], [2]])
      yield* openAll
      yield* settle
      // The first slot freed takes all three waiting requests in one call.
      expect(calls).toEqual([[1], [2], [3, 4, 5]])
      yield* openAll
      expect(yield* Fiber.joinAll(fibers)).toEqual([10, 20, 30, 40, 50])
    })
  )

  it.effect("never puts two requests with one key in a call: the later one waits for the next, in order", () =>
    Effect.gen(function* () {
      const { submit, calls, openAll } = yield* harness({ maxInFlight: 1 })
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* settle
      const rest = yield* Effect.forEach(
        [
          { key: "a", value: 2 },
          { key: "b", value: 3 },
          { key: "a", value: 4 },
          { key: "c", value: 5 }
        ],
        (r) => Effect.forkChild(submit(r))
      )
      yield* settle
      yield* openAll
      yield* settle
      expect(calls).toEqual([[1], [2, 3, 5]])
      yield* openAll
      yield* settle
      expect(calls).toEqual([[1], [2, 3, 5], [4]])
      yield* openAll
      yield* Fiber.join(first)
      expect(yield* Fiber.joinAll(rest)).toEqual([20, 30, 40, 50])
    })
  )

  it.effect("caps a call at maxBatch requests and answers each with its own exit", () =>
    Effect.gen(function* () {
      const { submit, calls, openAll } = yield* harness({ maxInFlight: 1, maxBatch: 2 })
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* settle
      const rest = yield* Effect.forEach([2, -3, 4], (value) => Effect.forkChild(Effect.exit(submit({ key: `s${value}`, value }))))
      yield* settle
      for (let i = 0; i < 3; i++) {
        yield* openAll
        yield* settle
      }
      expect(calls).toEqual([[1], [2, -3], [4]])
      yield* Fiber.join(first)
      expect(yield* Fiber.joinAll(rest)).toEqual([Exit.succeed(20), Exit.fail("refused -3"), Exit.succeed(40)])
    })
  )

  it.effect("caps a call at maxWeight: what does not fit waits for the next call, and a heavy first request goes alone", () =>
    Effect.gen(function* () {
      const { submit, calls, openAll } = yield* harness({ maxInFlight: 1, maxWeight: 10 })
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* settle
      // 4 + 5 fit in 10; 7 does not, but the lighter 1 after it still does; 7 leads the next call with 3; 20 is
      // heavier than the cap on its own and goes alone.
      const rest = yield* Effect.forEach([4, 5, 7, 1, 3, 20, 2], (value) => Effect.forkChild(submit({ key: `s${value}`, value })))
      yield* settle
      for (let i = 0; i < 5; i++) {
        yield* openAll
        yield* settle
      }
      expect(calls).toEqual([[1], [4, 5, 1], [7, 3], [20], [2]])
      yield* Fiber.join(first)
      expect(yield* Fiber.joinAll(rest)).toEqual([40, 50, 70, 10, 30, 200, 20])
    })
  )

  it.effect("a waiting request whose caller is interrupted is never sent", () =>
    Effect.gen(function* () {
      const { submit, calls, openAll } = yield* harness({ maxInFlight: 1 })
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* settle
      const dropped = yield* Effect.forkChild(submit({ key: "b", value: 2 }))
      const kept = yield* Effect.forkChild(submit({ key: "c", value: 3 }))
      yield* settle
      yield* Fiber.interrupt(dropped)
      yield* openAll
      yield* settle
      yield* openAll
      expect(yield* Fiber.join(kept)).toBe(30)
      yield* Fiber.join(first)
      expect(calls).toEqual([[1], [3]])
    })
  )

  it.effect("a call that dies answers every request it carried with the defect, and frees its slot", () =>
    Effect.gen(function* () {
      const { submit, openAll } = yield* harness({ maxInFlight: 1, many: () => Effect.die(new Error("boom")) })
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* settle
      const waiting = yield* Effect.forEach([2, 3], (value) => Effect.forkChild(Effect.exit(submit({ key: `s${value}`, value }))))
      yield* settle
      yield* openAll
      const exits = yield* Fiber.joinAll(waiting)
      expect(exits.every((exit) => Exit.hasDies(exit))).toBe(true)
      yield* Fiber.join(first)
      // The slot is free again: the next request runs alone at once.
      const next = yield* Effect.forkChild(submit({ key: "z", value: 9 }))
      yield* settle
      yield* openAll
      expect(yield* Fiber.join(next)).toBe(90)
    })
  )
})
