/**
 * The coordinator's completions (`reportCompletions`): fences, model rows, cursors, work rows, lease release,
 * notifications and snapshots in one statement, whose refusal is the `Refused` reason.
 *
 * @internal
 */
import { StorageReason, WorkCoordinator } from "@whizbang/core"
import { Effect } from "effect"
import type { PgClient } from "../PgClient.js"
import type * as PgPerspectiveSnapshots from "../PgPerspectiveSnapshots.js"
import type * as PgQueueVacuum from "../PgQueueVacuum.js"
import * as Complete from "../sql/completeWork.js"
import { coordinatorError } from "./coordinatorError.js"

/** `reportCompletions` of one coordinator (one instance). */
export const make = (
  client: PgClient["Service"],
  context: {
    readonly instanceId: string
    readonly leaseSeconds: number
    readonly bootToken: string | null
    readonly debugMode: boolean
    readonly snapshots: PgPerspectiveSnapshots.Options
    readonly queueVacuum: ReturnType<typeof PgQueueVacuum.make>
  }
): WorkCoordinator.WorkCoordinator["Service"]["reportCompletions"] => {
  const { instanceId, leaseSeconds, bootToken, debugMode, snapshots, queueVacuum } = context
  return (completions) => {
    if (completions.length === 0) return Effect.void
    // Fences, model rows, cursors, work rows, lease release, notifications and snapshots: one round trip, one
    // transaction (the statement's own). A refusal raises `refusedState` and rolls all of it back.
    return Complete.completeWork(client, { instanceId, leaseSeconds, bootToken, completions, debugMode, snapshots }).pipe(
      // The completion removed exactly these work rows (else it was refused).
      Effect.andThen(queueVacuum.removed(completions.reduce((n, c) => n + c.workIds.length, 0))),
      Effect.catchTag("PostgresError", (e) =>
        Effect.fail(
          e.reason._tag === "Unknown" && e.reason.code === Complete.refusedState
            ? new WorkCoordinator.WorkCoordinatorError({
                operation: "reportCompletions",
                reason: new StorageReason.Refused(),
                detail: e.message,
                cause: e
              })
            : coordinatorError("reportCompletions")(e)
        )
      )
    )
  }
}
