import { describe, expect, it } from "@effect/vitest"
import { PerspectiveStreamLocker as Locker } from "@whizbang/stream-locker"
import { Array, Clock, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

const perspective = "order_summary"
const lockTimeout = 300
const memory = Layer.merge(Locker.layerMemory({ lockTimeout, keepAliveInterval: 100 }), TestClock.layer())

// Each property run builds its own locker and TestClock; fast-check drives the runs (and shrinks a failure).
const check = <A>(
  arbitrary: fc.Arbitrary<A>,
  scenario: (input: A) => Effect.Effect<unknown, unknown, Locker.PerspectiveStreamLocker | Locker.MemoryCursors | TestClock.TestClock>,
  numRuns = 200
) =>
  Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(arbitrary, (input) => Effect.runPromise(Effect.provide(Effect.orDie(scenario(input)), memory)).then(() => true)),
      { numRuns }
    )
  )

type Command =
  | { readonly op: "acquire"; readonly cursor: number; readonly who: number; readonly reason: Locker.LockReason }
  | { readonly op: "renew" | "release"; readonly cursor: number; readonly who: number }
  | { readonly op: "advance"; readonly ms: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ op: fc.constant("acquire" as const), cursor: fc.nat(2), who: fc.nat(2), reason: fc.constantFrom(...Locker.lockReasons) }),
  fc.record({ op: fc.constantFrom("renew" as const, "release" as const), cursor: fc.nat(2), who: fc.nat(2) }),
  fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 2 * lockTimeout }) })
)

interface ModelLock {
  readonly holder: number | null
  readonly expiresAt: number | null
  readonly reason: Locker.LockReason | null
}

describe("PerspectiveStreamLocker (memory) properties", () => {
  it.effect("any sequence of acquire / renew / release / time passing matches a model with at most one holder", () =>
    check(fc.array(command, { maxLength: 60 }), (commands) =>
      Effect.gen(function* () {
        const locker = yield* Locker.PerspectiveStreamLocker
        const cursors = yield* Locker.MemoryCursors
        const instances = Array.makeBy(3, () => globalThis.crypto.randomUUID())
        // Cursors 0 and 1 exist; cursor 2 has no row and must stay that way.
        const streams = Array.makeBy(3, () => globalThis.crypto.randomUUID())
        yield* cursors.ensureCursor(streams[0]!, perspective)
        yield* cursors.ensureCursor(streams[1]!, perspective)
        const unlocked: ModelLock = { holder: null, expiresAt: null, reason: null }
        const model: Array<ModelLock | undefined> = [unlocked, unlocked, undefined]
        for (const c of commands) {
          const now = yield* Clock.currentTimeMillis
          if (c.op === "advance") {
            yield* TestClock.adjust(c.ms)
            continue
          }
          const lock = model[c.cursor]
          const stream = streams[c.cursor]!
          const who = instances[c.who]!
          if (c.op === "acquire") {
            const free = lock !== undefined && (lock.holder === null || lock.holder === c.who || lock.expiresAt! <= now)
            expect(yield* locker.tryAcquireLock(stream, perspective, who, c.reason)).toBe(free)
            if (free) model[c.cursor] = { holder: c.who, expiresAt: now + lockTimeout, reason: c.reason }
          } else if (c.op === "renew") {
            const mine = lock !== undefined && lock.holder === c.who
            expect(yield* locker.renewLock(stream, perspective, who)).toBe(mine)
            if (mine) model[c.cursor] = { ...lock, expiresAt: now + lockTimeout }
          } else {
            yield* locker.releaseLock(stream, perspective, who)
            if (lock !== undefined && lock.holder === c.who) model[c.cursor] = unlocked
          }
          for (let i = 0; i < 3; i++) {
            const expected = model[i]
            expect(yield* cursors.lockOf(streams[i]!, perspective)).toEqual(
              expected === undefined
                ? Option.none()
                : Option.some({
                    instanceId: expected.holder === null ? null : instances[expected.holder],
                    expiresAt: expected.expiresAt,
                    reason: expected.reason
                  })
            )
          }
        }
      })
    )
  )

  it.effect("many concurrent acquirers and releasers never hold the lock together", () =>
    check(
      fc.record({
        instances: fc.integer({ min: 2, max: 10 }),
        rounds: fc.integer({ min: 1, max: 6 }),
        holdYields: fc.integer({ min: 0, max: 3 }),
        keepLastLock: fc.boolean()
      }),
      (input) =>
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const cursors = yield* Locker.MemoryCursors
          const streamId = globalThis.crypto.randomUUID()
          yield* cursors.ensureCursor(streamId, perspective)
          let inside = 0
          let maxInside = 0
          let acquisitions = 0
          const instance = (instanceId: string) =>
            Effect.forEach(
              Array.range(1, input.rounds),
              (round) =>
                Effect.gen(function* () {
                  if (!(yield* locker.tryAcquireLock(streamId, perspective, instanceId, "rewind"))) return yield* Effect.yieldNow
                  acquisitions++
                  inside++
                  maxInside = Math.max(maxInside, inside)
                  for (let i = 0; i < input.holdYields; i++) {
                    yield* Effect.yieldNow
                    const lock = yield* cursors.lockOf(streamId, perspective)
                    expect(Option.getOrThrow(lock).instanceId).toBe(instanceId)
                  }
                  inside--
                  // Sometimes the last round keeps the lock: then nobody else may get it afterwards.
                  if (!(input.keepLastLock && round === input.rounds)) yield* locker.releaseLock(streamId, perspective, instanceId)
                }),
              { discard: true }
            )
          yield* Effect.forEach(
            Array.makeBy(input.instances, () => globalThis.crypto.randomUUID()),
            instance,
            {
              concurrency: "unbounded",
              discard: true
            }
          )
          expect(maxInside).toBe(1)
          expect(acquisitions).toBeGreaterThanOrEqual(1)
        })
    )
  )
})
