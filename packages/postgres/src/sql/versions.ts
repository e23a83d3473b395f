/**
 * Statements of perspective versions (`PgPerspectiveVersions`): registration, the history backfill, state changes
 * and the view swap. Table names are validated perspective keys, quoted; every value is a bound parameter.
 */
import { Schema } from "effect"
import {
  DeadLetters as d,
  Events as e,
  PerspectiveBackfill as b,
  PerspectiveCursors as c,
  PerspectiveEvents as pe,
  PerspectiveVersions as v,
  ServiceInstances as i
} from "../internal/columns.js"
import * as Identifier from "../internal/identifier.js"
import * as Operation from "../internal/operation.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"
import { State } from "./registry.js"

/** A perspective key. */
interface Key {
  readonly key: string
}

/** Perspective keys. */
interface Keys {
  readonly keys: ReadonlyArray<string>
}

const Count = Schema.Struct({ n: Schema.Number })

/**
 * `r` (table), `v` (view) or none: what a relation of the current schema is now (the unquoted name).
 *
 * @category operations
 * @since 0.5.0
 */
export const relationKind = Operation.findOne({
  name: "versions.relationKind",
  Row: Schema.Struct({ kind: Schema.String }),
  params: (r: { readonly relation: string }) => [r.relation],
  sql: `
SELECT c.relkind::text AS kind FROM pg_class c
WHERE c.relname = $1::text AND c.relnamespace = current_schema()::regnamespace`
})

/**
 * A pre-versions table of version 1 becomes that version's own table; the view takes its name.
 *
 * @category operations
 * @since 0.5.0
 */
export const renameLegacyTable = Operation.void({
  name: "versions.renameLegacyTable",
  sql: (r: { readonly baseName: string }) =>
    `ALTER TABLE ${Identifier.quote(PerspectiveTable.served(r.baseName))} RENAME TO ${Identifier.quote(PerspectiveTable.ofVersion(r.baseName))}`
})

/**
 * Points `wh_per_<base>` at one version's table.
 *
 * @category operations
 * @since 0.5.0
 */
export const replaceView = Operation.void({
  name: "versions.replaceView",
  sql: (r: { readonly baseName: string; readonly key: string }) =>
    `CREATE OR REPLACE VIEW ${Identifier.quote(PerspectiveTable.served(r.baseName))} AS SELECT * FROM ${Identifier.quote(PerspectiveTable.ofVersion(r.key))}`
})

/**
 * Every registered version's key (an unknown perspective's refusal names them).
 *
 * @category operations
 * @since 0.5.0
 */
export const registeredKeys = Operation.findAll({
  name: "versions.registeredKeys",
  Row: Schema.Struct({ key: Schema.String }),
  columns: { key: v.perspectiveName },
  sql: `SELECT ${v.perspectiveName} FROM ${v.table} ORDER BY ${v.baseName}, ${v.version}`
})

/**
 * A registered version as registration and the hand-overs read it.
 *
 * @category models
 * @since 0.5.0
 */
export const Version = Schema.Struct({
  key: Schema.String,
  version: Schema.Number,
  state: State,
  eventTypes: Schema.Array(Schema.String),
  fingerprint: Schema.NullOr(Schema.String)
})

const versionColumns = {
  key: v.perspectiveName,
  version: v.version,
  state: v.state,
  eventTypes: v.eventTypes,
  fingerprint: v.fingerprint
} as const

/**
 * The versions of these bases, row-locked in (base, version) order (registration runs under the DDL lock, so no two
 * take them in another order).
 *
 * @category operations
 * @since 0.5.0
 */
export const versionsOfBases = Operation.findAll({
  name: "versions.versionsOfBases",
  Row: Schema.Struct({ ...Version.fields, baseName: Schema.String }),
  columns: { ...versionColumns, baseName: v.baseName },
  params: (r: { readonly baseNames: ReadonlyArray<string> }) => [r.baseNames],
  sql: `
SELECT ${v.baseName}, ${v.perspectiveName}, ${v.version}, ${v.state}, ${v.eventTypes}, ${v.fingerprint} FROM ${v.table}
WHERE ${v.baseName} = ANY($1::text[])
ORDER BY ${v.baseName}, ${v.version} FOR UPDATE`
})

/**
 * `relkind` of each relation of the current schema named (unquoted names); absent ones have no row.
 *
 * @category operations
 * @since 0.5.0
 */
