/**
 * Runs an effect while holding the stream lock of one (stream, perspective): acquire, keep alive, always release.
 *
 * ```ts
 * const result = yield* withStreamLock(streamId, "order_summary", "rewind", rewind(streamId))
 * if (Option.isNone(result)) return // another instance holds the lock: skip, retry next cycle
 * ```
 *
 * **When to use**: around every rewind, snapshot bootstrap or purge of one stream's perspective data.
 *
 * **Gotchas**
 * - Not acquiring is not an error: the result is `Option.none()` and `effect` never ran.
 * - The instance id comes from core's `InstanceProvider`; two processes sharing one id share every lock.
 * - If a renewal finds the lock gone (it expired and was taken, or was released by someone using our id),
 *   `effect` is interrupted and the result fails with `StreamLockLost`. A renewal that fails on storage
 *   (database blip) is logged and retried at the next tick; `keepAliveInterval < lockTimeout / 2` leaves room
 *   for one such miss.
 * - A failing release is logged, not raised: the lock then simply expires after `lockTimeout`.
 *
 * @since 0.1.0
 */
import { InstanceProvider } from "@whizbang/core"
import { OutageLog } from "@whizbang/core/internal"
import { Effect, type Option } from "effect"
import { PerspectiveStreamLocker, type LockReason } from "./PerspectiveStreamLocker.js"
import { type StreamLockError, StreamLockLost } from "./StreamLockError.js"

/**
 * Acquires the lock (skipping with `Option.none()` when another instance holds it), renews it every
 * `keepAliveInterval` in a fiber scoped to `effect`, runs `effect` and releases the lock on success, failure
 * and interruption.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withStreamLock = <A, E, R>(
  streamId: string,
  perspectiveName: string,
  reason: LockReason,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Option.Option<A>, E | StreamLockError | StreamLockLost, R | PerspectiveStreamLocker | InstanceProvider.InstanceProvider> =>
  Effect.gen(function* () {
    const locker = yield* PerspectiveStreamLocker
    const { instanceId } = yield* InstanceProvider.InstanceProvider

    // Failed renewals (a database outage) are one warning, and one line once a renewal works again.
    const renewals = yield* OutageLog.make(`renewing the stream lock on (${streamId}, ${perspectiveName})`)
    const renewOrLose = renewals
      .guard(locker.renewLock(streamId, perspectiveName, instanceId), true)
      .pipe(
        Effect.flatMap((renewed) => (renewed ? Effect.void : Effect.fail(new StreamLockLost({ streamId, perspectiveName, instanceId }))))
      )
    // Never succeeds; it only ends by failing with StreamLockLost or by being interrupted when `effect` ends.
    const keepAlive = Effect.forever(Effect.delay(renewOrLose, locker.options.keepAliveInterval))

    return yield* Effect.acquireUseRelease(
      locker.tryAcquireLock(streamId, perspectiveName, instanceId, reason),
      (acquired) => (acquired ? Effect.asSome(Effect.raceFirst(effect, keepAlive)) : Effect.succeedNone),
      (acquired) =>
        acquired
          ? locker
              .releaseLock(streamId, perspectiveName, instanceId)
              .pipe(
                Effect.catchCause((cause) =>
                  Effect.andThen(
                    Effect.logWarning(`stream lock release failed: ${OutageLog.causeMessage(cause)}; it will expire`),
                    Effect.logDebug("stream lock release failed", cause)
                  )
                )
              )
          : Effect.void
    )
  })
