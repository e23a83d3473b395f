/**
 * `wh_service_instances`: registration, heartbeats, abandonment of silent instances and deregistration.
 *
 * A process proves it is the holder of an instance id with a random boot token kept in `metadata.bootToken`
 * (together with host name and process id, which alone do not tell two containers apart). Locks are taken in
 * one order everywhere: the instance row first, then that instance's `wh_active_streams` rows in stream-id order.
 */

/**
 * (`excluded.<column>` rather than now() in ON CONFLICT, and a difference of timestamps rather than timestamptz -
 * interval: Citus allows only immutable functions and operators there; the inserted values are now(), so the same
 * test on plain PostgreSQL.)
 * Registers the instance, or takes over its row when the row is stale (its process is gone) or is this very
 * process's. Returns no row when another live process holds the id.
 * Params: $1 instance id, $2 service, $3 host, $4 pid, $5 boot token, $6 perspective names this instance runs
 * (null: not recorded, taken as all), $7 stale threshold seconds.
 */
export const register = `
INSERT INTO wh_service_instances AS i (instance_id, service_name, host_name, process_id, started_at, last_heartbeat_at, metadata, perspective_names)
VALUES ($1::uuid, $2::text, $3::text, $4::int, now(), now(), jsonb_build_object('bootToken', $5::text), $6::text[])
ON CONFLICT (instance_id) DO UPDATE
  SET service_name = excluded.service_name, host_name = excluded.host_name, process_id = excluded.process_id,
      started_at = excluded.started_at, last_heartbeat_at = excluded.last_heartbeat_at, metadata = excluded.metadata, perspective_names = excluded.perspective_names
  WHERE excluded.last_heartbeat_at - i.last_heartbeat_at >= make_interval(secs => $7::int)
     OR (i.host_name = excluded.host_name AND i.process_id = excluded.process_id AND i.metadata->>'bootToken' = $5::text)
RETURNING instance_id`

/**
 * A `released` CTE freeing every lease of the instances the CTE `instances` returns, in stream-id lock order (as
 * {@link releaseStreamsOf}). The instance row is locked first: the `DELETE` reads the CTE that wrote it.
 */
const releasedOf = (instances: string) => `released AS (
  DELETE FROM wh_active_streams
  WHERE stream_id IN (
    SELECT a.stream_id FROM wh_active_streams a WHERE a.instance_id IN (SELECT i.instance_id FROM ${instances} i)
    ORDER BY a.stream_id FOR UPDATE
  )
)`

/**
 * {@link register} and, when it took the row, {@link releaseStreamsOf} for the instance, in one statement: a
 * taken-over stale row may still own its crashed predecessor's leases. (One round trip instead of four with BEGIN
 * and COMMIT: every tenant's services register at their start.) Params as {@link register}.
 */
export const registerAndRelease = `
WITH taken AS (${register.trim()}),
${releasedOf("taken")}
SELECT instance_id FROM taken`

/** The row that refused a registration, for the error message. Params: $1 instance id. */
export const describe = `
SELECT host_name, process_id, extract(epoch FROM now() - last_heartbeat_at)::float8 AS heartbeat_age_seconds
FROM wh_service_instances WHERE instance_id = $1::uuid`

/** Params: $1 instance id, $2 boot token. Returns the row when this process still holds the id. */
export const heartbeat = `
UPDATE wh_service_instances SET last_heartbeat_at = now()
WHERE instance_id = $1::uuid AND metadata->>'bootToken' = $2::text
RETURNING instance_id`

/**
 * Re-registers after this instance was declared dead and its row removed (a long pause); does nothing when
 * another process registered the id meanwhile. Params as {@link register} minus the threshold.
 */
export const reRegister = `
INSERT INTO wh_service_instances (instance_id, service_name, host_name, process_id, started_at, last_heartbeat_at, metadata, perspective_names)
VALUES ($1::uuid, $2::text, $3::text, $4::int, now(), now(), jsonb_build_object('bootToken', $5::text), $6::text[])
ON CONFLICT (instance_id) DO NOTHING
RETURNING instance_id`

/**
 * Removes instances whose heartbeat is older than the threshold. Params: $1 stale threshold seconds.
 * Run {@link releaseStreamsOf} with the returned ids in the same transaction.
 */
export const abandonStale = `
WITH gone AS (
  DELETE FROM wh_service_instances
  WHERE last_heartbeat_at <= now() - make_interval(secs => $1::int)
  RETURNING instance_id, last_heartbeat_at
)
-- The age outside the RETURNING: Citus refuses now() there.
SELECT instance_id, extract(epoch FROM now() - last_heartbeat_at)::float8 AS heartbeat_age_seconds FROM gone`

/** Frees every stream lease of these instances (stream-id lock order). Params: $1 instance ids. */
export const releaseStreamsOf = `
DELETE FROM wh_active_streams
WHERE stream_id IN (
  SELECT stream_id FROM wh_active_streams WHERE instance_id = ANY($1::uuid[]) ORDER BY stream_id FOR UPDATE
)
RETURNING stream_id`

/** Removes this process's registration. Params: $1 instance id, $2 boot token. */
export const deregister = `
DELETE FROM wh_service_instances WHERE instance_id = $1::uuid AND metadata->>'bootToken' = $2::text
RETURNING instance_id`

/**
 * {@link deregister} and the release of the instance's leases when the row was this process's, in one statement
 * (a tenant's services stop whenever it goes idle). Params as {@link deregister}.
 */
export const deregisterAndRelease = `
WITH removed AS (${deregister.trim()}),
${releasedOf("removed")}
SELECT instance_id FROM removed`

/** Live instances in rank order (the order claims spread partitions by). Params: $1 stale threshold seconds. */
export const liveInstances = `
SELECT instance_id, host_name, process_id, perspective_names FROM wh_service_instances
WHERE last_heartbeat_at > now() - make_interval(secs => $1::int)
ORDER BY instance_id`