export const relationKinds = Operation.findAll({
  name: "versions.relationKinds",
  Row: Schema.Struct({ name: Schema.String, kind: Schema.String }),
  params: (r: { readonly relations: ReadonlyArray<string> }) => [r.relations],
  sql: `
SELECT c.relname::text AS name, c.relkind::text AS kind FROM pg_class c
WHERE c.relname = ANY($1::text[]) AND c.relnamespace = current_schema()::regnamespace`
})

/**
 * The versions of a base, row-locked (registration and state changes run one at a time).
 *
 * @category operations
 * @since 0.5.0
 */
export const versionsOfBase = Operation.findAll({
  name: "versions.versionsOfBase",
  Row: Version,
  columns: versionColumns,
  params: (r: { readonly baseName: string }) => [r.baseName],
  sql: `
SELECT ${v.perspectiveName}, ${v.version}, ${v.state}, ${v.eventTypes}, ${v.fingerprint} FROM ${v.table} WHERE ${v.baseName} = $1::text
ORDER BY ${v.version} FOR UPDATE`
})

/**
 * The versions of a base, unlocked, by version (the operator's operations start from them).
 *
 * @category operations
 * @since 0.5.0
 */
export const versionsOfBaseUnlocked = Operation.findAll({
  name: "versions.versionsOfBaseUnlocked",
  Row: Schema.Struct({ key: Schema.String, version: Schema.Number, state: State }),
  columns: { key: v.perspectiveName, version: v.version, state: v.state },
  params: (r: { readonly baseName: string }) => [r.baseName],
  sql: `SELECT ${v.perspectiveName}, ${v.version}, ${v.state} FROM ${v.table} WHERE ${v.baseName} = $1::text ORDER BY ${v.version}`
})

/**
 * The live version of a base, if any.
 *
 * @category operations
 * @since 0.5.0
 */
export const liveVersionOf = Operation.findOne({
  name: "versions.liveVersionOf",
  Row: Schema.Struct({ key: Schema.String }),
  columns: { key: v.perspectiveName },
  params: (r: { readonly baseName: string }) => [r.baseName],
  sql: `SELECT ${v.perspectiveName} FROM ${v.table} WHERE ${v.baseName} = $1::text AND ${v.state} = 'live'`
})

/**
 * Whether the key was processed before versions were registered (a pre-0.3 perspective): it has cursors or work.
 *
 * @category operations
 * @since 0.5.0
 */
export const hasHistory = Operation.single({
  name: "versions.hasHistory",
  Row: Schema.Struct({ present: Schema.Boolean }),
  params: (r: Key) => [r.key],
  sql: `
SELECT EXISTS (SELECT 1 FROM ${c.table} WHERE ${c.perspectiveName} = $1::text)
    OR EXISTS (SELECT 1 FROM ${pe.table} WHERE ${pe.perspectiveName} = $1::text) AS present`
})

/**
 * The boundary between history and live events: SHARE conflicts with the appends' ROW EXCLUSIVE, so it waits for
 * appends in flight to commit and holds new ones until this transaction commits. Every event committed before is
 * history (planned below); every later append's routing reads the new registry row.
 *
 * @category operations
 * @since 0.5.0
 */
export const lockAppends = Operation.void({
  name: "versions.lockAppends",
  sql: `LOCK TABLE ${e.table} IN SHARE MODE`
})

/**
 * Registers a version.
 *
 * @category operations
 * @since 0.5.0
 */
export const insertVersion = Operation.void({
  name: "versions.insertVersion",
  params: (
    r: Key & {
      readonly baseName: string
      readonly version: number
      readonly state: typeof State.Type
      readonly eventTypes: ReadonlyArray<string>
      readonly fingerprint: string | null
    }
  ) => [r.key, r.baseName, r.version, r.state, r.eventTypes, r.fingerprint],
  sql: `
INSERT INTO ${v.table} (${v.perspectiveName}, ${v.baseName}, ${v.version}, ${v.state}, ${v.eventTypes}, ${v.fingerprint})
VALUES ($1::text, $2::text, $3::int, $4::text, $5::text[], $6::text)`
})

/**
 * A version's fingerprint (see `PerspectiveFingerprint` in core).
 *
 * @category operations
 * @since 0.5.0
 */
export const updateFingerprint = Operation.void({
  name: "versions.updateFingerprint",
  params: (r: Key & { readonly fingerprint: string }) => [r.key, r.fingerprint],
  sql: `UPDATE ${v.table} SET ${v.fingerprint} = $2::text WHERE ${v.perspectiveName} = $1::text`
})

