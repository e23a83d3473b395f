/**
 * Statements of perspective versions (`PgPerspectiveVersions`): registration, the history backfill, state changes
 * and the view swap. Table names are validated perspective keys, quoted; every value is a bound parameter.
 */
import * as Identifier from "../internal/identifier.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"

/** `r` (table), `v` (view) or null: what `wh_per_<base>` is now. Params: $1 the unquoted relation name. */
export const relationKind = `
SELECT c.relkind::text AS kind FROM pg_class c
WHERE c.relname = $1::text AND c.relnamespace = current_schema()::regnamespace`

/** A pre-versions table of version 1 becomes that version's own table; the view takes its name. */
export const renameLegacyTable = (baseName: string) =>
  `ALTER TABLE ${Identifier.quote(PerspectiveTable.served(baseName))} RENAME TO ${Identifier.quote(PerspectiveTable.ofVersion(baseName))}`

/** Points `wh_per_<base>` at one version's table. */
export const replaceView = (baseName: string, key: string) =>
  `CREATE OR REPLACE VIEW ${Identifier.quote(PerspectiveTable.served(baseName))} AS SELECT * FROM ${Identifier.quote(PerspectiveTable.ofVersion(key))}`

/** Every registered version's key (an unknown perspective's refusal names them). */
export const registeredKeys = `SELECT perspective_name FROM wh_perspective_versions ORDER BY base_name, version`

/**
 * Params: $1 base names. The versions of these bases, row-locked in (base, version) order (registration runs under
 * the DDL lock, so no two take them in another order).
 */
export const versionsOfBases = `
SELECT base_name, perspective_name, version, state, event_types, fingerprint FROM wh_perspective_versions
WHERE base_name = ANY($1::text[])
ORDER BY base_name, version FOR UPDATE`

/** `relkind` of each relation of the current schema named in $1 (unquoted names); absent ones have no row. */
export const relationKinds = `
SELECT c.relname::text AS name, c.relkind::text AS kind FROM pg_class c
WHERE c.relname = ANY($1::text[]) AND c.relnamespace = current_schema()::regnamespace`

/** Params: $1 base name. The versions of a base, row-locked (registration and state changes run one at a time). */
export const versionsOfBase = `
SELECT perspective_name, version, state, event_types, fingerprint FROM wh_perspective_versions WHERE base_name = $1::text
ORDER BY version FOR UPDATE`

/**
 * Whether the key was processed before versions were registered (a pre-0.3 perspective): it has cursors or work.
 * Params: $1 key.
 */
export const hasHistory = `
SELECT EXISTS (SELECT 1 FROM wh_perspective_cursors WHERE perspective_name = $1::text)
    OR EXISTS (SELECT 1 FROM wh_perspective_events WHERE perspective_name = $1::text) AS present`

/**
 * The boundary between history and live events: SHARE conflicts with the appends' ROW EXCLUSIVE, so it waits for
 * appends in flight to commit and holds new ones until this transaction commits. Every event committed before is
 * history (planned below); every later append's routing reads the new registry row.
 */
export const lockAppends = `LOCK TABLE wh_events IN SHARE MODE`

/** Params: $1 key, $2 base, $3 version, $4 state, $5 event types. */
export const insertVersion = `
INSERT INTO wh_perspective_versions (perspective_name, base_name, version, state, event_types, fingerprint)
VALUES ($1::text, $2::text, $3::int, $4::text, $5::text[], $6::text)`

/** Params: $1 key, $2 fingerprint (see `PerspectiveFingerprint` in core). */
export const updateFingerprint = `UPDATE wh_perspective_versions SET fingerprint = $2::text WHERE perspective_name = $1::text`

/**
 * Plans a new version's history: per stream with events of its types, the newest such event id now.
 * Params: $1 key, $2 event types. Returns the streams and events planned.
 */
export const planBackfill = `
WITH planned AS (
  INSERT INTO wh_perspective_backfill (perspective_name, stream_id, through_event_id)
  SELECT DISTINCT ON (e.stream_id) $1::text, e.stream_id, e.event_id
  FROM wh_events e WHERE e.event_type = ANY($2::text[])
  ORDER BY e.stream_id, e.event_id DESC
  RETURNING 1
),
counted AS (SELECT count(*) AS n FROM wh_events e WHERE e.event_type = ANY($2::text[]))
UPDATE wh_perspective_versions SET backfill_streams = (SELECT count(*) FROM planned), backfill_events = (SELECT n FROM counted)
WHERE perspective_name = $1::text
RETURNING backfill_streams, backfill_events`

/** Params: $1 key, $2 event types. */
export const updateEventTypes = `UPDATE wh_perspective_versions SET event_types = $2::text[] WHERE perspective_name = $1::text`

