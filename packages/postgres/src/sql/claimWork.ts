import { Schema } from "effect"
import {
  ActiveStreams as a,
  Events as e,
  PerspectiveCursors as c,
  PerspectiveEvents as pe,
  ServiceInstances as i
} from "../internal/columns.js"
import * as Operation from "../internal/operation.js"
import { fetchParts, PendingRow, textsPerModels } from "./fetchPendingEvents.js"

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
  SELECT pe.${pe.streamId}, pe.${pe.partitionNumber}, pe.${pe.eventId}, ${tier} AS tier
  FROM ${pe.table} pe
  CROSS JOIN me
  LEFT JOIN ${a.table} a ON a.${a.streamId} = pe.${pe.streamId}
  LEFT JOIN ${c.table} c ON c.${c.streamId} = pe.${pe.streamId} AND c.${c.perspectiveName} = pe.${pe.perspectiveName}
  WHERE pe.${pe.processedAt} IS NULL AND ${fires}
    AND ($7::text[] IS NULL OR pe.${pe.perspectiveName} = ANY($7::text[]))
    AND (pe.${pe.scheduledFor} IS NULL OR pe.${pe.scheduledFor} <= now())
    AND NOT (pe.${pe.streamId} = ANY($6::uuid[]))
    AND pe.${pe.eventId} <= (
      SELECT h.${pe.eventId} FROM ${pe.table} h
      WHERE h.${pe.streamId} = pe.${pe.streamId} AND h.${pe.perspectiveName} = pe.${pe.perspectiveName} AND h.${pe.processedAt} IS NULL
      ORDER BY h.${pe.eventId} LIMIT 1
    )
    -- IS NOT TRUE, not NOT coalesce(.., false): Citus refuses now() inside COALESCE and CASE in a modification.
    AND (c.${c.streamLockInstanceId} IS NOT NULL AND c.${c.streamLockExpiry} > now()) IS NOT TRUE
    AND (a.${a.streamId} IS NULL OR a.${a.instanceId} IS NULL OR a.${a.instanceId} = $1::uuid OR a.${a.leaseExpiry} <= now()
         OR a.${a.instanceId} IN (SELECT ${i.instanceId} FROM stale))
    AND (a.${a.instanceId} = $1::uuid
         OR (NOT me.registered AND me.n = 0)
         OR (me.registered AND $7::text[] IS NULL AND pe.${pe.partitionNumber} % me.n = me.rank)
         OR (me.registered AND $7::text[] IS NOT NULL AND EXISTS (
               SELECT 1 FROM ranks r WHERE r.perspective_name = pe.${pe.perspectiveName} AND r.n > 0 AND pe.${pe.partitionNumber} % r.n = r.rank))
         OR coalesce(pe.${pe.scheduledFor}, pe.${pe.createdAt}) <= now() - make_interval(secs => $5::int / 1000.0))
  ORDER BY pe.${pe.eventId}
  LIMIT ${limit}
