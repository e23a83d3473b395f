/**
 * The PerspectiveStreamLocker contract (ACCEPTANCE.md "Stream locker") and the withStreamLock lifecycle, as one
 * vitest suite every locker layer must pass. A layer factory supplies the locker and a {@link LockerFixture}
 * (create cursor rows, read their lock columns, read the locker's clock, let time pass).
 */
import { describe, expect, layer } from "@effect/vitest"
import { InstanceProvider } from "@whizbang/core"
import {
  PerspectiveStreamLocker as Locker,
  type PerspectiveStreamLockOptions,
  type StreamLockError,
  WithStreamLock
} from "@whizbang/stream-locker"
import { Context, Deferred, Duration, Effect, Fiber, type Layer, Option, Ref } from "effect"

export class LockerFixture extends Context.Service<
  LockerFixture,
  {
    readonly ensureCursor: (streamId: string, perspectiveName: string) => Effect.Effect<void>
    /** None when the pair has no cursor row. */
    readonly lockOf: (streamId: string, perspectiveName: string) => Effect.Effect<Option.Option<Locker.CursorLock>>
    /** The locker's clock, epoch milliseconds. */
    readonly now: Effect.Effect<number>
    /** Lets `duration` pass on the locker's clock (and on the Effect clock driving keepalive fibers). */
    readonly advance: (duration: Duration.Input) => Effect.Effect<void>
  }
>()("test/LockerFixture") {}

export type MakeLayer<R> = (
  options?: PerspectiveStreamLockOptions.Input
) => Layer.Layer<Locker.PerspectiveStreamLocker | LockerFixture, StreamLockError.InvalidStreamLockOptions, R>

const uuid = () => globalThis.crypto.randomUUID()
const perspective = "order_summary"
const unlocked: Locker.CursorLock = { instanceId: null, expiresAt: null, reason: null }

/** A fresh stream with a cursor row for `perspective`. */
const cursor = Effect.gen(function* () {
  const streamId = uuid()
  yield* (yield* LockerFixture).ensureCursor(streamId, perspective)
  return streamId
})

/** The lock columns of an existing cursor row. */
const lockOf = (streamId: string, name = perspective) =>
  Effect.gen(function* () {
    return Option.getOrThrow(yield* (yield* LockerFixture).lockOf(streamId, name))
  })

const as = (instanceId: string) =>
  Effect.provideService(
    InstanceProvider.InstanceProvider,
    InstanceProvider.InstanceProvider.of({ instanceId, serviceName: "test", hostName: "test", processId: 0 })
  )

