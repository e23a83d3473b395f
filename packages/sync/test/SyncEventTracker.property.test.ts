import { describe, it } from "@effect/vitest"
import { Effect, Exit, type Fiber } from "effect"
import fc from "fast-check"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import { uuid } from "./support.js"

const events = [uuid(), uuid(), uuid(), uuid()]
const streams = [uuid(), uuid()]
const perspectives = ["P0", "P1", "P2"]
const streamOf = (e: number) => streams[e % 2]!

type Op =
  | { readonly t: "track"; readonly e: number; readonly p: number }
  | { readonly t: "markP"; readonly e: number; readonly p: number }
  | { readonly t: "mark"; readonly e: number }
  | { readonly t: "markStream"; readonly s: number; readonly p: number }
  | { readonly t: "wait"; readonly kind: number; readonly ids: ReadonlyArray<number>; readonly p: number }
  | { readonly t: "yield" }

const e = fc.integer({ min: 0, max: 3 })
const p = fc.integer({ min: 0, max: 2 })
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant("track" as const), e, p }),
  fc.record({ t: fc.constant("track" as const), e, p }),
  fc.record({ t: fc.constant("markP" as const), e, p }),
  fc.record({ t: fc.constant("mark" as const), e }),
  fc.record({ t: fc.constant("markStream" as const), s: fc.integer({ min: 0, max: 1 }), p }),
  fc.record({ t: fc.constant("wait" as const), kind: fc.integer({ min: 0, max: 2 }), ids: fc.subarray([0, 1, 2, 3]), p }),
  fc.constant({ t: "yield" as const })
)

interface Waiter {
  readonly fiber: Fiber.Fiber<boolean>
  readonly ids: ReadonlyArray<string>
  readonly perspective: string | undefined
}

/**
 * Random interleavings of track / mark / wait (waits start lazily, so their check-and-register runs at
 * arbitrary points between later operations). After every step, a waiter whose condition holds in the model
 * must complete with true within a bounded number of yields: a lost wake-up leaves it running.
 */
const run = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function* () {
    const tracker = yield* SyncEventTracker.SyncEventTracker
    const model = new Set<string>()
    const key = (e: string, p: string) => `${e}|${p}`
    const satisfied = (w: Waiter) =>
      w.ids.every((id) =>
        w.perspective === undefined ? ![...model].some((k) => k.startsWith(`${id}|`)) : !model.has(key(id, w.perspective))
      )
    const waiters: Array<Waiter> = []
    for (const o of ops) {
      switch (o.t) {
        case "track":
          yield* tracker.trackEvent({ eventId: events[o.e]!, perspectiveName: perspectives[o.p]!, streamId: streamOf(o.e), eventType: "T" })
          model.add(key(events[o.e]!, perspectives[o.p]!))
          break
        case "markP":
          yield* tracker.markProcessedByPerspective([events[o.e]!], perspectives[o.p]!)
          model.delete(key(events[o.e]!, perspectives[o.p]!))
          break
        case "mark":
          yield* tracker.markProcessed([events[o.e]!])
          for (const pn of perspectives) model.delete(key(events[o.e]!, pn))
          break
        case "markStream":
          yield* tracker.markPerspectiveStreamProcessed(perspectives[o.p]!, streams[o.s]!)
          events.forEach((id, i) => {
            if (i % 2 === o.s) model.delete(key(id, perspectives[o.p]!))
          })
          break
        case "wait": {
          const ids = o.ids.map((i) => events[i]!)
          const options = { timeout: "1 hour" } as const
          const perspective = o.kind === 1 ? perspectives[o.p]! : undefined
          const wait =
            o.kind === 0
              ? tracker.waitForEvents(ids, options)
              : o.kind === 1
                ? tracker.waitForPerspectiveEvents(ids, perspective!, options)
                : tracker.waitForAllPerspectives(ids, options)
          waiters.push({ fiber: yield* Effect.forkChild(wait), ids, perspective })
          break
        }
        case "yield":
          yield* Effect.yieldNow
      }
      for (const w of waiters) {
        if (!satisfied(w)) continue
        for (let i = 0; i < 50 && w.fiber.pollUnsafe() === undefined; i++) yield* Effect.yieldNow
        const exit = w.fiber.pollUnsafe()
        if (exit === undefined || !Exit.isSuccess(exit) || exit.value !== true) return false
      }
    }
    return true
  }).pipe(Effect.provide(SyncEventTracker.layer), Effect.scoped)

describe("SyncEventTracker (property)", () => {
  it("random interleavings of track / mark / wait never lose a wake-up", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), (ops) => Effect.runPromise(run(ops))),
      { numRuns: 300 }
    )
  })
})
