/**
 * The set-based SQL baseline: the same work on the same tables (wh_events, wh_perspective_events,
 * wh_perspective_cursors, wh_per_counter, wh_per_summary) done by hand-written SQL in the fewest statements.
 *
 * Each loop owns a static slice of the partitions (partition % loops = k), so no leases or locks are needed, and
 * runs cycles of exactly two round trips:
 * 1. claim + fetch: the streams of the oldest pending work rows of its slice, all their pending work rows with the
 *    event payloads, and their current models, in one statement;
 * 2. commit: upsert the read models (by default both of the bench's; see {@link Target}), advance the cursors and delete exactly the applied work rows in one statement
 *    (a single statement is atomic: exactly-once holds).
 * Folds run in JavaScript with the same functions as every other system.
 */
import type pg from "pg"
import * as Domain from "../Domain.js"
import { schema } from "./Whizbang.js"

/**
 * A read model the baseline maintains: the perspective key its work rows carry, its table and its fold. Every pending
 * work row must belong to one of the targets of a run.
 */
export interface Target {
  readonly perspective: string
  readonly table: string
  readonly initial: unknown
  readonly fold: (model: never, event: Domain.Payload) => unknown
}

/** The bench's two read models (scenarios a and e). */
export const domainTargets: ReadonlyArray<Target> = [
  { perspective: "counter", table: "wh_per_counter", initial: Domain.counterInitial, fold: Domain.foldCounter },
  { perspective: "summary", table: "wh_per_summary", initial: Domain.summaryInitial, fold: Domain.foldSummary }
]

const claimAndFetch = (targets: ReadonlyArray<Target>, schema: string) => `
WITH s AS (
  SELECT DISTINCT stream_id FROM (
    SELECT stream_id FROM ${schema}.wh_perspective_events
    WHERE processed_at IS NULL AND partition_number % $1::int = $2::int
    ORDER BY event_id LIMIT $3::int
  ) oldest
)
SELECT 0 AS kind, pe.work_id, pe.stream_id, pe.perspective_name, pe.event_id, e.payload
FROM ${schema}.wh_perspective_events pe JOIN ${schema}.wh_events e ON e.event_id = pe.event_id
WHERE pe.stream_id IN (SELECT stream_id FROM s) AND pe.processed_at IS NULL
${targets
  .map(
    (t) => `UNION ALL\nSELECT 1, NULL, id, '${t.perspective}', NULL, data FROM ${schema}.${t.table} WHERE id IN (SELECT stream_id FROM s)`
  )
  .join("\n")}
ORDER BY kind, stream_id, perspective_name, event_id`

const upsert = (schema: string, table: string, ids: string, data: string, applied: string) => `
INSERT INTO ${schema}.${table} AS t (id, data, version)
SELECT * FROM unnest(${ids}::uuid[], ${data}::jsonb[], ${applied}::int[])
ON CONFLICT (id) DO UPDATE SET data = excluded.data, version = t.version + excluded.version, updated_at = now()`

/** Parameters: per target k, $3k+1..$3k+3 (ids, models, events applied); then the cursors (streams, keys, last ids) and the work ids. */
const commit = (targets: ReadonlyArray<Target>, schema: string) => {
  const n = targets.length * 3
  return `
WITH ${targets.map((t, k) => `m${k} AS (${upsert(schema, t.table, `$${3 * k + 1}`, `$${3 * k + 2}`, `$${3 * k + 3}`)})`).join(",\n")},
cur AS (
  INSERT INTO ${schema}.wh_perspective_cursors AS c (stream_id, perspective_name, last_event_id, status, processed_at)
  SELECT s, p, l, 2, now() FROM unnest($${n + 1}::uuid[], $${n + 2}::text[], $${n + 3}::uuid[]) AS t(s, p, l)
  ON CONFLICT (stream_id, perspective_name) DO UPDATE SET last_event_id = excluded.last_event_id, status = 2, processed_at = now()
)
DELETE FROM ${schema}.wh_perspective_events WHERE work_id = ANY($${n + 4}::uuid[])`
}

interface Row {
  readonly kind: number
  readonly work_id: string | null
  readonly stream_id: string
  readonly perspective_name: string
  readonly event_id: string | null
  readonly payload: Domain.Payload | null
}

/**
 * Drains one schema's slice (`partition % loops = k`) on `client`: cycles until a claim comes back empty, or, with
 * `stopWhenShort`, until a cycle took fewer work rows than `batchRows` (then the oldest rows did not reach the limit:
 * every pending row of the slice was taken; true only while nothing is appended meanwhile). Returns the work rows
 * completed.
 */
