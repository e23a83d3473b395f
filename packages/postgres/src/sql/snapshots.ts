/**
 * `wh_perspective_snapshots` statements: a perspective's encoded model for a stream as of one event, the starting
 * point of a rewind. Written set-based (one insert, one prune for any number of pairs).
 */

/**
 * Params: parallel arrays $1 stream ids, $2 perspective names, $3 event ids, $4 data. Re-writing a snapshot of the
 * same event replaces it (a rewind recomputes them).
 */
export const insertSnapshots = `
INSERT INTO wh_perspective_snapshots AS s (stream_id, perspective_name, event_id, data)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::jsonb[])
ON CONFLICT (stream_id, perspective_name, event_id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at`

/** Keeps the newest $3 snapshots (by event id) of each pair. Params: parallel arrays $1 stream ids, $2 perspective names; $3 keep. */
export const pruneSnapshots = `
DELETE FROM wh_perspective_snapshots s
USING (
  SELECT x.stream_id, x.perspective_name, x.event_id,
         row_number() OVER (PARTITION BY x.stream_id, x.perspective_name ORDER BY x.event_id DESC) AS rank
  FROM wh_perspective_snapshots x
  JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[]) AS p(stream_id, perspective_name)) p
    ON p.stream_id = x.stream_id AND p.perspective_name = x.perspective_name
) r
WHERE s.stream_id = r.stream_id AND s.perspective_name = r.perspective_name AND s.event_id = r.event_id AND r.rank > $3::int`

/** The newest snapshot strictly before an event. Params: $1 stream id, $2 perspective name, $3 event id. */
export const latestBefore = `
SELECT event_id, data FROM wh_perspective_snapshots
WHERE stream_id = $1::uuid AND perspective_name = $2::text AND event_id < $3::uuid
ORDER BY event_id DESC LIMIT 1`

/** Drops the snapshots a rewind invalidates (at or after the trigger). Params: $1 stream id, $2 perspective name, $3 event id. */
export const deleteFrom = `
DELETE FROM wh_perspective_snapshots WHERE stream_id = $1::uuid AND perspective_name = $2::text AND event_id >= $3::uuid`

/** Every snapshot of a pair, oldest first. Params: $1 stream id, $2 perspective name. */
export const list = `
SELECT event_id, data, created_at FROM wh_perspective_snapshots
WHERE stream_id = $1::uuid AND perspective_name = $2::text ORDER BY event_id`

/** Drops every snapshot of a pair (purge). Params: $1 stream id, $2 perspective name. */
export const deleteAll = `DELETE FROM wh_perspective_snapshots WHERE stream_id = $1::uuid AND perspective_name = $2::text`
