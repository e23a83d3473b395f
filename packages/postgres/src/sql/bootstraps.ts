/**
 * Bootstraps of a perspective added to a service with history (`@whizbang/stream-locker`): the streams it has
 * history on, the locked placeholder cursor that guards each one while it is rebuilt, its completion, and its
 * removal when the rebuild fails.
 */
import { Schema } from "effect"
import { Events as e, PerspectiveCursors as c } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

interface Pair {
  readonly streamId: string
  readonly perspectiveName: string
}

/**
 * Streams with events of the given types and no cursor for the perspective, oldest first.
 *
 * @category operations
 * @since 0.5.0
 */
export const streamsWithoutCursor = Operation.findAll({
  name: "bootstraps.streamsWithoutCursor",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: e.streamId },
  params: (r: { readonly eventTypes: ReadonlyArray<string>; readonly perspectiveName: string }) => [r.eventTypes, r.perspectiveName],
  sql: `
SELECT e.${e.streamId}
FROM ${e.table} e
WHERE e.${e.eventType} = ANY($1::text[])
  AND NOT EXISTS (SELECT 1 FROM ${c.table} c WHERE c.${c.streamId} = e.${e.streamId} AND c.${c.perspectiveName} = $2::text)
GROUP BY e.${e.streamId}
ORDER BY min(e.${e.createdAt}), e.${e.streamId}`
})

/**
 * Creates the pair's cursor as a placeholder (no position) that this instance holds the stream lock of, reason
 * "bootstrap"; returns 0 when a cursor exists already (the normal path got there first), and the bootstrap of
 * that stream then writes nothing, else 1. While the lock lives, workers neither claim nor apply the pair, and a
 * completion fetched before it is refused (see `completeWork`).
 *
 * @category operations
 * @since 0.5.0
 */
export const insertLockedCursor = Operation.count({
  name: "bootstraps.insertLockedCursor",
  params: (r: Pair & { readonly instanceId: string; readonly lockTimeoutMillis: number }) => [
    r.streamId,
    r.perspectiveName,
    r.instanceId,
    r.lockTimeoutMillis
  ],
  sql: `
INSERT INTO ${c.table} (${c.streamId}, ${c.perspectiveName}, ${c.status}, ${c.streamLockInstanceId}, ${c.streamLockExpiry}, ${c.streamLockReason})
VALUES ($1::uuid, $2::text, 0, $3::uuid, statement_timestamp() + $4::double precision * interval '1 millisecond', 'bootstrap')
ON CONFLICT (${c.streamId}, ${c.perspectiveName}) DO NOTHING
RETURNING ${c.streamId}`
})

/**
 * Moves the placeholder to the last replayed event (the lock is released after the commit).
 *
 * @category operations
 * @since 0.5.0
 */
export const finishCursor = Operation.void({
  name: "bootstraps.finishCursor",
  params: (r: Pair & { readonly lastEventId: string }) => [r.streamId, r.perspectiveName, r.lastEventId],
  sql: `
UPDATE ${c.table} SET ${c.lastEventId} = $3::uuid, ${c.status} = 2, ${c.error} = NULL, ${c.processedAt} = now()
WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text`
})

/**
 * Removes a placeholder that never got a position (the rebuild failed), held by this instance or already released
 * by it, and untouched by any worker (status still 0), so a later run bootstraps the stream again.
 *
 * @category operations
 * @since 0.5.0
 */
export const dropPlaceholder = Operation.void({
  name: "bootstraps.dropPlaceholder",
  params: (r: Pair & { readonly instanceId: string }) => [r.streamId, r.perspectiveName, r.instanceId],
  sql: `
DELETE FROM ${c.table}
WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text AND ${c.lastEventId} IS NULL AND ${c.status} = 0
  AND (${c.streamLockInstanceId} IS NULL OR ${c.streamLockInstanceId} = $3::uuid)`
})