/**
 * Plans a new version's history: per stream with events of its types, the newest such event id now. (It returns
 * the streams and events planned, which registration does not read.)
 *
 * @category operations
 * @since 0.5.0
 */
export const planBackfill = Operation.void({
  name: "versions.planBackfill",
  params: (r: Key & { readonly eventTypes: ReadonlyArray<string> }) => [r.key, r.eventTypes],
  sql: `
WITH planned AS (
  INSERT INTO ${b.table} (${b.perspectiveName}, ${b.streamId}, ${b.throughEventId})
  SELECT DISTINCT ON (e.${e.streamId}) $1::text, e.${e.streamId}, e.${e.eventId}
  FROM ${e.table} e WHERE e.${e.eventType} = ANY($2::text[])
  ORDER BY e.${e.streamId}, e.${e.eventId} DESC
  RETURNING 1
),
counted AS (SELECT count(*) AS n FROM ${e.table} e WHERE e.${e.eventType} = ANY($2::text[]))
UPDATE ${v.table} SET ${v.backfillStreams} = (SELECT count(*) FROM planned), ${v.backfillEvents} = (SELECT n FROM counted)
WHERE ${v.perspectiveName} = $1::text
RETURNING ${v.backfillStreams}, ${v.backfillEvents}`
})

/**
 * The event types a version handles.
 *
 * @category operations
 * @since 0.5.0
 */
export const updateEventTypes = Operation.void({
  name: "versions.updateEventTypes",
  params: (r: Key & { readonly eventTypes: ReadonlyArray<string> }) => [r.key, r.eventTypes],
  sql: `UPDATE ${v.table} SET ${v.eventTypes} = $2::text[] WHERE ${v.perspectiveName} = $1::text`
})

/**
 * Gives up to $2 planned streams of key $1 their history as work rows (not firing receptors) and forgets their
 * plan rows, in one statement: a crash leaves either both or neither. Streams with live work of the version waiting
 * come first (that work is held back until its stream's history is in). Params: $1 key, $2 streams, $3 event types,
 * $4 partition count. Returns the streams and work rows written.
 *
 * @category operations
 * @since 0.5.0
 */
export const backfillChunk = Operation.single({
  name: "versions.backfillChunk",
  Row: Schema.Struct({ streams: Schema.Number, events: Schema.Number }),
  params: (r: Key & { readonly streams: number; readonly eventTypes: ReadonlyArray<string>; readonly partitionCount: number }) => [
    r.key,
    r.streams,
    r.eventTypes,
    r.partitionCount
  ],
  sql: `
WITH picked AS (
  SELECT b.${b.streamId} FROM ${b.table} b
  WHERE b.${b.perspectiveName} = $1::text
  ORDER BY NOT EXISTS (
    SELECT 1 FROM ${pe.table} pe WHERE pe.${pe.streamId} = b.${b.streamId} AND pe.${pe.perspectiveName} = b.${b.perspectiveName}
  ), b.${b.streamId}
  LIMIT $2::int
  FOR UPDATE SKIP LOCKED
),
taken AS (
  DELETE FROM ${b.table} b USING picked p
  WHERE b.${b.perspectiveName} = $1::text AND b.${b.streamId} = p.${b.streamId}
  RETURNING b.${b.streamId}, b.${b.throughEventId}
),
written AS (
  INSERT INTO ${pe.table} (${pe.workId}, ${pe.streamId}, ${pe.perspectiveName}, ${pe.eventId}, ${pe.partitionNumber}, ${pe.fires})
  SELECT gen_random_uuid(), e.${e.streamId}, $1::text, e.${e.eventId}, abs(hashtext(e.${e.streamId}::text)) % $4::int, false
  FROM taken t JOIN ${e.table} e ON e.${e.streamId} = t.${b.streamId} AND e.${e.eventId} <= t.${b.throughEventId}
  WHERE e.${e.eventType} = ANY($3::text[])
  ON CONFLICT (${pe.streamId}, ${pe.perspectiveName}, ${pe.eventId}) DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM taken)::int AS streams, (SELECT count(*) FROM written)::int AS events`
})

/**
 * A version's pending work rows (its lag, in events), streams still planned, and its dead letters.
 *
 * @category models
 * @since 0.5.0
 */
export const Progress = Schema.Struct({ pending: Schema.Number, planned: Schema.Number, deadLetters: Schema.Number })

/**
 * A version's {@link Progress}.
 *
 * @category operations
 * @since 0.5.0
 */
