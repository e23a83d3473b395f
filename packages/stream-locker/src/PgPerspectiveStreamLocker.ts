/**
 * The Postgres PerspectiveStreamLocker: the lock lives in the `stream_lock_instance_id`, `stream_lock_expiry`
 * and `stream_lock_reason` columns of `wh_perspective_cursors`, and each operation is one atomic
 * `UPDATE ... WHERE ... RETURNING` (see `src/sql/`). No separate lock table, no advisory locks, no
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
import { Duration, Effect, Layer } from "effect"
import * as PerspectiveStreamLocker from "./PerspectiveStreamLocker.js"
import * as PerspectiveStreamLockOptions from "./PerspectiveStreamLockOptions.js"
import { releaseLock } from "./sql/releaseLock.js"
import { renewLock } from "./sql/renewLock.js"
import type { InvalidStreamLockOptions } from "./StreamLockError.js"
import { tryAcquireLock } from "./sql/tryAcquireLock.js"

/**
 * Validates the options and builds the locker on the `PgClient` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options?: PerspectiveStreamLockOptions.Input
): Effect.Effect<PerspectiveStreamLocker.Shape, InvalidStreamLockOptions, PgClient.PgClient> =>
  Effect.gen(function* () {
    const decoded = yield* PerspectiveStreamLockOptions.decode(options)
    const client = yield* PgClient.PgClient
    const timeout = Duration.toMillis(decoded.lockTimeout)
    return PerspectiveStreamLocker.fromStorage(decoded, {
      acquire: (streamId, perspectiveName, instanceId, reason) =>
        Effect.map(client.query(tryAcquireLock, [streamId, perspectiveName, instanceId, reason, timeout]), (rows) => rows.length > 0),
      renew: (streamId, perspectiveName, instanceId) =>
        Effect.map(client.query(renewLock, [streamId, perspectiveName, instanceId, timeout]), (rows) => rows.length > 0),
      release: (streamId, perspectiveName, instanceId) => Effect.asVoid(client.query(releaseLock, [streamId, perspectiveName, instanceId]))
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