/**
 * Gives up to $2 planned streams of key $1 their history as work rows (not firing receptors) and forgets their
 * plan rows, in one statement: a crash leaves either both or neither. Streams with live work of the version waiting
 * come first (that work is held back until its stream's history is in). Params: $1 key, $2 streams, $3 event types,
 * $4 partition count. Returns the streams and work rows written.
 */
export const backfillChunk = `
WITH picked AS (
  SELECT b.stream_id FROM wh_perspective_backfill b
  WHERE b.perspective_name = $1::text
  ORDER BY NOT EXISTS (
    SELECT 1 FROM wh_perspective_events pe WHERE pe.stream_id = b.stream_id AND pe.perspective_name = b.perspective_name
  ), b.stream_id
  LIMIT $2::int
  FOR UPDATE SKIP LOCKED
),
taken AS (
  DELETE FROM wh_perspective_backfill b USING picked p
  WHERE b.perspective_name = $1::text AND b.stream_id = p.stream_id
  RETURNING b.stream_id, b.through_event_id
),
written AS (
  INSERT INTO wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, fires)
  SELECT gen_random_uuid(), e.stream_id, $1::text, e.event_id, abs(hashtext(e.stream_id::text)) % $4::int, false
  FROM taken t JOIN wh_events e ON e.stream_id = t.stream_id AND e.event_id <= t.through_event_id
  WHERE e.event_type = ANY($3::text[])
  ON CONFLICT (stream_id, perspective_name, event_id) DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM taken)::int AS streams, (SELECT count(*) FROM written)::int AS events`

/** Params: $1 key. Pending work rows of the version (its lag, in events), streams still planned, its dead letters. */
export const progressOf = `
SELECT (SELECT count(*) FROM wh_perspective_events WHERE perspective_name = $1::text AND processed_at IS NULL)::int AS pending,
       (SELECT count(*) FROM wh_perspective_backfill WHERE perspective_name = $1::text)::int AS planned,
       (SELECT count(*) FROM wh_dead_letters WHERE perspective_name = $1::text)::int AS dead_letters`

const listing = (pending: string, oldest: string) => `
SELECT v.perspective_name, v.base_name, v.version, v.state, v.event_types, v.registered_at, v.state_changed_at, v.retire_after,
       v.replay_started_at,
       v.backfill_streams, v.backfill_events::bigint AS backfill_events, p.planned,
       (${pending})::int AS pending,
       ${oldest} AS oldest_pending,
       (SELECT count(*) FROM wh_dead_letters d WHERE d.perspective_name = v.perspective_name)::int AS dead_letters,
       EXISTS (
         SELECT 1 FROM wh_service_instances i
         WHERE i.last_heartbeat_at > now() - make_interval(secs => $1::float8)
           AND (i.perspective_names IS NULL OR v.perspective_name = ANY(i.perspective_names))
       ) AS has_runner,
       CASE WHEN v.state = 'ready' THEN v.handover_until END AS handover_until,
       v.state = 'ready' AND (v.handover_until IS NULL OR v.handover_until <= now()) AS handover_abandoned
FROM wh_perspective_versions v
CROSS JOIN LATERAL (SELECT count(*)::int AS planned FROM wh_perspective_backfill b WHERE b.perspective_name = v.perspective_name) p
ORDER BY v.base_name, v.version`

const pendingRows = `FROM wh_perspective_events pe WHERE pe.perspective_name = v.perspective_name AND pe.processed_at IS NULL`
const pendingOf = `SELECT count(*) ${pendingRows}`
const oldestOf = `(SELECT min(pe.created_at) ${pendingRows})`
const building = `v.state = 'building' OR p.planned > 0`

/**
 * Every version with its progress (status, the CLI). `has_runner`: some instance whose heartbeat is newer than $1
 * seconds (the workers' `abandonStaleInstanceThreshold`, as the watchdog judges liveness) runs the version; a row
 * left by a crashed instance does not count. Params: $1 dead-instance-after seconds.
 */
export const listVersions = listing(pendingOf, oldestOf)

/**
 * {@link listVersions} for the build loop, every round: the pending events and the oldest of them are counted in
 * full only for versions still building or with history planned. Another version's pending events are counted up
 * to $2 (its oldest is not read): counting a live version's whole backlog scanned every pending work row each round
 * (78 ms at 100,000 of them). Params: $1 dead-instance-after seconds, $2 the most counted.
 */
export const listVersionsForBuild = listing(
  `CASE WHEN ${building} THEN (${pendingOf}) ELSE (SELECT count(*) FROM (SELECT 1 ${pendingRows} LIMIT $2::int) c) END`,
  `CASE WHEN ${building} THEN ${oldestOf} END`
)

/** Params: $1 key, $2 grace seconds. */
export const setRetiring = `
UPDATE wh_perspective_versions SET state = 'retiring', state_changed_at = now(), retire_after = now() + make_interval(secs => $2::double precision)
WHERE perspective_name = $1::text`

