/**
 * `wh_lifecycle_pending` statements. An event's lifecycle is complete when none of its work rows is pending
 * that fires receptors (work of a perspective version not live at append does not hold it back) (the NOT EXISTS uses the (stream_id, perspective_name, event_id) unique index through stream_id). A work row
 * that was dead-lettered is gone too, so the claim also returns the perspectives that dead-lettered the event
 * (`dead_lettered_by`, through the (stream_id, perspective_name, event_id) dead-letter index): such an event is
 * reported as dead-lettered, never as applied by every perspective. Rows with `claimed_at = 'infinity'` are parked
 * (see {@link completePending}): the claim never takes them, since `claimed_by` is null but `claimed_at` is set.
 */
import { Schema } from "effect"
import { DeadLetters as d, Events as e, LifecyclePending as l, PerspectiveEvents as pe } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import { StoredEvent } from "./readStream.js"

/**
 * Claims completed lifecycles and returns their events. Params: $1 instance id, $2 event ids (null = any),
 * $3 seconds after which another instance's claim is taken over.
 *
 * @category operations
 * @since 0.5.0
 */
export const claimCompleted = Operation.findAll({
  name: "lifecycle.claimCompleted",
  Row: Schema.Struct({ ...StoredEvent.fields, deadLetteredBy: Schema.Array(Schema.String) }),
  columns: {
    eventId: e.eventId,
    streamId: e.streamId,
    streamVersion: e.streamVersion,
    eventType: e.eventType,
    deadLetteredBy: "dead_lettered_by"
  },
  params: (r: { readonly instanceId: string; readonly eventIds: ReadonlyArray<string> | null; readonly reclaimAfterSeconds: number }) => [
    r.instanceId,
    r.eventIds,
    r.reclaimAfterSeconds
  ],
  prepared: true,
  sql: `
WITH claimed AS (
  UPDATE ${l.table} lp SET ${l.claimedBy} = $1::uuid, ${l.claimedAt} = now()
  WHERE lp.${l.eventId} IN (
    SELECT l.${l.eventId} FROM ${l.table} l
    WHERE ($2::uuid[] IS NULL OR l.${l.eventId} = ANY($2::uuid[]))
      AND ((l.${l.claimedBy} IS NULL AND l.${l.claimedAt} IS NULL) OR l.${l.claimedAt} < now() - make_interval(secs => $3::int))
      AND NOT EXISTS (
        SELECT 1 FROM ${pe.table} pe
        WHERE pe.${pe.streamId} = l.${l.streamId} AND pe.${pe.eventId} = l.${l.eventId} AND pe.${pe.processedAt} IS NULL AND pe.${pe.fires}
      )
    ORDER BY l.${l.eventId}
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
  )
  RETURNING lp.${l.eventId}
)
SELECT e.${e.eventId}, e.${e.streamId}, e.${e.streamVersion}::int AS ${e.streamVersion}, e.${e.eventType}, e.${e.payload}, e.${e.metadata}, e.${e.scope},
       coalesce((
         SELECT array_agg(DISTINCT d.${d.perspectiveName} ORDER BY d.${d.perspectiveName}) FROM ${d.table} d
         WHERE d.${d.streamId} = e.${e.streamId} AND d.${d.eventId} = e.${e.eventId}
       ), '{}') AS dead_lettered_by
FROM claimed c JOIN ${e.table} e ON e.${e.eventId} = c.${l.eventId}
ORDER BY e.${e.eventId}`
})

/**
 * Forgets lifecycles that fired — except those of events still dead-lettered by some perspective: their
 * `DeadLettered` stage fired, and the row is parked (`claimed_at = 'infinity'`: never claimed, not owed) so that
 * retrying the event's last dead letter (`whizbang dead-letters retry`) releases it, and `PostAllPerspectives` /
 * `PostLifecycle` fire once the retried work is applied. Discarding any of its letters deletes the parked row.
 * Params: $1 event ids.
 *
 * @category operations
 * @since 0.5.0
 */
export const completePending = Operation.void({
  name: "lifecycle.completePending",
  params: (r: { readonly eventIds: ReadonlyArray<string> }) => [r.eventIds],
  prepared: true,
  sql: `
WITH parked AS (
  UPDATE ${l.table} l SET ${l.claimedBy} = NULL, ${l.claimedAt} = 'infinity'
  WHERE l.${l.eventId} = ANY($1::uuid[])
    AND EXISTS (SELECT 1 FROM ${d.table} d WHERE d.${d.streamId} = l.${l.streamId} AND d.${d.eventId} = l.${l.eventId})
  RETURNING l.${l.eventId}
)
DELETE FROM ${l.table} l
WHERE l.${l.eventId} = ANY($1::uuid[]) AND l.${l.eventId} NOT IN (SELECT p.${l.eventId} FROM parked p)`
})