const drain = async (
  client: pg.PoolClient,
  schema: string,
  loops: number,
  k: number,
  batchRows: number,
  targets: ReadonlyArray<Target>,
  stopWhenShort: boolean
) => {
  const claim = claimAndFetch(targets, schema)
  const write = commit(targets, schema)
  const index = new Map(targets.map((t, j) => [t.perspective, j]))
  let done = 0
  for (;;) {
    const rows = (await client.query<Row>(claim, [loops, k, batchRows])).rows
    if (rows.length === 0) return done
    const models = new Map<string, unknown>()
    const groups = new Map<string, Array<Row>>()
    for (const r of rows) {
      const key = `${r.perspective_name}|${r.stream_id}`
      if (r.kind === 1) models.set(key, r.payload)
      else (groups.get(key) ?? groups.set(key, []).get(key)!).push(r)
    }
    const out = targets.map(() => ({ ids: [] as Array<string>, data: [] as Array<string>, applied: [] as Array<number> }))
    const cursors = { s: [] as Array<string>, p: [] as Array<string>, l: [] as Array<string> }
    const workIds: Array<string> = []
    for (const [key, list] of groups) {
      const { perspective_name: name, stream_id: stream } = list[0]!
      const j = index.get(name)
      if (j === undefined) throw new Error(`baseline: a pending work row of ${name}, which is none of its targets`)
      const target = targets[j]!
      let model: unknown = models.get(key) ?? target.initial
      for (const r of list) {
        model = target.fold(model as never, r.payload!)
        workIds.push(r.work_id!)
      }
      out[j]!.ids.push(stream)
      out[j]!.data.push(JSON.stringify(model))
      out[j]!.applied.push(list.length)
      cursors.s.push(stream)
      cursors.p.push(name)
      cursors.l.push(list.at(-1)!.event_id!)
    }
    await client.query(write, [...out.flatMap((o) => [o.ids, o.data, o.applied]), cursors.s, cursors.p, cursors.l, workIds])
    done += workIds.length
    if (stopWhenShort && workIds.length < batchRows) return done
  }
}

/** One loop: cycles until its slice is empty. Returns the number of work rows it completed. */
const loop = async (db: pg.Pool, loops: number, k: number, batchRows: number, targets: ReadonlyArray<Target>) => {
  const client = await db.connect()
  try {
    return await drain(client, schema, loops, k, batchRows, targets, false)
  } finally {
    client.release()
  }
}

/**
 * Processes everything pending with `loops` concurrent loops. `batchRows` oldest work rows pick the streams of a
 * cycle (all their pending rows are then taken). Returns start/end `performance.now()` times.
 */
export const run = async (db: pg.Pool, loops: number, batchRows = 600, targets: ReadonlyArray<Target> = domainTargets) => {
  const start = performance.now()
  const done = await Promise.all(Array.from({ length: loops }, (_, k) => loop(db, loops, k, batchRows, targets)))
  return { start, end: performance.now(), workRows: done.reduce((a, b) => a + b, 0) }
}

/**
 * The same work spread over many schemas (scenario t's floor): `loops` connections take the schemas in turn, each
 * schema drained whole by the loop that took it (its statements name that schema, so each is parsed and planned for
 * that schema's tables, as any statement of a schema per tenant must be), stopping at a short cycle instead of
 * running a last empty claim. Returns start/end `performance.now()` times.
 */
export const runSchemas = async (
  db: pg.Pool,
  loops: number,
  schemas: ReadonlyArray<string>,
  batchRows = 600,
  targets: ReadonlyArray<Target> = domainTargets
) => {
  const start = performance.now()
  let next = 0
  const done = await Promise.all(
    Array.from({ length: loops }, async () => {
      const client = await db.connect()
      let rows = 0
      try {
        while (next < schemas.length) rows += await drain(client, schemas[next++]!, 1, 0, batchRows, targets, true)
      } finally {
        client.release()
      }
      return rows
    })
  )
  return { start, end: performance.now(), workRows: done.reduce((a, b) => a + b, 0) }
}

/** The statements of the bench's two read models, for EXPLAIN in the profile step. */
export const statements = { claimAndFetch: claimAndFetch(domainTargets, schema), commit: commit(domainTargets, schema) }

/** The read-model tables, as `PgPerspectiveStore` creates them (the baseline runs without the pipeline). */
export const createModelTables = async (
  db: pg.Pool,
  tables: ReadonlyArray<string> = domainTargets.map((t) => t.table),
  target: string = schema
) => {
  for (const table of tables) {
    await db.query(`CREATE TABLE IF NOT EXISTS ${target}.${table} (
      id uuid PRIMARY KEY, data jsonb NOT NULL, metadata jsonb NOT NULL DEFAULT '{}'::jsonb, scope jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), version bigint NOT NULL DEFAULT 1)`)
  }
}
