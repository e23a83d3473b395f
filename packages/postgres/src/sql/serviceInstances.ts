/**
 * `wh_service_instances`: registration, heartbeats, abandonment of silent instances and deregistration.
 *
 * A process proves it is the holder of an instance id with a random boot token kept in `metadata.bootToken`
 * (together with host name and process id, which alone do not tell two containers apart). Locks are taken in
 * one order everywhere: the instance row first, then that instance's `wh_active_streams` rows in stream-id order.
 */
import { Schema } from "effect"
import { ActiveStreams as a, ServiceInstances as i } from "../internal/columns.js"
import { epochMicros } from "../internal/epochMicros.js"
import type { Session } from "../internal/listenConnection.js"
import * as Operation from "../internal/operation.js"

/**
 * A registration: who the process is, its boot token, and the perspectives it runs (null: not recorded, every one).
 *
 * @category models
 * @since 0.5.0
 */
export interface Registration {
  readonly instanceId: string
  readonly serviceName: string
  readonly hostName: string
  readonly processId: number
  readonly bootToken: string
  readonly perspectiveNames: ReadonlyArray<string> | null
  /** The server session of the process's LISTEN connection, when one is open (see `recordSession`). */
  readonly session?: Session | undefined
}

/** The process holding an instance id. */
interface Holder {
  readonly instanceId: string
  readonly bootToken: string
}

const registrationParams = (r: Registration) => [
  r.instanceId,
  r.serviceName,
  r.hostName,
  r.processId,
  JSON.stringify(r.session === undefined ? { bootToken: r.bootToken } : { bootToken: r.bootToken, session: r.session }),
  r.perspectiveNames
]

/**
 * (`excluded.<column>` rather than now() in ON CONFLICT, and a difference of timestamps rather than timestamptz -
 * interval: Citus allows only immutable functions and operators there; the inserted values are now(), so the same
 * test on plain PostgreSQL.)
 * Registers the instance, or takes over its row when the row is stale (its process is gone) or is this very
 * process's. Returns no row when another live process holds the id.
 * Params: $1 instance id, $2 service, $3 host, $4 pid, $5 metadata (jsonb: the boot token, the LISTEN session when
 * known), $6 perspective names this instance runs (null: not recorded, taken as all), $7 stale threshold seconds.
 */
const register = `
INSERT INTO ${i.table} AS i (${i.instanceId}, ${i.serviceName}, ${i.hostName}, ${i.processId}, ${i.startedAt}, ${i.lastHeartbeatAt}, ${i.metadata}, ${i.perspectiveNames})
VALUES ($1::uuid, $2::text, $3::text, $4::int, now(), now(), $5::jsonb, $6::text[])
ON CONFLICT (${i.instanceId}) DO UPDATE
  SET ${i.serviceName} = excluded.${i.serviceName}, ${i.hostName} = excluded.${i.hostName}, ${i.processId} = excluded.${i.processId},
      ${i.startedAt} = excluded.${i.startedAt}, ${i.lastHeartbeatAt} = excluded.${i.lastHeartbeatAt}, ${i.metadata} = excluded.${i.metadata}, ${i.perspectiveNames} = excluded.${i.perspectiveNames}
  WHERE excluded.${i.lastHeartbeatAt} - i.${i.lastHeartbeatAt} >= make_interval(secs => $7::int)
     OR (i.${i.hostName} = excluded.${i.hostName} AND i.${i.processId} = excluded.${i.processId} AND i.${i.metadata}->>'bootToken' = excluded.${i.metadata}->>'bootToken')
RETURNING ${i.instanceId}`

/**
 * A `released` CTE freeing every lease of the instances the CTE `instances` returns, in stream-id lock order (as
 * {@link releaseStreamsOf}). The instance row is locked first: the `DELETE` reads the CTE that wrote it.
 */