`

/** Background streams a claim may take: up to 2 x $2 queued and in-cycle streams (`$6` counts), per perspective head. */
const backgroundHeads = "greatest(2 * $2::int - cardinality($6::uuid[]), 0) * greatest($8::int, 1)"

/**
 * The claim's CTEs (without the leading WITH): `claimed` returns the streams claimed, `picked` their order.
 * `backgroundLimit`: how many background heads it walks for (an expression of the parameters).
 */
const claimCtesWith = (backgroundLimit: string) => `
live AS (
  SELECT ${i.instanceId}, ${i.perspectiveNames}
  FROM ${i.table}
  WHERE ${i.lastHeartbeatAt} > now() - make_interval(secs => $4::int)
),
me AS (
  SELECT (SELECT count(*)::int FROM live) AS n,
         EXISTS (SELECT 1 FROM live WHERE ${i.instanceId} = $1::uuid) AS registered,
         (SELECT count(*)::int FROM live WHERE ${i.instanceId} < $1::uuid) AS rank
),
ranks AS (
  SELECT p.name AS perspective_name,
         count(l.${i.instanceId})::int AS n,
         (count(l.${i.instanceId}) FILTER (WHERE l.${i.instanceId} < $1::uuid))::int AS rank
  FROM unnest($7::text[]) AS p(name)
  LEFT JOIN live l ON l.${i.perspectiveNames} IS NULL OR p.name = ANY(l.${i.perspectiveNames})
  GROUP BY p.name
),
stale AS (
  SELECT ${i.instanceId} FROM ${i.table} WHERE ${i.lastHeartbeatAt} <= now() - make_interval(secs => $4::int)
),
live_heads AS (${headsOf(0, `pe.${pe.fires}`, "$2::int * greatest($8::int, 1)")}),
background_heads AS (${headsOf(1, `NOT pe.${pe.fires}`, backgroundLimit)}),
heads AS (
  SELECT * FROM live_heads UNION ALL SELECT * FROM background_heads
),
picked AS (
  SELECT ${pe.streamId}, min(${pe.partitionNumber}) AS ${pe.partitionNumber}, min(position) AS oldest
  FROM (SELECT h.*, row_number() OVER (ORDER BY h.tier, h.${pe.eventId}) AS position FROM heads h) ranked
  GROUP BY ${pe.streamId}
  ORDER BY min(position)
  LIMIT $2::int
),
-- A stream held by a stale instance (heartbeat older than $4 seconds) is taken over by an UPDATE, the others by the
-- INSERT's ON CONFLICT, which re-checks the holder if another claim committed meanwhile. The stale case used to be
-- part of that re-check (\`OR a.instance_id IN (SELECT .. stale)\`), but Citus runs no subquery and no now() in an
-- ON CONFLICT clause (README, "Outgrowing one database"); the UPDATE re-checks it on the newest row version the
-- same way (READ COMMITTED). Row locks in stream-id order in both, as before.
taken AS (
  UPDATE ${a.table} a SET ${a.instanceId} = $1::uuid, ${a.leaseExpiry} = now() + make_interval(secs => $3::int)
  WHERE a.${a.streamId} IN (
    SELECT x.${a.streamId} FROM ${a.table} x
    WHERE x.${a.streamId} IN (SELECT ${pe.streamId} FROM picked) AND x.${a.instanceId} IN (SELECT ${i.instanceId} FROM stale)
    ORDER BY x.${a.streamId} FOR UPDATE
  )
  AND a.${a.instanceId} IN (SELECT ${i.instanceId} FROM stale)
  RETURNING a.${a.streamId}
),
inserted AS (
  INSERT INTO ${a.table} AS a (${a.streamId}, ${a.instanceId}, ${a.partitionNumber}, ${a.leaseExpiry})
  SELECT ${pe.streamId}, $1::uuid, ${pe.partitionNumber}, now() + make_interval(secs => $3::int)
  FROM picked
  WHERE ${pe.streamId} NOT IN (SELECT ${a.streamId} FROM taken)
  ORDER BY ${pe.streamId}
  ON CONFLICT (${a.streamId}) DO UPDATE
    SET ${a.instanceId} = excluded.${a.instanceId}, ${a.leaseExpiry} = excluded.${a.leaseExpiry}
    -- \`a.lease_expiry <= now()\` written with immutable operators only (Citus): excluded.lease_expiry is now() + the lease.
    WHERE a.${a.instanceId} IS NULL OR a.${a.instanceId} = excluded.${a.instanceId}
       OR excluded.${a.leaseExpiry} - a.${a.leaseExpiry} >= make_interval(secs => $3::int)
  RETURNING a.${a.streamId}
),
claimed AS (
  SELECT ${a.streamId} FROM taken UNION ALL SELECT ${a.streamId} FROM inserted
),
no_wal_wait AS (SELECT set_config('synchronous_commit', 'off', true) AS setting)`

const claimCtes = claimCtesWith(backgroundHeads)

/**
 * What a claim is asked ($1-$8 of {@link claimWork}).
 *
 * @category models
 * @since 0.5.0
 */
export interface ClaimRequest {
  readonly instanceId: string
  readonly maxStreams: number
  readonly leaseSeconds: number
  readonly staleSeconds: number
  readonly graceMillis: number
  /** Streams the instance has queued already (never returned). */
  readonly exclude: ReadonlyArray<string>
  /** Null: every perspective. */
  readonly perspectiveNames: ReadonlyArray<string> | null
  /** Heads scanned per wanted stream: the number of perspectives (4 when every perspective). */
  readonly heads: number
}

const claimParams = (r: ClaimRequest) => [
  r.instanceId,
  r.maxStreams,
  r.leaseSeconds,
  r.staleSeconds,
  r.graceMillis,
  r.exclude,
  r.perspectiveNames,
  r.heads
]

/**
 * The claim (see the notes at the top of the module). Returns the streams claimed, oldest work first.
 *
 * @category operations
 * @since 0.5.0
 */
export const claimWork = Operation.findAll({
  name: "claimWork.claimWork",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: a.streamId },
  params: claimParams,
  prepared: true,
  sql: `
WITH ${claimCtes}
SELECT c.${a.streamId} FROM claimed c JOIN picked p ON p.${pe.streamId} = c.${a.streamId} CROSS JOIN no_wal_wait ORDER BY p.oldest`
})

