/**
 * Failure bookkeeping, in the completion transaction: the failed row's attempts grow and it waits out a backoff;
 * the cursor gets the Failed flag and the error but keeps its position (a failure never resets it); a row that
 * reached the attempt limit moves to `wh_dead_letters` with its payload and error, and the stream continues.
 */
import type { CompletionStrategy } from "@whizbang/core"
import { Schema } from "effect"
import { DeadLetters as d, Events as e, PerspectiveCursors as c, PerspectiveEvents as pe } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * Records failed applies. Backoff: `initial * multiplier ^ (attempts - 1)` milliseconds, capped at `max`. A failure
 * that is not the event's (`countsAttempt` false: the stored model no longer decodes) waits out the backoff without
 * counting an attempt, so it never dead-letters the event. Returns every updated row, `exhausted` when it reached the
 * limit (`maxAttempts`, null: unlimited).
 *
 * @category operations
 * @since 0.5.0
 */
export const recordFailures = Operation.findAll({
  name: "reportFailures.recordFailures",
  Row: Schema.Struct({ workId: Schema.String, exhausted: Schema.Boolean }),
  columns: { workId: pe.workId },
  params: (r: {
    readonly failures: ReadonlyArray<CompletionStrategy.PerspectiveFailure>
    readonly backoff: { readonly initialMillis: number; readonly multiplier: number; readonly maxMillis: number }
    readonly maxAttempts: number | null
  }) => [
    r.failures.map((f) => f.workId),
    r.failures.map((f) => f.error),
    r.backoff.initialMillis,
    r.backoff.multiplier,
    r.backoff.maxMillis,
    r.maxAttempts,
    r.failures.map((f) => f.countsAttempt !== false)
  ],
  prepared: true,
  sql: `
UPDATE ${pe.table} pe
SET ${pe.attempts} = pe.${pe.attempts} + CASE WHEN f.counts THEN 1 ELSE 0 END, ${pe.error} = f.error, ${pe.instanceId} = NULL, ${pe.leaseExpiry} = NULL,
    ${pe.scheduledFor} = now() + make_interval(secs => least($5::float8, $3::float8 * power($4::float8, pe.${pe.attempts})) / 1000.0)
FROM unnest($1::uuid[], $2::text[], $7::boolean[]) AS f(work_id, error, counts)
WHERE pe.${pe.workId} = f.work_id
RETURNING pe.${pe.workId}, (f.counts AND $6::int IS NOT NULL AND pe.${pe.attempts} >= $6::int) AS exhausted`
})

/**
 * Flags the failed pairs' cursors Failed (4) with the error, keeping their position.
 *
 * @category operations
 * @since 0.5.0
 */
export const flagFailedCursors = Operation.void({
  name: "reportFailures.flagFailedCursors",
  params: (r: { readonly failures: ReadonlyArray<CompletionStrategy.PerspectiveFailure> }) => [
    r.failures.map((f) => f.streamId),
    r.failures.map((f) => f.perspectiveName),
    r.failures.map((f) => f.error)
  ],
  prepared: true,
  sql: `
INSERT INTO ${c.table} AS c (${c.streamId}, ${c.perspectiveName}, ${c.status}, ${c.error}, ${c.processedAt})
SELECT s, p, 4, e, now() FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(s, p, e)
ON CONFLICT (${c.streamId}, ${c.perspectiveName}) DO UPDATE
  SET ${c.status} = (c.${c.status} & ~(1 | 2)) | 4, ${c.error} = excluded.${c.error}, ${c.processedAt} = excluded.${c.processedAt}`
})

/**
 * Moves exhausted work rows to dead letters.
 *
 * @category operations
 * @since 0.5.0
 */
export const deadLetter = Operation.void({
  name: "reportFailures.deadLetter",
  params: (r: { readonly workIds: ReadonlyArray<string> }) => [r.workIds],
  sql: `
WITH moved AS (
  DELETE FROM ${pe.table} WHERE ${pe.workId} = ANY($1::uuid[])
  RETURNING ${pe.workId}, ${pe.streamId}, ${pe.perspectiveName}, ${pe.eventId}, ${pe.attempts}, ${pe.error}
)
INSERT INTO ${d.table} (${d.workId}, ${d.streamId}, ${d.perspectiveName}, ${d.eventId}, ${d.eventType}, ${d.payload}, ${d.error}, ${d.attempts})
SELECT m.${pe.workId}, m.${pe.streamId}, m.${pe.perspectiveName}, m.${pe.eventId}, e.${e.eventType}, e.${e.payload}, coalesce(m.${pe.error}, 'unknown error'), m.${pe.attempts}
FROM moved m JOIN ${e.table} e ON e.${e.eventId} = m.${pe.eventId}`
})
