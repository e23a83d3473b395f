import { fetchParts } from "./fetchPendingEvents.js"

/**
 * Claims streams for an instance: the lease lives on `wh_active_streams` (stream affinity), so every work row of a
 * claimed stream is processed by one instance at a time, whatever its perspective. Re-claiming a stream the
 * instance already owns renews its lease.
 *
 * Only work the instance can apply NOW makes a stream claimable — otherwise a blocked stream would be claimed,
 * fetched and found empty at every wake-up (a spin that also kept the worker from ever being idle). A
 * (stream, perspective) pair counts through its head: its lowest pending event id. The pair is claimable when
 * - its perspective is one the instance runs ($7; a rolling deploy leaves other perspectives' work to the
 *   instances that run them, never to be failed here),
 * - its head is not waiting out a retry backoff (`scheduled_for` in the future; later rows of the pair wait too,
 *   since the pair stops at its head),
 * - its cursor is not under a live stream lock (rewind, bootstrap, purge pause normal processing).
 * A pair flagged RewindRequired stays claimable: the rewinder decides whether its debounce is over, and the worker
 * holds back a stream whose cycle could do nothing (see `PerspectiveWorker`).
 *
 * Live work first, then oldest first. Live work (`fires`: events of the live versions) is walked on
 * `wh_perspective_events_claim_idx`, background work (a version's history and the events routed to a version being
 * built) on `wh_perspective_events_background_claim_idx` (both event id, UUIDv7, so append time; partial indexes, so
 * neither walk passes the other's rows). Streams with live heads come back first, so a rebuild's history, whose
 * event ids are older than any live event, never queues live work behind it; and background streams are claimed
 * only to fill the instance's queue up to 2 x $2 streams (queued and in-cycle streams, $6, count), so the worker
 * never holds more than about two batches of background streams ahead of the live work it claims next. The head test is a
 * correlated `ORDER BY .. LIMIT 1` probe of the (stream, perspective, event) key, written `<=` (a pending row is
 * never below its head, so it means `=`): `NOT EXISTS` becomes a hash anti-join over the whole work table, and `=`
 * is estimated so selective that the planner scans every pending row instead of walking the index and stopping.
 *
 * A stream is free when nobody owns it, its lease expired, or its owner is abandoned (heartbeat older than the
 * threshold, see `PgInstanceRegistry`) — so a crashed instance's streams move on after the threshold, without
 * waiting out a long lease.
 *
 * Spreading: unowned work of perspective P goes to the live instance whose rank among the live instances that run
 * P (ordered by id; an instance with no recorded perspective set runs every one) is `partition_number % count`.
 * Nothing is stranded: work that waited longer than the grace period is open to every instance that runs its
 * perspective (an overloaded or stuck owner-by-rank gets help), and an instance that is not registered while no
 * instance is (the registry is not in use) takes everything it runs.
 *
 * A claim that took streams commits without waiting for its WAL flush: `synchronous_commit` is off for the
 * transaction it runs in (its own, as the worker runs it; a caller that wraps it in a transaction gets that for the
 * whole of it). A lease lost in a server crash is only claimed again, and a completion commits only where its lease
 * still holds (the fence), so nothing depends on a claim being durable. With `fsync` on, claims at 1,000 appends/s
 * waited on the WAL behind every append's commit.
 *
 * The upsert's conflict clause re-checks ownership on the locked row, so two instances racing for a stream
 * cannot both win, and rows are taken in stream-id order — the order every statement that locks several
 * `wh_active_streams` rows uses (fence, renew, release) — so concurrent claimers never deadlock.
 *
 * Params: $1 instance id, $2 max streams, $3 lease seconds, $4 stale-instance threshold seconds,
 * $5 affinity grace milliseconds, $6 stream ids this instance already has queued (never returned),
 * $7 the perspective names the instance runs (null: every perspective), $8 heads scanned per wanted stream
 * (the number of perspectives, at least 1: a stream has at most one head per perspective).
 */
/**
 * The claimable heads of one tier of work, oldest first: `pe.fires` (live work: the live versions' events, whose
 * receptors fire) or `NOT pe.fires` (background work: a version's history and the events routed to a version
 * being built); each walks its own partial index.
 */
