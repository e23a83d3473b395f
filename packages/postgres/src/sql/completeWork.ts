/**
 * The statements of one completion transaction (read-model rows, cursors and work rows commit together).
 *
 * `fenceStreams` runs first: it renews and row-locks the instance's live leases and returns the streams it still
 * owns. Work on any other stream is not committed — its lease expired or another instance took it over, and that
 * instance redoes it (invariant 5). Holding the row locks until commit stops a takeover in between.
 *
 * `fenceCursors` runs next: it row-locks the completed pairs' cursors (in (stream, perspective) order, before any
 * model row, the order purge and rewind use too) and returns their position and stream lock. A pair whose cursor
 * is under a live stream lock (purge, rewind, bootstrap), or moved since the cycle's fetch (a purge or rewind that
 * committed and released in between), is not committed: the whole completion is dropped and its work delivered
 * again, like a lost lease. Holding the cursor row locks until commit makes a lock taken later wait for the commit.
 */

/**
 * Params: $1 instance id, $2 stream ids, $3 lease seconds, $4 boot token of this process (`PgInstanceRegistry`),
 * or null without a registry. With a token, nothing is owned once another process registered the same instance
 * id (a successor after this one was declared dead): instance ids alone cannot tell the two apart.
 */
export const fenceStreams = `
UPDATE wh_active_streams SET lease_expiry = now() + make_interval(secs => $3::int)
WHERE stream_id IN (
  SELECT stream_id FROM wh_active_streams
  WHERE stream_id = ANY($2::uuid[]) AND instance_id = $1::uuid AND lease_expiry > now()
    AND ($4::text IS NULL OR NOT EXISTS (
      SELECT 1 FROM wh_service_instances i WHERE i.instance_id = $1::uuid AND i.metadata->>'bootToken' IS DISTINCT FROM $4::text
    ))
  ORDER BY stream_id FOR UPDATE
)
RETURNING stream_id`

/**
 * Row-locks the cursors of these pairs and returns each one's position and live stream lock (pairs without a
 * cursor return nothing). Params: parallel arrays $1 stream ids, $2 perspective names.
 */
export const fenceCursors = `
SELECT c.stream_id, c.perspective_name, c.last_event_id,
       coalesce(c.stream_lock_instance_id IS NOT NULL AND c.stream_lock_expiry > now(), false) AS locked,
       c.stream_lock_instance_id, c.stream_lock_reason
FROM wh_perspective_cursors c
JOIN unnest($1::uuid[], $2::text[]) AS t(s, p) ON c.stream_id = t.s AND c.perspective_name = t.p
ORDER BY c.stream_id, c.perspective_name
FOR UPDATE OF c`

/**
 * Both fences in one round trip: {@link fenceStreams} ($1-$4), then {@link fenceCursors} ($5, $6). The lease rows come
 * first (`kind` 'lease', one per stream still owned), then the cursor rows (`kind` 'cursor'): the branches of a
 * UNION ALL run in order, so the lock order stays leases, then cursors in (stream, perspective) order. When a lease
 * was lost the cursors are locked for nothing: the caller rolls the transaction back.
 */
export const fenceAll = `
WITH owned AS (${fenceStreams})
SELECT 'lease' AS kind, o.stream_id, NULL::text AS perspective_name, NULL::uuid AS last_event_id, false AS locked,
       NULL::uuid AS stream_lock_instance_id, NULL::text AS stream_lock_reason
FROM owned o
UNION ALL
SELECT 'cursor' AS kind, f.* FROM (${fenceCursors.replace(/\$1::uuid/g, "$5::uuid").replace(/\$2::text/g, "$6::text")}) f`

