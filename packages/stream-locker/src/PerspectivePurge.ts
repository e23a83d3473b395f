/**
 * Purge (the reserved lock reason `"purge"`): deletes one stream's data of one perspective — its `wh_per_<name>`
 * row, its cursor and its snapshots — under the stream lock, in one transaction fenced on still holding it.
 *
 * **Gotchas**
 * - Another instance holding the lock (a rewind) makes it return `"locked"`: retry later.
 * - With no cursor there is nothing to lock: the row and snapshots are deleted without the lock.
 * - Work still pending for the pair is not deleted: it is applied afterwards, starting a new model from the
 *   perspective's initial one.
 *
 * @since 0.1.0
 */
import { type DefinitionErrors, InstanceProvider, Perspective } from "@whizbang/core"
import { PgClient, PgPerspectiveSnapshots, type PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect, Option } from "effect"
import type { PerspectiveStreamLocker } from "./PerspectiveStreamLocker.js"
import { RebuildFailed, type StreamLockError, type StreamLockLost } from "./StreamLockError.js"
import { withStreamLock } from "./withStreamLock.js"

/**
 * `purged`, or `locked` when another instance holds the stream lock.
 *
 * @category models
 * @since 0.1.0
 */
export type Outcome = "purged" | "locked"

/**
 * Purges one (stream, perspective).
 *
 * @category constructors
 * @since 0.1.0
 */
export const purge = (
  streamId: string,
  perspectiveName: string
): Effect.Effect<
  Outcome,
  RebuildFailed | StreamLockError | StreamLockLost | PostgresError.PostgresError | DefinitionErrors.InvalidPerspectiveName,
  PgClient.PgClient | PerspectiveStreamLocker | InstanceProvider.InstanceProvider
> =>
  Effect.gen(function* () {
    const name = yield* Perspective.validateName(perspectiveName)
    const client = yield* PgClient.PgClient
    const { instanceId } = yield* InstanceProvider.InstanceProvider
    const remove = (fenced: boolean) =>
      client.withTransaction(
        Effect.gen(function* () {
          if (fenced && Option.isNone(yield* PgOperations.StreamLocks.fence(client, { streamId, perspectiveName: name, instanceId }))) {
            return yield* new RebuildFailed({
              operation: "purge",
              streamId,
              perspectiveName: name,
              reason: "the stream lock was lost before the commit"
            })
          }
          yield* PgOperations.Replays.deleteModel(client, { perspectiveName: name, streamId })
          yield* PgPerspectiveSnapshots.deleteAll(client, streamId, name)
          yield* PgOperations.Purges.deleteCursor(client, { streamId, perspectiveName: name })
        })
      )
    const exists = (yield* PgOperations.Purges.cursorExists(client, { streamId, perspectiveName: name })) > 0
    if (!exists) return yield* Effect.as(remove(false), "purged" as const)
    const locked = yield* withStreamLock(streamId, name, "purge", remove(true))
    return Option.isSome(locked) ? ("purged" as const) : ("locked" as const)
  })
