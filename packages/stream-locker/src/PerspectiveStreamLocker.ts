/**
 * The PerspectiveStreamLocker port: a lease on one (stream, perspective) cursor that pauses normal event
 * application while a rewind, snapshot bootstrap or purge rebuilds it. New events keep queueing and are applied
 * once the lock is released.
 *
 * **Semantics** (every layer, checked by one contract suite)
 * - `tryAcquireLock` succeeds when the cursor is unlocked, its lock has expired, or this instance already holds
 *   it (the reason is replaced and the expiry restarts). It returns `false` when another instance holds a live
 *   lock, and also when the pair has no cursor row: a lock never creates a row.
 * - `renewLock` restarts the expiry at now + `lockTimeout`, only for the holder; it returns whether it did.
 * - `releaseLock` clears the lock, only for the holder; releasing an unlocked or foreign lock is a no-op.
 *
 * **When to use**: prefer `withStreamLock`, which also keeps the lock alive and always releases it. Call the
 * service directly only to build a different lifecycle.
 *
 * **Gotchas**
 * - Expiry is a lease, not a fence: a holder that stops renewing (paused process, lost database) may still be
 *   running when another instance takes the expired lock. Keep the guarded work idempotent.
 * - Ids are UUIDs and perspective names follow `Perspective.isValidName`; anything else is a typed error, never
 *   a silent `false`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import * as Validated from "./internal/validated.js"
import * as PerspectiveStreamLockOptions from "./PerspectiveStreamLockOptions.js"
import type { InvalidStreamLockOptions, StreamLockError } from "./StreamLockError.js"

/**
 * Why a lock is taken; stored with the lock for observability.
 *
 * @category models
 * @since 0.1.0
 */
export type LockReason = Validated.LockReason

/**
 * Every {@link LockReason}.
 *
 * @category constants
 * @since 0.1.0
 */
export const lockReasons: ReadonlyArray<LockReason> = Validated.reasons

/**
 * The lock columns of one cursor; all `null` when unlocked. `expiresAt` is epoch milliseconds.
 *
 * @category models
 * @since 0.1.0
 */
export interface CursorLock {
  readonly instanceId: string | null
  readonly expiresAt: number | null
  readonly reason: LockReason | null
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  /** The validated options this locker was built with. */
  readonly options: PerspectiveStreamLockOptions.PerspectiveStreamLockOptions
  /** `true` when `instanceId` now holds the lock (newly, after expiry, or again). */
  readonly tryAcquireLock: (
    streamId: string,
    perspectiveName: string,
    instanceId: string,
    reason: LockReason
  ) => Effect.Effect<boolean, StreamLockError>
  /** `true` when the lock was renewed; `false` when `instanceId` does not hold it. */
  readonly renewLock: (streamId: string, perspectiveName: string, instanceId: string) => Effect.Effect<boolean, StreamLockError>
  /** Clears the lock if `instanceId` holds it; otherwise does nothing. */
  readonly releaseLock: (streamId: string, perspectiveName: string, instanceId: string) => Effect.Effect<void, StreamLockError>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PerspectiveStreamLocker extends Context.Service<PerspectiveStreamLocker, Shape>()(
  "@whizbang/stream-locker/PerspectiveStreamLocker"
) {}

/**
 * Builds the service from a layer's raw storage operations, adding the id, name and reason checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromStorage = <E>(options: PerspectiveStreamLockOptions.PerspectiveStreamLockOptions, storage: Validated.Storage<E>): Shape =>
  PerspectiveStreamLocker.of({ options, ...Validated.validated(storage) })

/**
 * The cursor rows of {@link layerMemory}: a test creates the (stream, perspective) pairs that may be locked and
 * reads their lock columns back.
 *
 * @category services
 * @since 0.1.0
 */
export class MemoryCursors extends Context.Service<
  MemoryCursors,
  {
    readonly ensureCursor: (streamId: string, perspectiveName: string) => Effect.Effect<void>
    readonly lockOf: (streamId: string, perspectiveName: string) => Effect.Effect<Option.Option<CursorLock>>
    readonly cursorCount: Effect.Effect<number>
  }
>()("@whizbang/stream-locker/PerspectiveStreamLocker/MemoryCursors") {}

const unlocked: CursorLock = { instanceId: null, expiresAt: null, reason: null }

/**
 * An in-memory locker with the same semantics, timed by Effect's `Clock` (so `TestClock` drives expiry).
 * Cursor rows exist only once created with {@link MemoryCursors} `ensureCursor`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory = (
  options?: PerspectiveStreamLockOptions.Input
): Layer.Layer<PerspectiveStreamLocker | MemoryCursors, InvalidStreamLockOptions> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const decoded = yield* PerspectiveStreamLockOptions.decode(options)
      const timeout = Math.ceil(Duration.toMillis(decoded.lockTimeout))
      const cursors = new Map<string, CursorLock>()
      const key = (streamId: string, perspectiveName: string) => `${streamId.toLowerCase()}/${perspectiveName}`
      // Each operation is one synchronous read-modify-write, so no other fiber can interleave inside it.
      const update = <A>(streamId: string, perspectiveName: string, f: (lock: CursorLock, now: number) => [A, CursorLock], none: A) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            const k = key(streamId, perspectiveName)
            const lock = cursors.get(k)
            if (lock === undefined) return none
            const [result, next] = f(lock, now)
            cursors.set(k, next)
            return result
          })
        )
      const locker = fromStorage(decoded, {
        acquire: (streamId, perspectiveName, instanceId, reason) =>
          update(
            streamId,
            perspectiveName,
            (lock, now) =>
              lock.instanceId === null || lock.instanceId === instanceId || lock.expiresAt === null || lock.expiresAt <= now
                ? [true, { instanceId, expiresAt: now + timeout, reason }]
                : [false, lock],
            false
          ),
        renew: (streamId, perspectiveName, instanceId) =>
          update(
            streamId,
            perspectiveName,
            (lock, now) => (lock.instanceId === instanceId ? [true, { ...lock, expiresAt: now + timeout }] : [false, lock]),
            false
          ),
        release: (streamId, perspectiveName, instanceId) =>
          update(streamId, perspectiveName, (lock) => [undefined, lock.instanceId === instanceId ? unlocked : lock], undefined)
      })
      const memory = MemoryCursors.of({
        ensureCursor: (streamId, perspectiveName) =>
          Effect.sync(() => {
            const k = key(streamId, perspectiveName)
            if (!cursors.has(k)) cursors.set(k, unlocked)
          }),
        lockOf: (streamId, perspectiveName) => Effect.sync(() => Option.fromNullishOr(cursors.get(key(streamId, perspectiveName)))),
        cursorCount: Effect.sync(() => cursors.size)
      })
      return Context.make(PerspectiveStreamLocker, locker).pipe(Context.add(MemoryCursors, memory))
    })
  )
