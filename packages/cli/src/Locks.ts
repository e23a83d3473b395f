/**
 * Stream locks: list every held lock, and force-release locks whoever holds them (for a holder that died
 * mid-rewind and whose lock has not expired yet). Releasing a live holder's lock lets normal processing run
 * beside its rewind: only do it when the holder is known dead.
 *
 * @since 0.1.0
 */
import { type PgClient, PgStatus } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { orFailure, run } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import type { OperationError } from "./OperationError.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface Filter {
  readonly streamId?: string | undefined
  readonly perspective?: string | undefined
  readonly instanceId?: string | undefined
}

/**
 * @category models
 * @since 0.1.0
 */
export interface Released {
  readonly streamId: string
  readonly perspective: string
  readonly heldBy: string
  readonly reason: string | null
}

/**
 * Every cursor carrying a lock, optionally filtered.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = (filter: Filter = {}): Effect.Effect<ReadonlyArray<PgStatus.Lock>, OperationError, PgClient.PgClient> =>
  Effect.map(orFailure(PgStatus.locks), (locks) =>
    locks.filter(
      (l) =>
        (filter.streamId === undefined || l.streamId === filter.streamId.toLowerCase()) &&
        (filter.perspective === undefined || l.perspective === filter.perspective) &&
        (filter.instanceId === undefined || l.instanceId === filter.instanceId.toLowerCase())
    )
  )

/**
 * Clears every matching lock (all held locks with an empty filter) and returns what it released.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forceRelease = (filter: Filter = {}): Effect.Effect<ReadonlyArray<Released>, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const streamId = filter.streamId === undefined ? null : yield* Validate.uuid(filter.streamId, "stream")
    const perspective = filter.perspective === undefined ? null : yield* Validate.perspective(filter.perspective)
    const instanceId = filter.instanceId === undefined ? null : yield* Validate.uuid(filter.instanceId, "instance")
    const rows = yield* run(PgOperations.StreamLocks.forceRelease, { streamId, perspectiveName: perspective, instanceId })
    // Work held behind the locks is claimable now: the workers are told rather than left to their next poll.
    if (rows.length > 0) yield* run(PgOperations.Work.wake)
    yield* Effect.forEach(
      rows,
      (r) =>
        Effect.logWarning("stream lock force-released").pipe(
          Effect.annotateLogs({
            "whizbang.stream_id": r.streamId,
            "whizbang.perspective": r.perspectiveName,
            "whizbang.instance_id": r.heldBy
          })
        ),
      { discard: true }
    )
    return rows.map((r): Released => ({ streamId: r.streamId, perspective: r.perspectiveName, heldBy: r.heldBy, reason: r.heldFor }))
  })