const headsOf = (tier: 0 | 1, fires: string, limit: string) => `
  SELECT pe.stream_id, pe.partition_number, pe.event_id, ${tier} AS tier
  FROM wh_perspective_events pe
  CROSS JOIN me
  LEFT JOIN wh_active_streams a ON a.stream_id = pe.stream_id
  LEFT JOIN wh_perspective_cursors c ON c.stream_id = pe.stream_id AND c.perspective_name = pe.perspective_name
  WHERE pe.processed_at IS NULL AND ${fires}
    AND ($7::text[] IS NULL OR pe.perspective_name = ANY($7::text[]))
    AND (pe.scheduled_for IS NULL OR pe.scheduled_for <= now())
    AND NOT (pe.stream_id = ANY($6::uuid[]))
    AND pe.event_id <= (
      SELECT h.event_id FROM wh_perspective_events h
      WHERE h.stream_id = pe.stream_id AND h.perspective_name = pe.perspective_name AND h.processed_at IS NULL
      ORDER BY h.event_id LIMIT 1
    )
    -- IS NOT TRUE, not NOT coalesce(.., false): Citus refuses now() inside COALESCE and CASE in a modification.
    AND (c.stream_lock_instance_id IS NOT NULL AND c.stream_lock_expiry > now()) IS NOT TRUE
    AND (a.stream_id IS NULL OR a.instance_id IS NULL OR a.instance_id = $1::uuid OR a.lease_expiry <= now()
         OR a.instance_id IN (SELECT instance_id FROM stale))
    AND (a.instance_id = $1::uuid
         OR (NOT me.registered AND me.n = 0)
         OR (me.registered AND $7::text[] IS NULL AND pe.partition_number % me.n = me.rank)
         OR (me.registered AND $7::text[] IS NOT NULL AND EXISTS (
               SELECT 1 FROM ranks r WHERE r.perspective_name = pe.perspective_name AND r.n > 0 AND pe.partition_number % r.n = r.rank))
         OR coalesce(pe.scheduled_for, pe.created_at) <= now() - make_interval(secs => $5::int / 1000.0))
  ORDER BY pe.event_id
  LIMIT ${limit}
`

/** The claim's CTEs (without the leading WITH): `claimed` returns the streams claimed, `picked` their order. */
const claimCtes = `
live AS (
  SELECT instance_id, perspective_names
  FROM wh_service_instances
  WHERE last_heartbeat_at > now() - make_interval(secs => $4::int)
),
me AS (
  SELECT (SELECT count(*)::int FROM live) AS n,
         EXISTS (SELECT 1 FROM live WHERE instance_id = $1::uuid) AS registered,
         (SELECT count(*)::int FROM live WHERE instance_id < $1::uuid) AS rank
),
ranks AS (
  SELECT p.name AS perspective_name,
         count(l.instance_id)::int AS n,
         (count(l.instance_id) FILTER (WHERE l.instance_id < $1::uuid))::int AS rank
  FROM unnest($7::text[]) AS p(name)
  LEFT JOIN live l ON l.perspective_names IS NULL OR p.name = ANY(l.perspective_names)
  GROUP BY p.name
),
stale AS (
  SELECT instance_id FROM wh_service_instances WHERE last_heartbeat_at <= now() - make_interval(secs => $4::int)
),
live_heads AS (${headsOf(0, "pe.fires", "$2::int * greatest($8::int, 1)")}),
background_heads AS (${headsOf(1, "NOT pe.fires", "greatest(2 * $2::int - cardinality($6::uuid[]), 0) * greatest($8::int, 1)")}),
heads AS (
  SELECT * FROM live_heads UNION ALL SELECT * FROM background_heads
),
picked AS (
  SELECT stream_id, min(partition_number) AS partition_number, min(position) AS oldest
  FROM (SELECT h.*, row_number() OVER (ORDER BY h.tier, h.event_id) AS position FROM heads h) ranked
  GROUP BY stream_id
  ORDER BY min(position)
  LIMIT $2::int
),
-- A stream held by a stale instance (heartbeat older than $4 seconds) is taken over by an UPDATE, the others by the
-- INSERT's ON CONFLICT, which re-checks the holder if another claim committed meanwhile. The stale case used to be
-- part of that re-check (\`OR a.instance_id IN (SELECT .. stale)\`), but Citus runs no subquery and no now() in an
-- ON CONFLICT clause (README, "Outgrowing one database"); the UPDATE re-checks it on the newest row version the
-- same way (READ COMMITTED). Row locks in stream-id order in both, as before.
taken AS (
  UPDATE wh_active_streams a SET instance_id = $1::uuid, lease_expiry = now() + make_interval(secs => $3::int)
  WHERE a.stream_id IN (
    SELECT x.stream_id FROM wh_active_streams x
    WHERE x.stream_id IN (SELECT stream_id FROM picked) AND x.instance_id IN (SELECT instance_id FROM stale)
    ORDER BY x.stream_id FOR UPDATE
  )
  AND a.instance_id IN (SELECT instance_id FROM stale)
  RETURNING a.stream_id
),
inserted AS (
  INSERT INTO wh_active_streams AS a (stream_id, instance_id, partition_number, lease_expiry)
  SELECT stream_id, $1::uuid, partition_number, now() + make_interval(secs => $3::int)
  FROM picked
  WHERE stream_id NOT IN (SELECT stream_id FROM taken)
  ORDER BY stream_id
  ON CONFLICT (stream_id) DO UPDATE
    SET instance_id = excluded.instance_id, lease_expiry = excluded.lease_expiry
    -- \`a.lease_expiry <= now()\` written with immutable operators only (Citus): excluded.lease_expiry is now() + the lease.
    WHERE a.instance_id IS NULL OR a.instance_id = excluded.instance_id
       OR excluded.lease_expiry - a.lease_expiry >= make_interval(secs => $3::int)
  RETURNING a.stream_id
),
claimed AS (
  SELECT stream_id FROM taken UNION ALL SELECT stream_id FROM inserted
),
no_wal_wait AS (SELECT set_config('synchronous_commit', 'off', true) AS setting)`

