/**
 * Cursors flagged Failed, with their error and where they are stopped: the head pending event, its attempts
 * and when it is retried. `whizbang failed` prints them.
 *
 * @since 0.1.0
 */
import type { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { iso, run } from "./internal/database.js"
import * as Validate from "./internal/validate.js"
import type { OperationError } from "./OperationError.js"

/**
 * @category models
 * @since 0.1.0
 */
export interface FailedCursor {
  readonly streamId: string
  readonly perspective: string
  readonly lastEventId: string | null
  readonly error: string | null
  readonly failedAt: string | null
  /** The event the pair is stopped at; null when its work went to dead letters and nothing is pending. */
  readonly headEventId: string | null
  readonly attempts: number | null
  readonly retryAfter: string | null
}

/**
 * Most recent first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = (
  options: { readonly perspective?: string | undefined; readonly limit?: number | undefined } = {}
): Effect.Effect<ReadonlyArray<FailedCursor>, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const perspective = options.perspective === undefined ? null : yield* Validate.perspective(options.perspective)
    const rows = yield* run(PgOperations.FailedCursors.list, { perspectiveName: perspective, limit: options.limit ?? 100 })
    return rows.map(
      (r): FailedCursor => ({
        streamId: r.streamId,
        perspective: r.perspectiveName,
        lastEventId: r.lastEventId,
        error: r.error,
        failedAt: iso(r.processedAt),
        headEventId: r.headEventId,
        attempts: r.attempts,
        retryAfter: iso(r.scheduledFor)
      })
    )
  })