/**
 * The claim and the first fetch of what it claimed in ONE statement (a cycle's claim and fetch used to be two round
 * trips in a row). The claim is {@link claimWork} ($1-$8); the fetch is `fetchPendingEvents` over the streams it
 * claimed, without the lease check (the leases are this statement's own), with $9 the limit per (stream,
 * perspective), $7 the perspective names and $10 the background budget; $11 false leaves background streams out of
 * the claim (no walk of the background index: the coordinator rests that tier, `internal/workClaims.ts`). Rows, unordered (the coordinator orders
 * them, `internal/pendingRows.ts`): the claimed streams (`part` 0, their place in the claim as `claim_order`, every
 * other column null) and the fetched rows (`part` 1, the fetch's columns). The fetch's late-arrival flags commit
 * with the claim, without waiting for their WAL flush: one lost in a server crash is set again by the next fetch.
 */
export const claimAndFetchSql = (modelTables?: ReadonlyArray<string>): string => {
  const fetch = fetchParts(modelTables, {
    wanted: `SELECT ${a.streamId} FROM claimed`,
    leased: false,
    limit: "$9",
    names: "$7",
    background: "$10"
  })
  return `
WITH ${claimCtesWith(`CASE WHEN $11::boolean THEN ${backgroundHeads} ELSE 0 END`)},${fetch.ctes}
SELECT 0 AS part, c.${a.streamId}, p.oldest::int AS claim_order, NULL::uuid AS ${pe.workId}, NULL::text AS ${pe.perspectiveName},
       NULL::uuid AS ${pe.eventId}, NULL::int AS ${pe.attempts}, NULL::uuid AS cursor_last_event_id, NULL::boolean AS ${pe.fires},
       NULL::boolean AS blocked, NULL::boolean AS rewind_required, NULL::boolean AS event_first, NULL::boolean AS more,
       NULL::text AS ${e.eventType}, NULL::jsonb AS ${e.payload}, NULL::jsonb AS ${e.metadata}, NULL::jsonb AS ${e.scope},
       NULL::int AS ${e.streamVersion}, NULL::jsonb AS model
FROM claimed c JOIN picked p ON p.${pe.streamId} = c.${a.streamId} CROSS JOIN no_wal_wait
UNION ALL
SELECT 1, f.${pe.streamId}, NULL, f.${pe.workId}, f.${pe.perspectiveName}, f.${pe.eventId}, f.${pe.attempts}, f.cursor_last_event_id, f.${pe.fires},
       f.blocked, f.rewind_required, f.event_first, f.more, f.${e.eventType}, f.${e.payload}, f.${e.metadata}, f.${e.scope},
       f.${e.streamVersion}, f.model
FROM (${fetch.rows}) f`
}

const claimAndFetchText = textsPerModels(claimAndFetchSql)

/**
 * A row of {@link claimAndFetch}: a claimed stream (`part` 0; its other columns are null) or a fetched row (`part` 1).
 * Named as its columns, like `PendingRow`: the rows are checked, never copied.
 *
 * @category models
 * @since 0.5.0
 */
export const ClaimAndFetchRow = Schema.Union([
  Schema.Struct({ part: Schema.Literal(0), [a.streamId]: Schema.String, claim_order: Schema.Number }),
  Schema.Struct({ ...PendingRow.fields, part: Schema.Literal(1) })
])