export const claimWork = `
WITH ${claimCtes}
SELECT c.stream_id FROM claimed c JOIN picked p ON p.stream_id = c.stream_id CROSS JOIN no_wal_wait ORDER BY p.oldest`

/**
 * The claim and the first fetch of what it claimed in ONE statement (a cycle's claim and fetch used to be two round
 * trips in a row). The claim is {@link claimWork} ($1-$8); the fetch is `fetchPendingEvents` over the streams it
 * claimed, without the lease check (the leases are this statement's own), with $9 the limit per (stream,
 * perspective), $7 the perspective names and $10 the background budget. Rows, unordered (the coordinator orders
 * them, `internal/pendingRows.ts`): the claimed streams (`part` 0, their place in the claim as `claim_order`, every
 * other column null) and the fetched rows (`part` 1, the fetch's columns). The fetch's late-arrival flags commit
 * with the claim, without waiting for their WAL flush: one lost in a server crash is set again by the next fetch.
 */
export const claimAndFetch = (modelTables?: ReadonlyArray<string>): string => {
  const fetch = fetchParts(modelTables, {
    wanted: "SELECT stream_id FROM claimed",
    leased: false,
    limit: "$9",
    names: "$7",
    background: "$10"
  })
  return `
WITH ${claimCtes},${fetch.ctes}
SELECT 0 AS part, c.stream_id, p.oldest::int AS claim_order, NULL::uuid AS work_id, NULL::text AS perspective_name,
       NULL::uuid AS event_id, NULL::int AS attempts, NULL::uuid AS cursor_last_event_id, NULL::boolean AS fires,
       NULL::boolean AS blocked, NULL::boolean AS rewind_required, NULL::boolean AS event_first, NULL::boolean AS more,
       NULL::text AS event_type, NULL::jsonb AS payload, NULL::jsonb AS metadata, NULL::jsonb AS scope,
       NULL::int AS stream_version, NULL::jsonb AS model
FROM claimed c JOIN picked p ON p.stream_id = c.stream_id CROSS JOIN no_wal_wait
UNION ALL
SELECT 1, f.stream_id, NULL, f.work_id, f.perspective_name, f.event_id, f.attempts, f.cursor_last_event_id, f.fires,
       f.blocked, f.rewind_required, f.event_first, f.more, f.event_type, f.payload, f.metadata, f.scope,
       f.stream_version, f.model
FROM (${fetch.rows}) f`
}

/**
 * Drops the instance's leases on streams with no pending work of the perspectives it runs (its registered
 * `perspective_names`; none recorded: every perspective), in stream-id lock order — so work of a perspective this
 * instance does not run is never held behind its lease. Params: $1 instance id.
 */
export const releaseIdleStreams = `
DELETE FROM wh_active_streams
WHERE stream_id IN (
  SELECT a.stream_id FROM wh_active_streams a
  WHERE a.instance_id = $1::uuid
    AND NOT EXISTS (
      SELECT 1 FROM wh_perspective_events pe
      WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL
        AND pe.perspective_name = ANY(coalesce((SELECT i.perspective_names FROM wh_service_instances i WHERE i.instance_id = $1::uuid), ARRAY[pe.perspective_name]))
    )
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