export const progressOf = Operation.single({
  name: "versions.progressOf",
  Row: Progress,
  columns: { deadLetters: "dead_letters" },
  params: (r: Key) => [r.key],
  sql: `
SELECT (SELECT count(*) FROM ${pe.table} WHERE ${pe.perspectiveName} = $1::text AND ${pe.processedAt} IS NULL)::int AS pending,
       (SELECT count(*) FROM ${b.table} WHERE ${b.perspectiveName} = $1::text)::int AS planned,
       (SELECT count(*) FROM ${d.table} WHERE ${d.perspectiveName} = $1::text)::int AS dead_letters`
})

const listing = (pending: string, oldest: string) => `
SELECT v.${v.perspectiveName}, v.${v.baseName}, v.${v.version}, v.${v.state}, v.${v.eventTypes}, v.${v.registeredAt}, v.${v.stateChangedAt}, v.${v.retireAfter},
       v.${v.replayStartedAt},
       v.${v.backfillStreams}, v.${v.backfillEvents}::bigint AS ${v.backfillEvents}, p.planned,
       (${pending})::int AS pending,
       ${oldest} AS oldest_pending,
       (SELECT count(*) FROM ${d.table} d WHERE d.${d.perspectiveName} = v.${v.perspectiveName})::int AS dead_letters,
       EXISTS (
         SELECT 1 FROM ${i.table} i
         WHERE i.${i.lastHeartbeatAt} > now() - make_interval(secs => $1::float8)
           AND (i.${i.perspectiveNames} IS NULL OR v.${v.perspectiveName} = ANY(i.${i.perspectiveNames}))
       ) AS has_runner,
       CASE WHEN v.${v.state} = 'ready' THEN v.${v.handoverUntil} END AS ${v.handoverUntil},
       v.${v.state} = 'ready' AND (v.${v.handoverUntil} IS NULL OR v.${v.handoverUntil} <= now()) AS handover_abandoned
FROM ${v.table} v
CROSS JOIN LATERAL (SELECT count(*)::int AS planned FROM ${b.table} b WHERE b.${b.perspectiveName} = v.${v.perspectiveName}) p
ORDER BY v.${v.baseName}, v.${v.version}`

const pendingRows = `FROM ${pe.table} pe WHERE pe.${pe.perspectiveName} = v.${v.perspectiveName} AND pe.${pe.processedAt} IS NULL`
const pendingOf = `SELECT count(*) ${pendingRows}`
const oldestOf = `(SELECT min(pe.${pe.createdAt}) ${pendingRows})`
const building = `v.${v.state} = 'building' OR p.planned > 0`

/**
 * A version as the listings return it.
 *
 * @category models
 * @since 0.5.0
 */
export const Listed = Schema.Struct({
  key: Schema.String,
  baseName: Schema.String,
  version: Schema.Number,
  state: State,
  eventTypes: Schema.Array(Schema.String),
  registeredAt: Schema.Date,
  stateChangedAt: Schema.Date,
  retireAfter: Schema.NullOr(Schema.Date),
  replayStartedAt: Schema.NullOr(Schema.Date),
  backfillStreams: Schema.Number,
  backfillEvents: Operation.Int8,
  planned: Schema.Number,
  pending: Schema.Number,
  oldestPending: Schema.NullOr(Schema.Date),
  deadLetters: Schema.Number,
  hasRunner: Schema.Boolean,
  handoverUntil: Schema.NullOr(Schema.Date),
  handoverAbandoned: Schema.Boolean
})

const listedColumns = {
  key: v.perspectiveName,
  baseName: v.baseName,
  version: v.version,
  state: v.state,
  eventTypes: v.eventTypes,
  registeredAt: v.registeredAt,
  stateChangedAt: v.stateChangedAt,
  retireAfter: v.retireAfter,
  replayStartedAt: v.replayStartedAt,
  backfillStreams: v.backfillStreams,
  backfillEvents: v.backfillEvents,
  oldestPending: "oldest_pending",
  deadLetters: "dead_letters",
  hasRunner: "has_runner",
  handoverUntil: v.handoverUntil,
  handoverAbandoned: "handover_abandoned"
} as const

/**
 * Every version with its progress (status, the CLI). `has_runner`: some instance whose heartbeat is newer than $1
 * seconds (the workers' `abandonStaleInstanceThreshold`, as the watchdog judges liveness) runs the version; a row
 * left by a crashed instance does not count. Params: $1 dead-instance-after seconds.
 *
 * @category operations
 * @since 0.5.0
 */
