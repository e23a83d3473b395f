/**
 * What the operations page shows, computed from the operations the CLI runs: `PgStatus.snapshot` (perspectives
 * with lag, versions with build progress, instances, stream locks, the watchdog's waiting and stuck pairs),
 * `DeadLetters.list` and `FailedCursors.list` of `@whizbang/cli`. No SQL of its own.
 *
 * One computation costs what `whizbang status` plus `whizbang dead-letters list` and `whizbang failed` cost: 10
 * statements (see the package README for the measured rate of an open page).
 *
 * @since 0.4.0
 */
import { DeadLetters, FailedCursors, type OperationError } from "@whizbang/cli"
import { type PgClient, PgStatus, type PostgresError } from "@whizbang/postgres"
import { Duration, Effect } from "effect"

/**
 * @category models
 * @since 0.4.0
 */
export interface Snapshot {
  readonly status: PgStatus.Snapshot
  /** Oldest first, at most `limit`. */
  readonly deadLetters: ReadonlyArray<DeadLetters.DeadLetter>
  /** Most recent first, at most `limit`. */
  readonly failed: ReadonlyArray<FailedCursors.FailedCursor>
}

/**
 * Options of {@link compute}.
 *
 * @category models
 * @since 0.4.0
 */
export interface Options {
  /** Heartbeat age after which an instance counts as dead; default 30 seconds (as `whizbang status`). */
  readonly deadInstanceAfter?: Duration.Input | undefined
  /** Pending this long without progress counts as stuck; default 30 seconds (as `whizbang status`). */
  readonly stuckAfter?: Duration.Input | undefined
  /** At most this many dead letters and failed cursors; default 50. */
  readonly limit?: number | undefined
}

/**
 * Computes a snapshot of the client's schema.
 *
 * @category constructors
 * @since 0.4.0
 */
export const compute = (
  options: Options = {}
): Effect.Effect<Snapshot, PostgresError.PostgresError | OperationError.OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const status = yield* PgStatus.snapshot({
      watchdog: {
        stuckAfter: options.stuckAfter ?? Duration.seconds(30),
        deadInstanceAfter: options.deadInstanceAfter ?? Duration.seconds(30)
      }
    })
    const limit = options.limit ?? 50
    return {
      status,
      deadLetters: yield* DeadLetters.list({ limit }),
      failed: yield* FailedCursors.list({ limit })
    }
  }).pipe(Effect.withSpan("whizbang.dashboard.snapshot"))