/**
 * A claimed stream's row of {@link claimAndFetch}.
 *
 * @category models
 * @since 0.5.0
 */
export type ClaimedRow = Extract<typeof ClaimAndFetchRow.Type, { readonly part: 0 }>

/**
 * {@link claimAndFetchSql} as an operation: `modelsOf`, the perspectives whose models the fetch loads (the same as
 * `perspectiveNames`, or none), picks the statement text.
 *
 * @category operations
 * @since 0.5.0
 */
export const claimAndFetch = Operation.findAll({
  name: "claimWork.claimAndFetch",
  Row: ClaimAndFetchRow,
  params: (
    r: ClaimRequest & {
      readonly limit: number
      readonly backgroundLimit: number
      readonly modelsOf: ReadonlyArray<string> | undefined
      /** Whether the claim takes background streams at all (`false`: the background tier rests, see `workClaims.ts`). */
      readonly background: boolean
    }
  ) => [...claimParams(r), r.limit, r.backgroundLimit, r.background],
  prepared: true,
  sql: (r) => claimAndFetchText(r.modelsOf)
})

/**
 * Drops the instance's leases on streams with no pending work of the perspectives it runs (its registered
 * `perspective_names`; none recorded: every perspective), in stream-id lock order — so work of a perspective this
 * instance does not run is never held behind its lease.
 *
 * @category operations
 * @since 0.5.0
 */
export const releaseIdleStreams = Operation.void({
  name: "claimWork.releaseIdleStreams",
  params: (r: { readonly instanceId: string }) => [r.instanceId],
  prepared: true,
  sql: `
DELETE FROM ${a.table}
WHERE ${a.streamId} IN (
  SELECT a.${a.streamId} FROM ${a.table} a
  WHERE a.${a.instanceId} = $1::uuid
    AND NOT EXISTS (
      SELECT 1 FROM ${pe.table} pe
      WHERE pe.${pe.streamId} = a.${a.streamId} AND pe.${pe.processedAt} IS NULL
        AND pe.${pe.perspectiveName} = ANY(coalesce((SELECT i.${i.perspectiveNames} FROM ${i.table} i WHERE i.${i.instanceId} = $1::uuid), ARRAY[pe.${pe.perspectiveName}]))
    )
  ORDER BY a.${a.streamId} FOR UPDATE
)`
})

/**
 * Extends the instance's live leases on these streams (long applies); returns the streams still held.
 *
 * @category operations
 * @since 0.5.0
 */
export const renewStreamLeases = Operation.findAll({
  name: "claimWork.renewStreamLeases",
  Row: Schema.Struct({ streamId: Schema.String }),
  columns: { streamId: a.streamId },
  params: (r: { readonly instanceId: string; readonly streamIds: ReadonlyArray<string>; readonly leaseSeconds: number }) => [
    r.instanceId,
    r.streamIds,
    r.leaseSeconds
  ],
  prepared: true,
  sql: `
UPDATE ${a.table} SET ${a.leaseExpiry} = now() + make_interval(secs => $3::int)
WHERE ${a.streamId} IN (
  SELECT ${a.streamId} FROM ${a.table}
  WHERE ${a.streamId} = ANY($2::uuid[]) AND ${a.instanceId} = $1::uuid AND ${a.leaseExpiry} > now()
  ORDER BY ${a.streamId} FOR UPDATE
)
RETURNING ${a.streamId}`
})

/**
 * Extends the instance's leases on the streams of these work rows (`WorkCoordinator.renewLeases`). Returns how many
 * leases it renewed.
 *
 * @category operations
 * @since 0.5.0
 */
export const renewLeasesOfWork = Operation.count({
  name: "claimWork.renewLeasesOfWork",
  params: (r: { readonly instanceId: string; readonly workIds: ReadonlyArray<string>; readonly leaseSeconds: number }) => [
    r.instanceId,
    r.workIds,
    r.leaseSeconds
  ],
  sql: `UPDATE ${a.table} SET ${a.leaseExpiry} = now() + make_interval(secs => $3::int)
           WHERE ${a.instanceId} = $1::uuid AND ${a.streamId} IN (SELECT ${pe.streamId} FROM ${pe.table} WHERE ${pe.workId} = ANY($2::uuid[]))
           RETURNING ${a.streamId}`
})