export const listVersions = Operation.findAll({
  name: "versions.listVersions",
  Row: Listed,
  columns: listedColumns,
  params: (r: { readonly deadInstanceAfterSeconds: number }) => [r.deadInstanceAfterSeconds],
  sql: listing(pendingOf, oldestOf)
})

/**
 * {@link listVersions} for the build loop, every round: the pending events and the oldest of them are counted in
 * full only for versions still building or with history planned. Another version's pending events are counted up
 * to $2 (its oldest is not read): counting a live version's whole backlog scanned every pending work row each round
 * (78 ms at 100,000 of them). Params: $1 dead-instance-after seconds, $2 the most counted.
 *
 * @category operations
 * @since 0.5.0
 */
export const listVersionsForBuild = Operation.findAll({
  name: "versions.listVersionsForBuild",
  Row: Listed,
  columns: listedColumns,
  params: (r: { readonly deadInstanceAfterSeconds: number; readonly countCap: number }) => [r.deadInstanceAfterSeconds, r.countCap],
  sql: listing(
    `CASE WHEN ${building} THEN (${pendingOf}) ELSE (SELECT count(*) FROM (SELECT 1 ${pendingRows} LIMIT $2::int) c) END`,
    `CASE WHEN ${building} THEN ${oldestOf} END`
  )
})

/**
 * A version replaced by a hand-over: retiring, kept up to date for the grace period.
 *
 * @category operations
 * @since 0.5.0
 */
export const setRetiring = Operation.void({
  name: "versions.setRetiring",
  params: (r: Key & { readonly graceSeconds: number }) => [r.key, r.graceSeconds],
  sql: `
UPDATE ${v.table} SET ${v.state} = 'retiring', ${v.stateChangedAt} = now(), ${v.retireAfter} = now() + make_interval(secs => $2::double precision)
WHERE ${v.perspectiveName} = $1::text`
})

/**
 * The work ids of the version pending now (what a cutover waits for).
 *
 * @category operations
 * @since 0.5.0
 */
export const pendingWorkIds = Operation.single({
  name: "versions.pendingWorkIds",
  Row: Schema.Struct({ ids: Schema.NullOr(Schema.Array(Schema.String)) }),
  params: (r: Key) => [r.key],
  sql: `SELECT array_agg(${pe.workId}) AS ids FROM ${pe.table} WHERE ${pe.perspectiveName} = $1::text AND ${pe.processedAt} IS NULL`
})

/**
 * How many of these work rows are still pending.
 *
 * @category operations
 * @since 0.5.0
 */
export const stillPending = Operation.single({
  name: "versions.stillPending",
  Row: Count,
  params: (r: { readonly workIds: ReadonlyArray<string> }) => [r.workIds],
  sql: `SELECT count(*)::int AS n FROM ${pe.table} WHERE ${pe.workId} = ANY($1::uuid[]) AND ${pe.processedAt} IS NULL`
})

/**
 * A version retired, with the pending work rows and planned streams dropped.
 *
 * @category models
 * @since 0.5.0
 */
export const Retired = Schema.Struct({ key: Schema.String, dropped: Schema.Number, unplanned: Schema.Number })

/**
 * Retires the versions whose grace period is over: no longer routed, their pending work dropped. Follow it with
 * {@link notifyVersionsChanged} (a bare `wh_processed` notification wakes read-your-writes waits that counted on
 * them). Returns the retired keys.
 *
 * @category operations
 * @since 0.5.0
 */
export const retireDue = Operation.findAll({
  name: "versions.retireDue",
  Row: Retired,
  columns: { key: v.perspectiveName },
  sql: `
WITH due AS (
  UPDATE ${v.table} SET ${v.state} = 'retired', ${v.stateChangedAt} = now(), ${v.retireAfter} = NULL
  WHERE ${v.state} = 'retiring' AND ${v.retireAfter} <= now()
  RETURNING ${v.perspectiveName}
),
dropped AS (
  DELETE FROM ${pe.table} pe USING due d WHERE pe.${pe.perspectiveName} = d.${v.perspectiveName} RETURNING 1
),
unplanned AS (
  DELETE FROM ${b.table} b USING due d WHERE b.${b.perspectiveName} = d.${v.perspectiveName} RETURNING 1
)
SELECT d.${v.perspectiveName}, (SELECT count(*) FROM dropped)::int AS dropped, (SELECT count(*) FROM unplanned)::int AS unplanned
FROM due d`
})