const releasedOf = (instances: string, returning = false) => `released AS (
  DELETE FROM ${a.table}
  WHERE ${a.streamId} IN (
    SELECT a.${a.streamId} FROM ${a.table} a WHERE a.${a.instanceId} IN (SELECT i.${i.instanceId} FROM ${instances} i)
    ORDER BY a.${a.streamId} FOR UPDATE
  )
  ${returning ? `RETURNING ${a.streamId}` : ""}
)`

/**
 * {@link register} and, when it took the row, {@link releaseStreamsOf} for the instance, in one statement: a
 * taken-over stale row may still own its crashed predecessor's leases. (One round trip instead of four with BEGIN
 * and COMMIT: every tenant's services register at their start.) Params as {@link register}.
 */
export const registerAndRelease = Operation.count({
  name: "serviceInstances.registerAndRelease",
  params: (r: Registration & { readonly staleSeconds: number }) => [...registrationParams(r), r.staleSeconds],
  sql: `
WITH taken AS (${register.trim()}),
${releasedOf("taken")}
SELECT ${i.instanceId} FROM taken`
})

/** The row that refused a registration, for the error message. Params: $1 instance id. */
export const describe = Operation.findOne({
  name: "serviceInstances.describe",
  Row: Schema.Struct({ hostName: Schema.String, processId: Schema.Number, heartbeatAgeSeconds: Schema.Number }),
  columns: { hostName: i.hostName, processId: i.processId, heartbeatAgeSeconds: "heartbeat_age_seconds" },
  params: (r: { readonly instanceId: string }) => [r.instanceId],
  sql: `
SELECT ${i.hostName}, ${i.processId}, extract(epoch FROM now() - ${i.lastHeartbeatAt})::float8 AS heartbeat_age_seconds
FROM ${i.table} WHERE ${i.instanceId} = $1::uuid`
})

/** Params: $1 instance id, $2 boot token. Returns the row when this process still holds the id. */
export const heartbeat = Operation.count({
  name: "serviceInstances.heartbeat",
  params: (r: Holder) => [r.instanceId, r.bootToken],
  sql: `
UPDATE ${i.table} SET ${i.lastHeartbeatAt} = now()
WHERE ${i.instanceId} = $1::uuid AND ${i.metadata}->>'bootToken' = $2::text
RETURNING ${i.instanceId}`
})

/**
 * Re-registers after this instance was declared dead and its row removed (a long pause); does nothing when
 * another process registered the id meanwhile. Params as {@link register} minus the threshold.
 */
export const reRegister = Operation.count({
  name: "serviceInstances.reRegister",
  params: registrationParams,
  sql: `
INSERT INTO ${i.table} (${i.instanceId}, ${i.serviceName}, ${i.hostName}, ${i.processId}, ${i.startedAt}, ${i.lastHeartbeatAt}, ${i.metadata}, ${i.perspectiveNames})
VALUES ($1::uuid, $2::text, $3::text, $4::int, now(), now(), $5::jsonb, $6::text[])
ON CONFLICT (${i.instanceId}) DO NOTHING
RETURNING ${i.instanceId}`
})

/** A `gone` CTE removing the instances whose heartbeat is older than $1 seconds. */
const staleGone = `gone AS (
  DELETE FROM ${i.table}
  WHERE ${i.lastHeartbeatAt} <= now() - make_interval(secs => $1::int)
  RETURNING ${i.instanceId}, ${i.lastHeartbeatAt}
)`

/** A removed instance (`g` of `gone`) and its heartbeat's age, computed outside the RETURNING: Citus refuses now() there. */
const staleAge = `g.${i.instanceId}, extract(epoch FROM now() - g.${i.lastHeartbeatAt})::float8 AS heartbeat_age_seconds`

/**
 * Removes instances whose heartbeat is older than the threshold. Params: $1 stale threshold seconds.
 * Run {@link releaseStreamsOf} with the returned ids in the same transaction.
 */
