/**
 * Claims streams for an instance: the lease lives on `wh_active_streams` (stream affinity), so every work row of a
 * claimed stream is processed by one instance at a time, whatever its perspective. Re-claiming a stream the
 * instance already owns renews its lease.
 *
 * A stream is free when nobody owns it, its lease expired, or its owner is abandoned (heartbeat older than the
 * threshold, see `PgInstanceRegistry`) — so a crashed instance's streams move on after the threshold, without
 * waiting out a long lease.
 *
 * Spreading: unowned work goes to the live instance whose rank (position among live instances ordered by id)
 * is `partition_number % live_count`. Nothing is stranded: work that waited longer than the grace period is
 * open to every instance (an overloaded or stuck owner-by-rank gets help), and an instance that is not
 * registered while no instance is (the registry is not in use) takes everything.
 *
 * The upsert's conflict clause re-checks ownership on the locked row, so two instances racing for a stream
 * cannot both win, and rows are taken in stream-id order — the order every statement that locks several
 * `wh_active_streams` rows uses (fence, renew, release) — so concurrent claimers never deadlock.
 *
 * Params: $1 instance id, $2 max streams, $3 lease seconds, $4 stale-instance threshold seconds,
 * $5 affinity grace milliseconds, $6 stream ids this instance already has queued (never returned).
 */
export const claimWork = `
WITH live AS (
  SELECT instance_id, (row_number() OVER (ORDER BY instance_id))::int - 1 AS rank
  FROM wh_service_instances
  WHERE last_heartbeat_at > now() - make_interval(secs => $4::int)
),
me AS (
  SELECT (SELECT count(*)::int FROM live) AS n, coalesce((SELECT rank FROM live WHERE instance_id = $1::uuid), -1) AS rank
),
stale AS (
  SELECT instance_id FROM wh_service_instances WHERE last_heartbeat_at <= now() - make_interval(secs => $4::int)
),
candidates AS (
  SELECT DISTINCT pe.stream_id, pe.partition_number
  FROM wh_perspective_events pe
  CROSS JOIN me
  LEFT JOIN wh_active_streams a ON a.stream_id = pe.stream_id
  WHERE pe.processed_at IS NULL
    AND (pe.scheduled_for IS NULL OR pe.scheduled_for <= now())
    AND NOT (pe.stream_id = ANY($6::uuid[]))
    AND (a.stream_id IS NULL OR a.instance_id IS NULL OR a.instance_id = $1::uuid OR a.lease_expiry <= now()
         OR a.instance_id IN (SELECT instance_id FROM stale))
    AND (a.instance_id = $1::uuid
         OR (me.rank = -1 AND me.n = 0)
         OR (me.rank >= 0 AND pe.partition_number % me.n = me.rank)
         OR coalesce(pe.scheduled_for, pe.created_at) <= now() - make_interval(secs => $5::int / 1000.0))
  LIMIT $2::int
)
INSERT INTO wh_active_streams AS a (stream_id, instance_id, partition_number, lease_expiry)
SELECT stream_id, $1::uuid, partition_number, now() + make_interval(secs => $3::int)
FROM candidates
ORDER BY stream_id
ON CONFLICT (stream_id) DO UPDATE
  SET instance_id = excluded.instance_id, lease_expiry = excluded.lease_expiry
  WHERE a.instance_id IS NULL OR a.instance_id = excluded.instance_id OR a.lease_expiry <= now()
     OR a.instance_id IN (SELECT instance_id FROM wh_service_instances WHERE last_heartbeat_at <= now() - make_interval(secs => $4::int))
RETURNING a.stream_id`

/** Drops the instance's leases on streams that have no pending work (stream-id lock order). Params: $1 instance id. */
export const releaseIdleStreams = `
DELETE FROM wh_active_streams
WHERE stream_id IN (
  SELECT a.stream_id FROM wh_active_streams a
  WHERE a.instance_id = $1::uuid
    AND NOT EXISTS (SELECT 1 FROM wh_perspective_events pe WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL)
  ORDER BY a.stream_id FOR UPDATE
)`

/**
 * Extends the instance's live leases on these streams (long applies); returns the streams still held.
 * Params: $1 instance id, $2 stream ids, $3 lease seconds.
 */
export const renewStreamLeases = `
UPDATE wh_active_streams SET lease_expiry = now() + make_interval(secs => $3::int)
WHERE stream_id IN (
  SELECT stream_id FROM wh_active_streams
  WHERE stream_id = ANY($2::uuid[]) AND instance_id = $1::uuid AND lease_expiry > now()
  ORDER BY stream_id FOR UPDATE
)
RETURNING stream_id`