/**
 * Fresh planner statistics for the tables a build grows fast. The build adds tens of thousands of work rows to a
 * table the planner may still think small (autovacuum's ANALYZE comes a minute or more later); with stale statistics
 * the completion's lease release walks the whole claim index per stream, and every perspective's cycles slow down.
 * ANALYZE takes no lock that blocks reads or writes; a table another session is analyzing or vacuuming is skipped
 * (`SKIP_LOCKED`); a role that does not own the tables gets a warning, not an error.
 *
 * @category operations
 * @since 0.5.0
 */
export const analyzeBuildTables = Operation.void({
  name: "versions.analyzeBuildTables",
  sql: `ANALYZE (SKIP_LOCKED) ${pe.table}, ${b.table}`
})

/**
 * Retires versions by hand (a perspective removed from the code): no longer routed, their pending work and planned
 * history dropped, in one statement. Run after {@link lockAppends}, so no append in flight routes to them after it.
 * Follow it with {@link notifyVersionsChanged}. Params: $1 keys. Returns each retired key with the rows dropped.
 *
 * @category operations
 * @since 0.5.0
 */
export const retireVersions = Operation.findAll({
  name: "versions.retireVersions",
  Row: Retired,
  columns: { key: v.perspectiveName },
  params: (r: Keys) => [r.keys],
  sql: `
WITH retired AS (
  UPDATE ${v.table} SET ${v.state} = 'retired', ${v.stateChangedAt} = now(), ${v.retireAfter} = NULL
  WHERE ${v.perspectiveName} = ANY($1::text[]) AND ${v.state} <> 'retired'
  RETURNING ${v.perspectiveName}
),
dropped AS (
  DELETE FROM ${pe.table} pe USING retired r WHERE pe.${pe.perspectiveName} = r.${v.perspectiveName} RETURNING pe.${pe.perspectiveName}
),
unplanned AS (
  DELETE FROM ${b.table} b USING retired r WHERE b.${b.perspectiveName} = r.${v.perspectiveName} RETURNING b.${b.perspectiveName}
)
SELECT r.${v.perspectiveName},
       (SELECT count(*) FROM dropped d WHERE d.${pe.perspectiveName} = r.${v.perspectiveName})::int AS dropped,
       (SELECT count(*) FROM unplanned u WHERE u.${b.perspectiveName} = r.${v.perspectiveName})::int AS unplanned
FROM retired r ORDER BY r.${v.perspectiveName}`
})

/**
 * Live instances (heartbeat newer than $2 seconds) that run each key: those that list it, and those that list no
 * perspectives (they run every one). Params: $1 keys, $2 seconds.
 *
 * @category operations
 * @since 0.5.0
 */
export const liveRunners = Operation.findAll({
  name: "versions.liveRunners",
  Row: Schema.Struct({ key: Schema.String, instances: Schema.Number }),
  columns: { key: v.perspectiveName },
  params: (r: Keys & { readonly seconds: number }) => [r.keys, r.seconds],
  sql: `
SELECT k.name AS ${v.perspectiveName}, count(i.${i.instanceId})::int AS instances
FROM unnest($1::text[]) AS k(name)
LEFT JOIN ${i.table} i
  ON i.${i.lastHeartbeatAt} > now() - make_interval(secs => $2::float8)
 AND (i.${i.perspectiveNames} IS NULL OR k.name = ANY(i.${i.perspectiveNames}))
GROUP BY k.name`
})

/**
 * After a statement that changed versions' states, in its transaction when it has one: the `@versions` line of each
 * of their base names (`wh_notify_versions`, migration 0019) and a bare `wh_processed` notification that wakes
 * read-your-writes waits. Its own statement, never a column of the statement that changed the states: on Citus a
 * statement that reads the schema's tables runs on their worker node, and a NOTIFY sent there reaches no listener
 * (the listeners are connected to the coordinator). Params: $1 keys.
 *
 * @category operations
 * @since 0.5.0
 */
export const notifyVersionsChanged = Operation.void({
  name: "versions.notifyVersionsChanged",
  params: (r: Keys) => [r.keys],
  sql: `SELECT wh_notify_versions($1::text[]), pg_notify('wh_processed', current_schema())`
})

/**
 * Wakes the workers after work rows were written outside an append (a version's history): `wh_work` as the
 * `wh_notify_work` trigger sent it before migration 0019, a statement of its own for the reason given at
 * {@link notifyVersionsChanged}.
 *
 * @category operations
 * @since 0.5.0
 */
export const wakeWorkers = Operation.void({
  name: "versions.wakeWorkers",
  sql: "SELECT pg_notify('wh_work', current_schema())"
})