export const abandonStale = Operation.findAll({
  name: "serviceInstances.abandonStale",
  Row: Schema.Struct({ instanceId: Schema.String, heartbeatAgeSeconds: Schema.Number }),
  columns: { instanceId: i.instanceId, heartbeatAgeSeconds: "heartbeat_age_seconds" },
  params: (r: { readonly staleSeconds: number }) => [r.staleSeconds],
  sql: `
WITH ${staleGone}
SELECT ${staleAge} FROM gone g`
})

/**
 * {@link abandonStale} and {@link releaseStreamsOf} of the instances it removed, in one statement: a heartbeat (and
 * every start of a tenant's services) runs it, and it finds nothing nearly always; the transaction of the two took
 * four round trips (`BEGIN`, the two statements' first, `COMMIT`), and on a tenant's view a `SET search_path`
 * before them. The instance rows are locked first, as in that transaction: the lease `DELETE` reads the CTE that
 * removed them. Each row carries the leases released in all. Params: $1 stale threshold seconds.
 *
 * @category operations
 * @since 0.8.0
 */
export const abandonStaleAndRelease = Operation.findAll({
  name: "serviceInstances.abandonStaleAndRelease",
  Row: Schema.Struct({ instanceId: Schema.String, heartbeatAgeSeconds: Schema.Number, released: Schema.Number }),
  columns: { instanceId: i.instanceId, heartbeatAgeSeconds: "heartbeat_age_seconds" },
  params: (r: { readonly staleSeconds: number }) => [r.staleSeconds],
  sql: `
WITH ${staleGone},
${releasedOf("gone", true)}
SELECT ${staleAge}, (SELECT count(*) FROM released)::int AS released FROM gone g`
})

/** Frees every stream lease of these instances (stream-id lock order). Params: $1 instance ids. */
export const releaseStreamsOf = Operation.count({
  name: "serviceInstances.releaseStreamsOf",
  params: (r: { readonly instanceIds: ReadonlyArray<string> }) => [r.instanceIds],
  sql: `
DELETE FROM ${a.table}
WHERE ${a.streamId} IN (
  SELECT ${a.streamId} FROM ${a.table} WHERE ${a.instanceId} = ANY($1::uuid[]) ORDER BY ${a.streamId} FOR UPDATE
)
RETURNING ${a.streamId}`
})

/** Removes this process's registration. Params: $1 instance id, $2 boot token. */
const deregister = `
DELETE FROM ${i.table} WHERE ${i.instanceId} = $1::uuid AND ${i.metadata}->>'bootToken' = $2::text
RETURNING ${i.instanceId}`

/**
 * {@link deregister} and the release of the instance's leases when the row was this process's, in one statement
 * (a tenant's services stop whenever it goes idle). Params as {@link deregister}.
 */
export const deregisterAndRelease = Operation.void({
  name: "serviceInstances.deregisterAndRelease",
  params: (r: Holder) => [r.instanceId, r.bootToken],
  sql: `
WITH removed AS (${deregister.trim()}),
${releasedOf("removed")}
SELECT ${i.instanceId} FROM removed`
})

/** Live instances in rank order (the order claims spread partitions by). Params: $1 stale threshold seconds. */
export const liveInstances = Operation.findAll({
  name: "serviceInstances.liveInstances",
  Row: Schema.Struct({
    instanceId: Schema.String,
    hostName: Schema.String,
    processId: Schema.Number,
    perspectiveNames: Schema.NullOr(Schema.Array(Schema.String))
  }),
  columns: { instanceId: i.instanceId, hostName: i.hostName, processId: i.processId, perspectiveNames: i.perspectiveNames },
  params: (r: { readonly staleSeconds: number }) => [r.staleSeconds],
  sql: `
SELECT ${i.instanceId}, ${i.hostName}, ${i.processId}, ${i.perspectiveNames} FROM ${i.table}
WHERE ${i.lastHeartbeatAt} > now() - make_interval(secs => $1::int)
ORDER BY ${i.instanceId}`
})

