/** Reads a stream in version order. Params: $1 stream id, $2 after version, $3 limit (null = all). */
export const readStream = `
SELECT event_id, stream_id, stream_version::int AS stream_version, event_type, payload, metadata, scope
FROM wh_events
WHERE stream_id = $1::uuid AND stream_version > $2::bigint
ORDER BY stream_version
LIMIT $3::int`
