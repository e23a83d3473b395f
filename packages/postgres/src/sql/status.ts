/**
 * Operational read-outs for `PgStatus` (the `whizbang status` command and `PgHealth`). These scan the work,
 * cursor and dead-letter tables with GROUP BY: meant for an operator or a health probe every few seconds, not
 * for the hot path.
 */
import { Schema } from "effect"
import {
  DeadLetters as dl,
  Events as e,
  LifecyclePending as lp,
  PerspectiveCursors as c,
  PerspectiveEvents as pe,
  ServiceInstances as i
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * One row per perspective that has cursors, pending work or dead letters, with the live instances (heartbeat newer
 * than `deadInstanceAfterSeconds`) that run it (an instance with no recorded perspective set runs every one).
 *
 * @category operations
 * @since 0.5.0
 */
export const perspectives = Operation.findAll({
  name: "status.perspectives",
  Row: Schema.Struct({
    perspective: Schema.String,
    streams: Schema.Number,
    pending: Schema.Number,
    pendingStreams: Schema.Number,
    lagSeconds: Schema.Number,
    failed: Schema.Number,
    rewindRequired: Schema.Number,
    deadLetters: Schema.Number,
    runningInstances: Schema.Number
  }),
  columns: {
    perspective: c.perspectiveName,
    pendingStreams: "pending_streams",
    lagSeconds: "lag_seconds",
    rewindRequired: "rewind_required",
    deadLetters: "dead_letters",
    runningInstances: "running_instances"
  },
  params: (r: { readonly deadInstanceAfterSeconds: number }) => [r.deadInstanceAfterSeconds],
  sql: `
WITH names AS (
  SELECT ${c.perspectiveName} FROM ${c.table}
  UNION SELECT ${pe.perspectiveName} FROM ${pe.table} WHERE ${pe.processedAt} IS NULL
  UNION SELECT ${dl.perspectiveName} FROM ${dl.table}
),
cur AS (
  SELECT ${c.perspectiveName}, count(*)::int AS streams,
         count(*) FILTER (WHERE ${c.status} & 4 <> 0)::int AS failed,
         count(*) FILTER (WHERE ${c.status} & 32 <> 0)::int AS rewind_required
  FROM ${c.table} GROUP BY ${c.perspectiveName}
),
work AS (
  SELECT pe.${pe.perspectiveName}, count(*)::int AS pending, count(DISTINCT pe.${pe.streamId})::int AS pending_streams,
         extract(epoch FROM now() - min(e.${e.createdAt}))::float8 AS lag_seconds
  FROM ${pe.table} pe JOIN ${e.table} e ON e.${e.eventId} = pe.${pe.eventId}
  WHERE pe.${pe.processedAt} IS NULL GROUP BY pe.${pe.perspectiveName}
),
dl AS (SELECT ${dl.perspectiveName}, count(*)::int AS dead_letters FROM ${dl.table} GROUP BY ${dl.perspectiveName})
SELECT n.${c.perspectiveName}, coalesce(cur.streams, 0) AS streams, coalesce(work.pending, 0) AS pending,
       coalesce(work.pending_streams, 0) AS pending_streams, coalesce(work.lag_seconds, 0) AS lag_seconds,
       coalesce(cur.failed, 0) AS failed, coalesce(cur.rewind_required, 0) AS rewind_required,
       coalesce(dl.dead_letters, 0) AS dead_letters,
       (SELECT count(*)::int FROM ${i.table} i
        WHERE i.${i.lastHeartbeatAt} > now() - make_interval(secs => $1::float8)
          AND (i.${i.perspectiveNames} IS NULL OR n.${c.perspectiveName} = ANY(i.${i.perspectiveNames}))) AS running_instances
FROM names n
LEFT JOIN cur ON cur.${c.perspectiveName} = n.${c.perspectiveName}
LEFT JOIN work ON work.${c.perspectiveName} = n.${c.perspectiveName}
LEFT JOIN dl ON dl.${c.perspectiveName} = n.${c.perspectiveName}
ORDER BY n.${c.perspectiveName}`
})

/**
 * Every registered instance with its heartbeat age in seconds.
 *
 * @category operations
 * @since 0.5.0
 */
export const instances = Operation.findAll({
  name: "status.instances",
  Row: Schema.Struct({
    instanceId: Schema.String,
    serviceName: Schema.String,
    hostName: Schema.String,
    processId: Schema.Number,
    startedAt: Schema.Date,
    perspectiveNames: Schema.NullOr(Schema.Array(Schema.String)),
    heartbeatAgeSeconds: Schema.Number
  }),
  columns: {
    instanceId: i.instanceId,
    serviceName: i.serviceName,
    hostName: i.hostName,
    processId: i.processId,
    startedAt: i.startedAt,
    perspectiveNames: i.perspectiveNames,
    heartbeatAgeSeconds: "heartbeat_age_seconds"
  },
  sql: `
SELECT ${i.instanceId}, ${i.serviceName}, ${i.hostName}, ${i.processId}, ${i.startedAt}, ${i.perspectiveNames},
       extract(epoch FROM now() - ${i.lastHeartbeatAt})::float8 AS heartbeat_age_seconds
FROM ${i.table} ORDER BY ${i.serviceName}, ${i.startedAt}`
})

/**
 * Every cursor that carries a stream lock (live or expired).
 *
 * @category operations
 * @since 0.5.0
 */
export const locks = Operation.findAll({
  name: "status.locks",
  Row: Schema.Struct({
    streamId: Schema.String,
    perspective: Schema.String,
    instanceId: Schema.String,
    reason: Schema.NullOr(Schema.String),
    expiresAt: Schema.NullOr(Schema.Date),
    expired: Schema.Boolean
  }),
  columns: {
    streamId: c.streamId,
    perspective: c.perspectiveName,
    instanceId: c.streamLockInstanceId,
    reason: c.streamLockReason,
    expiresAt: c.streamLockExpiry
  },
  sql: `
SELECT ${c.streamId}, ${c.perspectiveName}, ${c.streamLockInstanceId}, ${c.streamLockReason}, ${c.streamLockExpiry},
       ${c.streamLockExpiry} IS NOT NULL AND ${c.streamLockExpiry} <= now() AS expired
FROM ${c.table} WHERE ${c.streamLockInstanceId} IS NOT NULL
ORDER BY ${c.perspectiveName}, ${c.streamId}`
})

/**
 * Events whose end-of-processing stages are still owed (every perspective must apply them first), and events that
 * a perspective dead-lettered: their lifecycle ended in the `DeadLettered` stage, never in `PostAllPerspectives`
 * (unless their last dead letter is retried: a parked row, `claimed_at = 'infinity'`, is not owed).
 *
 * @category operations
 * @since 0.5.0
 */
export const lifecycles = Operation.single({
  name: "status.lifecycles",
  Row: Schema.Struct({ pending: Schema.Number, deadLetteredEvents: Schema.Number }),
  columns: { deadLetteredEvents: "dead_lettered_events" },
  sql: `
SELECT (SELECT count(*)::int FROM ${lp.table} WHERE ${lp.claimedAt} IS DISTINCT FROM 'infinity') AS pending,
       (SELECT count(DISTINCT ${dl.eventId})::int FROM ${dl.table}) AS dead_lettered_events`
})