/** A session an instance recorded (see {@link recordSession}). */
export const RecordedSession = Schema.Struct({
  instanceId: Schema.String,
  pid: Schema.Number,
  backendStart: Schema.String,
  serverStart: Schema.String
})

/** The server's start and its sessions (a backend's start null where this role may not see it). */
export const ServerSessions = Schema.Struct({
  serverStart: Schema.String,
  pids: Schema.Array(Schema.Number),
  backendStarts: Schema.Array(Schema.NullOr(Schema.String))
})

/**
 * Records the server session of this process's LISTEN connection on its row (`metadata.session`), or removes it
 * (`null`: no connection open). Params: $1 instance id, $2 boot token, $3 the session (jsonb) or null.
 */
export const recordSession = Operation.count({
  name: "serviceInstances.recordSession",
  params: (r: Holder & { readonly session: Session | null }) => [
    r.instanceId,
    r.bootToken,
    r.session === null ? null : JSON.stringify(r.session)
  ],
  sql: `
UPDATE ${i.table}
SET ${i.metadata} = CASE WHEN $3::jsonb IS NULL THEN ${i.metadata} - 'session' ELSE jsonb_set(${i.metadata}, '{session}', $3::jsonb) END
WHERE ${i.instanceId} = $1::uuid AND ${i.metadata}->>'bootToken' = $2::text
RETURNING ${i.instanceId}`
})

/** The sessions other instances recorded (see {@link recordSession}). Params: $1 this instance's id. */
export const recordedSessions = Operation.findAll({
  name: "serviceInstances.recordedSessions",
  Row: RecordedSession,
  columns: { instanceId: i.instanceId, pid: "pid", backendStart: "backend_start", serverStart: "server_start" },
  params: (r: { readonly instanceId: string }) => [r.instanceId],
  sql: `
SELECT ${i.instanceId}, (${i.metadata}->'session'->>'pid')::int AS pid,
       ${i.metadata}->'session'->>'backendStart' AS backend_start, ${i.metadata}->'session'->>'serverStart' AS server_start
FROM ${i.table}
WHERE ${i.instanceId} <> $1::uuid AND jsonb_typeof(${i.metadata}->'session') = 'object'`
})

/**
 * The server's start and its sessions (pid, and the backend's start where this role may see it: its own role's
 * sessions, or with `pg_read_all_stats`).
 */
export const serverSessions = Operation.findOne({
  name: "serviceInstances.serverSessions",
  Row: ServerSessions,
  columns: { serverStart: "server_start", pids: "pids", backendStarts: "backend_starts" },
  sql: `
SELECT ${epochMicros("pg_postmaster_start_time()")} AS server_start,
       coalesce(array_agg(pid ORDER BY pid), '{}') AS pids,
       coalesce(array_agg(${epochMicros("backend_start")} ORDER BY pid), '{}') AS backend_starts
FROM pg_stat_activity WHERE pid IS NOT NULL`
})

/**
 * Removes the instances whose recorded session has ended, unless they recorded another one meanwhile. Params: $1
 * instance ids, $2 the backend starts of their sessions as read (pairwise). Run {@link releaseStreamsOf} with the returned
 * ids in the same transaction.
 */
export const abandonDetached = Operation.findAll({
  name: "serviceInstances.abandonDetached",
  Row: Schema.Struct({ instanceId: Schema.String }),
  columns: { instanceId: i.instanceId },
  params: (r: { readonly instanceIds: ReadonlyArray<string>; readonly backendStarts: ReadonlyArray<string> }) => [
    r.instanceIds,
    r.backendStarts
  ],
  sql: `
DELETE FROM ${i.table}
WHERE (${i.instanceId}, ${i.metadata}->'session'->>'backendStart') IN (SELECT * FROM unnest($1::uuid[], $2::text[]))
RETURNING ${i.instanceId}`
})
