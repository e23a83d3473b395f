/**
 * The coordinator's failures (`reportFailures`): attempts, backoff and the cursor's Failed flag recorded for the
 * streams this instance still holds, and the rows that reached `maxPerspectiveEventAttempts` moved to
 * `wh_dead_letters`, in one transaction.
 *
 * @internal
 */
import type { WorkCoordinator } from "@whizbang/core"
import { Effect, Metric } from "effect"
import type { PgClient } from "../PgClient.js"
import * as Complete from "../sql/completeWork.js"
import * as Fail from "../sql/reportFailures.js"
import { coordinatorError } from "./coordinatorError.js"
import type * as CoordinatorOptions from "./coordinatorOptions.js"

// Telemetry: dead letters counted here, where they are written (names listed in Telemetry.ts).
const deadLettersMetric = Metric.counter("whizbang_dead_letters", { description: "work rows moved to wh_dead_letters" })

const unique = <A>(items: Iterable<A>) => [...new Set(items)]

/** `reportFailures` of one coordinator (one instance). */
export const make = (
  client: PgClient["Service"],
  context: {
    readonly instanceId: string
    readonly leaseSeconds: number
    readonly bootToken: string | null
    readonly maxAttempts: number | null
    readonly backoff: CoordinatorOptions.Validated["failureBackoff"]
  }
): WorkCoordinator.WorkCoordinator["Service"]["reportFailures"] => {
  const { instanceId, leaseSeconds, bootToken, maxAttempts, backoff } = context
  const fence = (streamIds: ReadonlyArray<string>) =>
    Effect.map(
      Complete.fenceStreams(client, { instanceId, streamIds, leaseSeconds, bootToken }),
      (rows) => new Set(rows.map((r) => r.streamId))
    )

  return (failures) => {
    if (failures.length === 0) return Effect.void
    const record = Effect.gen(function* () {
      const owned = yield* fence(unique(failures.map((f) => f.streamId)))
      const mine = failures.filter((f) => owned.has(f.streamId))
      if (mine.length === 0) return
      const updated = yield* Fail.recordFailures(client, { failures: mine, backoff, maxAttempts })
      yield* Fail.flagFailedCursors(client, { failures: mine })
      const exhausted = updated.filter((r) => r.exhausted).map((r) => r.workId)
      // A failure ends the read-your-writes waits it holds (they answer `Failing`) and a dead letter those of its
      // event: both wake @whizbang/sync's listeners (PgSyncInquiry LISTENs) with the bare schema, "look again".
      yield* client.query("SELECT pg_notify('wh_processed', current_schema())")
      if (exhausted.length > 0) {
        yield* Fail.deadLetter(client, { workIds: exhausted })
        yield* Metric.update(deadLettersMetric, exhausted.length)
        yield* Effect.logWarning(`moved ${exhausted.length} work row(s) to wh_dead_letters after ${maxAttempts} attempts`).pipe(
          Effect.annotateLogs({ "whizbang.instance_id": instanceId, "whizbang.work_ids": exhausted.join(",") })
        )
      }
    })
    return client.withTransaction(record).pipe(Effect.mapError(coordinatorError("reportFailures")))
  }
}