/** Params: $1 key. The work ids of the version pending now (what a cutover waits for). */
export const pendingWorkIds = `SELECT array_agg(work_id) AS ids FROM wh_perspective_events WHERE perspective_name = $1::text AND processed_at IS NULL`

/** Params: $1 work ids. How many of them are still pending. */
export const stillPending = `SELECT count(*)::int AS n FROM wh_perspective_events WHERE work_id = ANY($1::uuid[]) AND processed_at IS NULL`

/**
 * Retires the versions whose grace period is over: no longer routed, their pending work dropped. Follow it with
 * {@link notifyVersionsChanged} (a bare `wh_processed` notification wakes read-your-writes waits that counted on
 * them). Returns the retired keys.
 */
export const retireDue = `
WITH due AS (
  UPDATE wh_perspective_versions SET state = 'retired', state_changed_at = now(), retire_after = NULL
  WHERE state = 'retiring' AND retire_after <= now()
  RETURNING perspective_name
),
dropped AS (
  DELETE FROM wh_perspective_events pe USING due d WHERE pe.perspective_name = d.perspective_name RETURNING 1
),
unplanned AS (
  DELETE FROM wh_perspective_backfill b USING due d WHERE b.perspective_name = d.perspective_name RETURNING 1
)
SELECT d.perspective_name, (SELECT count(*) FROM dropped)::int AS dropped, (SELECT count(*) FROM unplanned)::int AS unplanned
FROM due d`

/**
 * Fresh planner statistics for the tables a build grows fast. The build adds tens of thousands of work rows to a
 * table the planner may still think small (autovacuum's ANALYZE comes a minute or more later); with stale statistics
 * the completion's lease release walks the whole claim index per stream, and every perspective's cycles slow down.
 * ANALYZE takes no lock that blocks reads or writes; a role that does not own the tables gets a warning, not an error.
 */
export const analyzeBuildTables = "ANALYZE wh_perspective_events, wh_perspective_backfill"

/**
 * Retires versions by hand (a perspective removed from the code): no longer routed, their pending work and planned
 * history dropped, in one statement. Run after {@link lockAppends}, so no append in flight routes to them after it.
 * Follow it with {@link notifyVersionsChanged}. Params: $1 keys. Returns each retired key with the rows dropped.
 */
export const retireVersions = `
WITH retired AS (
  UPDATE wh_perspective_versions SET state = 'retired', state_changed_at = now(), retire_after = NULL
  WHERE perspective_name = ANY($1::text[]) AND state <> 'retired'
  RETURNING perspective_name
),
dropped AS (
  DELETE FROM wh_perspective_events pe USING retired r WHERE pe.perspective_name = r.perspective_name RETURNING pe.perspective_name
),
unplanned AS (
  DELETE FROM wh_perspective_backfill b USING retired r WHERE b.perspective_name = r.perspective_name RETURNING b.perspective_name
)
SELECT r.perspective_name,
       (SELECT count(*) FROM dropped d WHERE d.perspective_name = r.perspective_name)::int AS dropped,
       (SELECT count(*) FROM unplanned u WHERE u.perspective_name = r.perspective_name)::int AS unplanned
FROM retired r ORDER BY r.perspective_name`

/**
 * Live instances (heartbeat newer than $2 seconds) that run each key: those that list it, and those that list no
 * perspectives (they run every one). Params: $1 keys, $2 seconds.
 */
export const liveRunners = `
SELECT k.name AS perspective_name, count(i.instance_id)::int AS instances
FROM unnest($1::text[]) AS k(name)
LEFT JOIN wh_service_instances i
  ON i.last_heartbeat_at > now() - make_interval(secs => $2::float8)
 AND (i.perspective_names IS NULL OR k.name = ANY(i.perspective_names))
GROUP BY k.name`

/**
 * After a statement that changed versions' states, in its transaction when it has one: the `@versions` line of each
 * of their base names (`wh_notify_versions`, migration 0019) and a bare `wh_processed` notification that wakes
 * read-your-writes waits. Its own statement, never a column of the statement that changed the states: on Citus a
 * statement that reads the schema's tables runs on their worker node, and a NOTIFY sent there reaches no listener
 * (the listeners are connected to the coordinator). Params: $1 keys.
 */
export const notifyVersionsChanged = `SELECT wh_notify_versions($1::text[]), pg_notify('wh_processed', current_schema())`

/**
 * Wakes the workers after work rows were written outside an append (a version's history): `wh_work` as the
 * `wh_notify_work` trigger sent it before migration 0019, a statement of its own for the reason given at
 * {@link notifyVersionsChanged}.
 */
export const wakeWorkers = "SELECT pg_notify('wh_work', current_schema())"