export const run = <R>(name: string, outer: Layer.Layer<R>, makeLayer: MakeLayer<R>): void => {
  describe(`PerspectiveStreamLocker contract: ${name}`, () => {
    layer(outer, { timeout: 60_000 })((it) => {
      const test = (
        title: string,
        body: Effect.Effect<void, unknown, Locker.PerspectiveStreamLocker | LockerFixture>,
        options?: PerspectiveStreamLockOptions.Input
      ) => it.effect(title, () => Effect.provide(body, makeLayer(options)))

      test(
        "acquire on an unlocked cursor succeeds and records holder, reason and an expiry lockTimeout ahead",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const streamId = yield* cursor
          const a = uuid()
          const before = yield* (yield* LockerFixture).now
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          const lock = yield* lockOf(streamId)
          expect(lock.instanceId).toBe(a)
          expect(lock.reason).toBe("rewind")
          expect(lock.expiresAt! - before).toBeGreaterThan(30_000 - 1_000)
          expect(lock.expiresAt! - before).toBeLessThanOrEqual(30_000 + 1_000)
        })
      )

      test(
        "acquire with no cursor row returns false and creates no row",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = uuid()
          expect(yield* locker.tryAcquireLock(streamId, perspective, uuid(), "rewind")).toBe(false)
          expect(yield* fixture.lockOf(streamId, perspective)).toEqual(Option.none())
          expect(yield* locker.renewLock(streamId, perspective, uuid())).toBe(false)
          yield* locker.releaseLock(streamId, perspective, uuid())
          expect(yield* fixture.lockOf(streamId, perspective)).toEqual(Option.none())
        })
      )

      test(
        "held by another instance: false, and the holder keeps it unchanged",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          const held = yield* lockOf(streamId)
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(false)
          expect(yield* lockOf(streamId)).toEqual(held)
        })
      )

      test(
        "the same instance re-acquires and its reason is replaced",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const streamId = yield* cursor
          const a = uuid()
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          expect(yield* locker.tryAcquireLock(streamId, perspective, a.toUpperCase(), "bootstrap")).toBe(true)
          expect(yield* lockOf(streamId)).toMatchObject({ instanceId: a, reason: "bootstrap" })
        })
      )

      test(
        "an expired lock (100 ms timeout, waited past it) is acquired by another instance",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(false)
          const { expiresAt } = yield* lockOf(streamId)
          yield* fixture.advance(Duration.millis(150))
          expect(yield* fixture.now).toBeGreaterThan(expiresAt!)
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(true)
          expect(yield* lockOf(streamId)).toMatchObject({ instanceId: b, reason: "purge" })
          // The former holder lost it: it can neither renew nor release b's lock.
          expect(yield* locker.renewLock(streamId, perspective, a)).toBe(false)
          yield* locker.releaseLock(streamId, perspective, a)
          expect(yield* lockOf(streamId)).toMatchObject({ instanceId: b, reason: "purge" })
        }),
        { lockTimeout: 100, keepAliveInterval: 10 }
      )

      test(
        "acquire, renew and release of one (stream, perspective) leave every other cursor row untouched",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const [s1, s2] = [uuid(), uuid()]
          const others = [
            [s1, "other_perspective"],
            [s2, perspective]
          ] as const
          yield* Effect.forEach([[s1, perspective], ...others], ([s, p]) => fixture.ensureCursor(s, p))
          const [a, b] = [uuid(), uuid()]
          expect(yield* locker.tryAcquireLock(s1, "other_perspective", b, "bootstrap")).toBe(true)
          const before = yield* Effect.forEach(others, ([s, p]) => lockOf(s, p))
          expect(before).toEqual([expect.objectContaining({ instanceId: b }), unlocked])
          yield* fixture.advance(Duration.millis(5))
          expect(yield* locker.tryAcquireLock(s1, perspective, a, "rewind")).toBe(true)
          expect(yield* locker.renewLock(s1, perspective, a)).toBe(true)
          expect(yield* Effect.forEach(others, ([s, p]) => lockOf(s, p))).toEqual(before)
          yield* locker.releaseLock(s1, perspective, a)
          expect(yield* lockOf(s1)).toEqual(unlocked)
          expect(yield* Effect.forEach(others, ([s, p]) => lockOf(s, p))).toEqual(before)
        })
      )

      test(
        "renew by the holder strictly extends the expiry; renew by anyone else changes nothing",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          expect(yield* locker.renewLock(streamId, perspective, a)).toBe(false)
          expect(yield* lockOf(streamId)).toEqual(unlocked)
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          const first = yield* lockOf(streamId)
          yield* fixture.advance(Duration.millis(20))
          expect(yield* locker.renewLock(streamId, perspective, b)).toBe(false)
          expect(yield* lockOf(streamId)).toEqual(first)
          expect(yield* locker.renewLock(streamId, perspective, a)).toBe(true)
          const renewed = yield* lockOf(streamId)
          expect(renewed.expiresAt!).toBeGreaterThan(first.expiresAt!)
          expect(renewed).toMatchObject({ instanceId: a, reason: "rewind" })
        })
      )

      test(
        "release by the holder clears instance, expiry and reason; by anyone else it is a no-op",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          yield* locker.releaseLock(streamId, perspective, a) // unlocked: no failure
          expect(yield* lockOf(streamId)).toEqual(unlocked)
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "purge")).toBe(true)
          const held = yield* lockOf(streamId)
          yield* locker.releaseLock(streamId, perspective, b)
          expect(yield* lockOf(streamId)).toEqual(held)
          yield* locker.releaseLock(streamId, perspective, a)
          expect(yield* lockOf(streamId)).toEqual(unlocked)
          yield* locker.releaseLock(streamId, perspective, a) // twice: still no failure
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "rewind")).toBe(true)
        })
      )

      test(
        "full lifecycle: acquire, renew x3, release, another acquires; the row shows the new holder and reason",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          expect(yield* locker.tryAcquireLock(streamId, perspective, a, "rewind")).toBe(true)
          let expiry = (yield* lockOf(streamId)).expiresAt!
          for (let i = 0; i < 3; i++) {
            yield* fixture.advance(Duration.millis(10))
            expect(yield* locker.renewLock(streamId, perspective, a)).toBe(true)
            const next = (yield* lockOf(streamId)).expiresAt!
            expect(next).toBeGreaterThan(expiry)
            expiry = next
            expect(yield* locker.tryAcquireLock(streamId, perspective, b, "bootstrap")).toBe(false)
          }
          yield* locker.releaseLock(streamId, perspective, a)
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "bootstrap")).toBe(true)
          const lock = yield* lockOf(streamId)
          expect(lock).toMatchObject({ instanceId: b, reason: "bootstrap" })
          expect(lock.expiresAt!).toBeGreaterThan(yield* fixture.now)
        })
      )

      test(
        "bad ids, perspective names and reasons fail with a typed StreamLockError",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const a = uuid()
          const tag = (e: Effect.Effect<unknown, StreamLockError.StreamLockError>) =>
            Effect.map(Effect.flip(e), (error) => [error.operation, error.reason._tag])
          expect(yield* tag(locker.tryAcquireLock("not-a-uuid", perspective, a, "rewind"))).toEqual(["tryAcquireLock", "InvalidStreamId"])
          expect(yield* tag(locker.tryAcquireLock(streamId, "OrderSummary", a, "rewind"))).toEqual([
            "tryAcquireLock",
            "InvalidPerspectiveName"
          ])
          expect(yield* tag(locker.tryAcquireLock(streamId, perspective, "x", "rewind"))).toEqual(["tryAcquireLock", "InvalidInstanceId"])
          expect(yield* tag(locker.tryAcquireLock(streamId, perspective, a, "compact" as Locker.LockReason))).toEqual([
            "tryAcquireLock",
            "InvalidLockReason"
          ])
          expect(yield* tag(locker.renewLock(streamId, "", a))).toEqual(["renewLock", "InvalidPerspectiveName"])
          expect(yield* tag(locker.releaseLock(streamId, perspective, ""))).toEqual(["releaseLock", "InvalidInstanceId"])
          expect(yield* fixture.lockOf(streamId, perspective)).toEqual(Option.some(unlocked))
        })
      )

      it.effect("a layer with invalid options fails to build with InvalidStreamLockOptions", () =>
        Effect.gen(function* () {
          const error = yield* Effect.flip(Effect.provide(Effect.void, makeLayer({ lockTimeout: 30_000, keepAliveInterval: 15_000 })))
          expect(error).toMatchObject({ _tag: "InvalidStreamLockOptions", option: "keepAliveInterval" })
        })
      )

      test(
        "withStreamLock: holds the lock while the effect runs and releases it on success",
        Effect.gen(function* () {
          const streamId = yield* cursor
          const a = uuid()
          const result = yield* WithStreamLock.withStreamLock(streamId, perspective, "rewind", lockOf(streamId)).pipe(as(a))
          expect(result).toEqual(Option.some(expect.objectContaining({ instanceId: a, reason: "rewind" })))
          expect(yield* lockOf(streamId)).toEqual(unlocked)
        })
      )

      test(
        "withStreamLock: releases the lock when the effect fails",
        Effect.gen(function* () {
          const streamId = yield* cursor
          const error = yield* Effect.flip(
            WithStreamLock.withStreamLock(streamId, perspective, "purge", Effect.fail("boom")).pipe(as(uuid()))
          )
          expect(error).toBe("boom")
          expect(yield* lockOf(streamId)).toEqual(unlocked)
        })
      )

      test(
        "withStreamLock: releases the lock when interrupted",
        Effect.gen(function* () {
          const streamId = yield* cursor
          const started = yield* Deferred.make<void>()
          const fiber = yield* WithStreamLock.withStreamLock(
            streamId,
            perspective,
            "rewind",
            Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
          ).pipe(as(uuid()), Effect.forkChild)
          yield* Deferred.await(started)
          expect((yield* lockOf(streamId)).reason).toBe("rewind")
          yield* Fiber.interrupt(fiber)
          expect(yield* lockOf(streamId)).toEqual(unlocked)
        })
      )

      test(
        "withStreamLock: returns Option.none() without running the effect when another instance holds the lock",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const streamId = yield* cursor
          const b = uuid()
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "bootstrap")).toBe(true)
          const held = yield* lockOf(streamId)
          const ran = yield* Ref.make(false)
          const result = yield* WithStreamLock.withStreamLock(streamId, perspective, "rewind", Ref.set(ran, true)).pipe(as(uuid()))
          expect(result).toEqual(Option.none())
          expect(yield* Ref.get(ran)).toBe(false)
          expect(yield* lockOf(streamId)).toEqual(held)
        })
      )

      test(
        "withStreamLock: the keepalive holds the lock while the effect runs longer than lockTimeout",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          const [started, finish] = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
          const fiber = yield* WithStreamLock.withStreamLock(
            streamId,
            perspective,
            "rewind",
            Effect.andThen(Deferred.succeed(started, undefined), Deferred.await(finish))
          ).pipe(as(a), Effect.forkChild)
          yield* Deferred.await(started)
          const start = yield* fixture.now
          // 10 x 100 ms = 1 s, more than three lock timeouts
          for (let i = 0; i < 10; i++) {
            yield* fixture.advance(Duration.millis(100))
            expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(false)
          }
          expect((yield* fixture.now) - start).toBeGreaterThan(3 * 300)
          yield* Deferred.succeed(finish, undefined)
          expect(yield* Fiber.join(fiber)).toEqual(Option.some(undefined))
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(true)
        }),
        { lockTimeout: 300, keepAliveInterval: 100 }
      )

      test(
        "withStreamLock: a lost lock interrupts the effect and fails with StreamLockLost",
        Effect.gen(function* () {
          const locker = yield* Locker.PerspectiveStreamLocker
          const fixture = yield* LockerFixture
          const streamId = yield* cursor
          const [a, b] = [uuid(), uuid()]
          const started = yield* Deferred.make<void>()
          const interrupted = yield* Ref.make(false)
          const fiber = yield* WithStreamLock.withStreamLock(
            streamId,
            perspective,
            "rewind",
            Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(Effect.onInterrupt(() => Ref.set(interrupted, true)))
          ).pipe(as(a), Effect.forkChild)
          yield* Deferred.await(started)
          // Simulate expiry and takeover: the lock is cleared under a's id and b takes it.
          yield* locker.releaseLock(streamId, perspective, a)
          expect(yield* locker.tryAcquireLock(streamId, perspective, b, "purge")).toBe(true)
          yield* fixture.advance(Duration.millis(100))
          const error = yield* Effect.flip(Fiber.join(fiber))
          expect(error).toMatchObject({ _tag: "StreamLockLost", instanceId: a, streamId, perspectiveName: perspective })
          expect(yield* Ref.get(interrupted)).toBe(true)
          expect(yield* lockOf(streamId)).toMatchObject({ instanceId: b, reason: "purge" })
        }),
        { lockTimeout: 300, keepAliveInterval: 100 }
      )
    })
  })
}