/**
 * The end of a completion in ONE statement (after the fences): writes the model rows (`modelWriteParts`, parameters
 * from $12 on; their rows and new versions come back as `models`), advances the existing cursors
 * (row-locked by {@link fenceCursors}), creates the missing ones, removes exactly the applied work rows (deletes
 * them, or marks them processed in debug mode), releases the streams left without work of the perspectives the
 * instance runs, and queues the `wh_processed` notification (delivered only if the transaction commits; it wakes
 * sync awaiters on every instance). Each notification's payload is the schema, a newline, a perspective, a tab and
 * up to {@link processedNoticeChunk} event ids separated by commas (`<schema>\n<perspective>\t<id>,<id>...`): the
 * events whose work rows this statement removed, in as many notifications as that takes (distinct payloads are not
 * folded). A completion that removed no work row sends the bare schema ("something changed").
 *
 * - A cursor's status is the completion's: Completed (2), or Processing | CatchingUp (1 | 8) while the pair has more
 *   pending work the worker is still draining; other flags (RewindRequired) are kept.
 * - `created` short of the cursors asked for: a cursor appeared after the fence (a bootstrap committed its
 *   rebuild), which this completion must not overwrite. `removed` short of the work ids: a rewind or bootstrap
 *   covered some of them meanwhile, so this completion's model is stale. Either way the caller rolls back.
 * - Streams with no work left of the perspectives the instance runs (its registered `perspective_names`; none
 *   recorded: every perspective) leave `wh_active_streams`: a new append simply claims the stream again, and an
 *   instance that runs the remaining perspectives can claim it at once.
 *
 * Each part used to be its own round trip (five, with the notification). All parts run on one snapshot, so the release cannot see this statement's own removal: the removed
 * rows are excluded from its "work left" test explicitly. The counts are read in the select list from left to
 * right, which runs the parts in the order the separate statements had: model rows, cursors, work rows, leases.
 *
 * Params: $1-$4 existing cursors (stream ids, perspective names, last event ids, statuses), $5-$8 the same for
 * cursors to create, $9 work ids, $10 instance id, $11 stream ids of the completion.
 */
export const finishCompletion = (debugMode: boolean, models: { readonly ctes: ReadonlyArray<string>; readonly versions: string }) => `
WITH ${models.ctes.map((cte) => `${cte},\n`).join("")}advanced AS (
  INSERT INTO wh_perspective_cursors AS c (stream_id, perspective_name, last_event_id, status, error, processed_at)
  SELECT s, p, l, st, NULL, now() FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::int[]) AS t(s, p, l, st)
  ON CONFLICT (stream_id, perspective_name) DO UPDATE
    SET last_event_id = excluded.last_event_id, status = (c.status & ~(1 | 2 | 4 | 8)) | excluded.status, error = NULL, processed_at = now()
  RETURNING 1
),
created AS (
  INSERT INTO wh_perspective_cursors (stream_id, perspective_name, last_event_id, status, error, processed_at)
  SELECT s, p, l, st, NULL, now() FROM unnest($5::uuid[], $6::text[], $7::uuid[], $8::int[]) AS t(s, p, l, st)
  ON CONFLICT (stream_id, perspective_name) DO NOTHING
  RETURNING 1
),
removed AS (
  ${
    debugMode
      ? "UPDATE wh_perspective_events SET processed_at = now(), instance_id = NULL, lease_expiry = NULL WHERE work_id = ANY($9::uuid[]) AND processed_at IS NULL RETURNING work_id, event_id, perspective_name"
      : "DELETE FROM wh_perspective_events WHERE work_id = ANY($9::uuid[]) RETURNING work_id, event_id, perspective_name"
  }
),
released AS (
  DELETE FROM wh_active_streams a
  WHERE a.stream_id = ANY($11::uuid[]) AND a.instance_id = $10::uuid
    AND NOT EXISTS (
      SELECT 1 FROM wh_perspective_events pe
      WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL
        AND pe.work_id NOT IN (SELECT r.work_id FROM removed r)
        AND pe.perspective_name = ANY(coalesce((SELECT i.perspective_names FROM wh_service_instances i WHERE i.instance_id = $10::uuid), ARRAY[pe.perspective_name]))
    )
  RETURNING 1
)
SELECT ${models.versions} AS models,
       (SELECT count(*) FROM advanced)::int AS advanced,
       (SELECT count(*) FROM created)::int AS created,
       (SELECT count(*) FROM removed)::int AS removed,
       (SELECT count(*) FROM released)::int AS released,
       (SELECT count(pg_notify('wh_processed', n.payload) IS NULL)::int FROM (
          SELECT current_schema() || E'\\n' || c.p || E'\\t' || string_agg(c.id, ',') AS payload
          FROM (SELECT r.perspective_name AS p, r.event_id::text AS id,
                       (row_number() OVER (PARTITION BY r.perspective_name ORDER BY r.event_id) - 1) / ${processedNoticeChunk} AS chunk
                FROM removed r) c
          GROUP BY c.p, c.chunk
          UNION ALL
          SELECT current_schema() WHERE NOT EXISTS (SELECT 1 FROM removed)
        ) n) AS notified`

/**
 * Event ids per `wh_processed` notification of a completion: 180 ids of 36 characters and a comma, a perspective
 * name (at most 48) and a schema name (at most 63) stay below Postgres's 8,000-byte payload limit.
 */
export const processedNoticeChunk = 180
