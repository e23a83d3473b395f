/**
 * Claims streams for an instance: the lease lives on `wh_active_streams` (stream affinity), so every work row of a
 * claimed stream is processed by one instance at a time, whatever its perspective. Re-claiming a stream the
 * instance already owns renews its lease.
 *
 * Candidates are streams with ready work that no other instance holds a live lease on. The upsert's conflict
 * clause re-checks ownership on the locked row, so two instances racing for a stream cannot both win, and rows
 * are taken in stream-id order so concurrent claimers lock in one order (no deadlock).
 *
 * Params: $1 instance id, $2 max streams, $3 lease seconds.
 */
export const claimWork = `
WITH candidates AS (
  SELECT DISTINCT pe.stream_id, pe.partition_number
  FROM wh_perspective_events pe
  WHERE pe.processed_at IS NULL
    AND (pe.scheduled_for IS NULL OR pe.scheduled_for <= now())
    AND NOT EXISTS (
      SELECT 1 FROM wh_active_streams a
      WHERE a.stream_id = pe.stream_id AND a.instance_id <> $1::uuid AND a.lease_expiry > now()
    )
  LIMIT $2::int
)
INSERT INTO wh_active_streams AS a (stream_id, instance_id, partition_number, lease_expiry)
SELECT stream_id, $1::uuid, partition_number, now() + make_interval(secs => $3::int)
FROM candidates
ORDER BY stream_id
ON CONFLICT (stream_id) DO UPDATE
  SET instance_id = excluded.instance_id, lease_expiry = excluded.lease_expiry
  WHERE a.instance_id IS NULL OR a.instance_id = excluded.instance_id OR a.lease_expiry <= now()
RETURNING a.stream_id`

/** Drops the instance's leases on streams that have no pending work. Params: $1 instance id. */
export const releaseIdleStreams = `
DELETE FROM wh_active_streams a
WHERE a.instance_id = $1::uuid
  AND NOT EXISTS (SELECT 1 FROM wh_perspective_events pe WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL)`
