/**
 * The Postgres PerspectiveStreamLocker: the lock lives in the `stream_lock_instance_id`, `stream_lock_expiry`
 * and `stream_lock_reason` columns of `wh_perspective_cursors`, and each operation is one atomic
 * `UPDATE ... WHERE ... RETURNING` (`PgOperations.StreamLocks` of `@whizbang/postgres`). No separate lock table, no advisory locks, no
 * application-side locking.
 *
 * **When to use**: in every service whose perspectives are stored in Postgres; build it once per service on
 * the service's `PgClient`.
 *
 * **Gotchas**
 * - Expiry is computed with the database clock, so the instances' own clocks do not matter.
 * - Do not call the locker (or `withStreamLock`) inside `PgClient.withTransaction`: the lock would be invisible
 *   to other instances until commit, and the keepalive would queue behind the transaction's connection.
 * - A cursor row must exist for the pair; the locker never inserts one.
 *
 * @since 0.1.0
 */
import { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Duration, Effect, Layer, Option } from "effect"
import * as PerspectiveStreamLocker from "./PerspectiveStreamLocker.js"
import * as PerspectiveStreamLockOptions from "./PerspectiveStreamLockOptions.js"
import type { InvalidStreamLockOptions } from "./StreamLockError.js"

const { release, renew, tryAcquire } = PgOperations.StreamLocks

/**
 * Validates the options and builds the locker on the `PgClient` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options?: PerspectiveStreamLockOptions.Input
): Effect.Effect<PerspectiveStreamLocker.Shape, InvalidStreamLockOptions, PgClient.PgClient> =>
  Effect.flatMap(PerspectiveStreamLockOptions.decode(options), makeDecoded)

/**
 * {@link make} for options `PerspectiveStreamLockOptions.decode` checked already.
 *
 * @category constructors
 * @since 0.5.0
 */
export const makeDecoded = (
  decoded: PerspectiveStreamLockOptions.PerspectiveStreamLockOptions
): Effect.Effect<PerspectiveStreamLocker.Shape, never, PgClient.PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const timeout = Duration.toMillis(decoded.lockTimeout)
    return PerspectiveStreamLocker.fromStorage(decoded, {
      acquire: (streamId, perspectiveName, instanceId, reason) =>
        Effect.map(tryAcquire(client, { streamId, perspectiveName, instanceId, reason, lockTimeoutMillis: timeout }), Option.isSome),
      renew: (streamId, perspectiveName, instanceId) =>
        Effect.map(renew(client, { streamId, perspectiveName, instanceId, lockTimeoutMillis: timeout }), Option.isSome),
      release: (streamId, perspectiveName, instanceId) => release(client, { streamId, perspectiveName, instanceId })
    })
  })

/**
 * The Postgres locker as a layer; fails at start-up with {@link InvalidStreamLockOptions} on bad options.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options?: PerspectiveStreamLockOptions.Input
): Layer.Layer<PerspectiveStreamLocker.PerspectiveStreamLocker, InvalidStreamLockOptions, PgClient.PgClient> =>
  Layer.effect(PerspectiveStreamLocker.PerspectiveStreamLocker, make(options))

/**
 * {@link layer} for options `PerspectiveStreamLockOptions.decode` checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (
  options: PerspectiveStreamLockOptions.PerspectiveStreamLockOptions
): Layer.Layer<PerspectiveStreamLocker.PerspectiveStreamLocker, never, PgClient.PgClient> =>
  Layer.effect(PerspectiveStreamLocker.PerspectiveStreamLocker, makeDecoded(options))
