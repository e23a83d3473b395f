import { Schema } from "effect"
import { ActiveStreams as a, PerspectiveCursors as c, PerspectiveEvents as pe, ServiceInstances as i } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * One row of {@link diagnose} (`PgWatchdog.Row`), named as its columns.
 *
 * @category models
 * @since 0.5.0
 */
export const Diagnosis = Schema.Struct({
  [pe.streamId]: Schema.String,
  [pe.perspectiveName]: Schema.String,
  pending: Schema.Number,
  [pe.eventId]: Schema.String,
  [pe.attempts]: Schema.Number,
  [pe.error]: Schema.NullOr(Schema.String),
  [pe.scheduledFor]: Schema.NullOr(Schema.Date),
  backing_off: Schema.Boolean,
  waiting_seconds: Schema.Number,
  cursor_status: Schema.NullOr(Schema.Number),
  [c.rewindFlaggedAt]: Schema.NullOr(Schema.Date),
  [c.rewindFirstFlaggedAt]: Schema.NullOr(Schema.Date),
  [c.streamLockInstanceId]: Schema.NullOr(Schema.String),
  [c.streamLockReason]: Schema.NullOr(Schema.String),
  [c.streamLockExpiry]: Schema.NullOr(Schema.Date),
  lease_instance_id: Schema.NullOr(Schema.String),
  [a.leaseExpiry]: Schema.NullOr(Schema.Date),
  lease_instance_known: Schema.Boolean,
  lease_heartbeat_age_seconds: Schema.NullOr(Schema.Number),
  instances: Schema.Number,
  runners: Schema.Number
})

/**
 * The watchdog's diagnosis: every (stream, perspective) whose oldest pending work row is older than $1 seconds
 * and whose cursor has not advanced in that time, with everything needed to say why — the head (lowest event
 * id) pending row's attempts, error and backoff, the cursor's lock and rewind flag, the stream lease and the
 * lease holder's heartbeat. Classifying happens in `PgWatchdog`, so the rules are unit-testable.
 *
 * `runners` counts the live instances (heartbeat newer than $3 seconds) that run the pair's perspective (an
 * instance with no recorded perspective set runs every one).
 *
 * Params: $1 stuck-after seconds, $2 max rows, $3 dead-instance-after seconds.
 *
 * @category operations
 * @since 0.5.0
 */
export const diagnose = Operation.findAll({
  name: "watchdog.diagnose",
  Row: Diagnosis,
  params: (r: { readonly stuckAfterSeconds: number; readonly limit: number; readonly deadInstanceAfterSeconds: number }) => [
    r.stuckAfterSeconds,
    r.limit,
    r.deadInstanceAfterSeconds
  ],
  sql: `
WITH heads AS (
  SELECT DISTINCT ON (pe.${pe.streamId}, pe.${pe.perspectiveName})
         pe.${pe.streamId}, pe.${pe.perspectiveName}, pe.${pe.eventId}, pe.${pe.attempts}, pe.${pe.error}, pe.${pe.scheduledFor}, pe.${pe.createdAt}
  FROM ${pe.table} pe
  WHERE pe.${pe.processedAt} IS NULL
  ORDER BY pe.${pe.streamId}, pe.${pe.perspectiveName}, pe.${pe.eventId}
),
pending AS (
  SELECT ${pe.streamId}, ${pe.perspectiveName}, count(*)::int AS pending
  FROM ${pe.table} WHERE ${pe.processedAt} IS NULL GROUP BY ${pe.streamId}, ${pe.perspectiveName}
)
SELECT h.${pe.streamId}, h.${pe.perspectiveName}, p.pending, h.${pe.eventId}, h.${pe.attempts}, h.${pe.error},
       h.${pe.scheduledFor}, h.${pe.scheduledFor} IS NOT NULL AND h.${pe.scheduledFor} > now() AS backing_off,
       extract(epoch FROM now() - h.${pe.createdAt})::float8 AS waiting_seconds,
       c.${c.status} AS cursor_status, c.${c.processedAt} AS cursor_processed_at,
       c.${c.rewindFlaggedAt}, c.${c.rewindFirstFlaggedAt},
       c.${c.streamLockInstanceId}, c.${c.streamLockReason}, c.${c.streamLockExpiry},
       a.${a.instanceId} AS lease_instance_id, a.${a.leaseExpiry},
       si.${i.instanceId} IS NOT NULL AS lease_instance_known,
       extract(epoch FROM now() - si.${i.lastHeartbeatAt})::float8 AS lease_heartbeat_age_seconds,
       (SELECT count(*)::int FROM ${i.table}) AS instances,
       (SELECT count(*)::int FROM ${i.table} r
        WHERE r.${i.lastHeartbeatAt} > now() - make_interval(secs => $3::float8)
          AND (r.${i.perspectiveNames} IS NULL OR h.${pe.perspectiveName} = ANY(r.${i.perspectiveNames}))) AS runners
FROM heads h
JOIN pending p ON p.${pe.streamId} = h.${pe.streamId} AND p.${pe.perspectiveName} = h.${pe.perspectiveName}
LEFT JOIN ${c.table} c ON c.${c.streamId} = h.${pe.streamId} AND c.${c.perspectiveName} = h.${pe.perspectiveName}
LEFT JOIN ${a.table} a ON a.${a.streamId} = h.${pe.streamId} AND a.${a.leaseExpiry} > now()
LEFT JOIN ${i.table} si ON si.${i.instanceId} = a.${a.instanceId}
WHERE h.${pe.createdAt} <= now() - make_interval(secs => $1::float8)
  AND (c.${c.processedAt} IS NULL OR c.${c.processedAt} <= now() - make_interval(secs => $1::float8))
ORDER BY h.${pe.createdAt}
LIMIT $2::int`
})

/**
 * How many instances are live (heartbeat newer than the seconds given).
 *
 * @category operations
 * @since 0.5.0
 */
export const countLive = Operation.single({
  name: "watchdog.countLive",
  Row: Schema.Struct({ n: Schema.Number }),
  params: (r: { readonly deadInstanceAfterSeconds: number }) => [r.deadInstanceAfterSeconds],
  sql: `SELECT count(*)::int AS n FROM ${i.table} WHERE ${i.lastHeartbeatAt} > now() - make_interval(secs => $1::float8)`
})
