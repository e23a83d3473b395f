/**
 * The set-based SQL baseline: the same work on the same tables (wh_events, wh_perspective_events,
 * wh_perspective_cursors, wh_per_counter, wh_per_summary) done by hand-written SQL in the fewest statements.
 *
 * Each loop owns a static slice of the partitions (partition % loops = k), so no leases or locks are needed, and
 * runs cycles of exactly two round trips:
 * 1. claim + fetch: the streams of the oldest pending work rows of its slice, all their pending work rows with the
 *    event payloads, and their current models, in one statement;
 * 2. commit: upsert both read models, advance the cursors and delete exactly the applied work rows in one statement
 *    (a single statement is atomic: exactly-once holds).
 * Folds run in JavaScript with the same functions as every other system.
 */
import type pg from "pg"
import * as Domain from "../Domain.js"
import { schema } from "./Whizbang.js"

const claimAndFetch = `
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
UNION ALL
SELECT 1, NULL, id, 'counter', NULL, data FROM ${schema}.wh_per_counter WHERE id IN (SELECT stream_id FROM s)
UNION ALL
SELECT 1, NULL, id, 'summary', NULL, data FROM ${schema}.wh_per_summary WHERE id IN (SELECT stream_id FROM s)
ORDER BY kind, stream_id, perspective_name, event_id`

const upsert = (name: string, ids: string, data: string, applied: string) => `
INSERT INTO ${schema}.wh_per_${name} AS t (id, data, version)
SELECT * FROM unnest(${ids}::uuid[], ${data}::jsonb[], ${applied}::int[])
ON CONFLICT (id) DO UPDATE SET data = excluded.data, version = t.version + excluded.version, updated_at = now()`

const commit = `
WITH c AS (${upsert("counter", "$1", "$2", "$3")}),
s AS (${upsert("summary", "$4", "$5", "$6")}),
cur AS (
  INSERT INTO ${schema}.wh_perspective_cursors AS c (stream_id, perspective_name, last_event_id, status, processed_at)
  SELECT s, p, l, 2, now() FROM unnest($7::uuid[], $8::text[], $9::uuid[]) AS t(s, p, l)
  ON CONFLICT (stream_id, perspective_name) DO UPDATE SET last_event_id = excluded.last_event_id, status = 2, processed_at = now()
)
DELETE FROM ${schema}.wh_perspective_events WHERE work_id = ANY($10::uuid[])`

interface Row {
  readonly kind: number
  readonly work_id: string | null
  readonly stream_id: string
  readonly perspective_name: "counter" | "summary"
  readonly event_id: string | null
  readonly payload: Domain.Payload | null
}

/** One loop: cycles until its slice is empty. Returns the number of work rows it completed. */
const loop = async (db: pg.Pool, loops: number, k: number, batchRows: number) => {
  const client = await db.connect()
  let done = 0
  try {
    for (;;) {
      const rows = (await client.query<Row>(claimAndFetch, [loops, k, batchRows])).rows
      if (rows.length === 0) return done
      const models = new Map<string, unknown>()
      const groups = new Map<string, Array<Row>>()
      for (const r of rows) {
        const key = `${r.perspective_name}|${r.stream_id}`
        if (r.kind === 1) models.set(key, r.payload)
        else (groups.get(key) ?? groups.set(key, []).get(key)!).push(r)
      }
      const out = {
        counter: { ids: [] as Array<string>, data: [] as Array<string>, applied: [] as Array<number> },
        summary: { ids: [] as Array<string>, data: [] as Array<string>, applied: [] as Array<number> }
      }
      const cursors = { s: [] as Array<string>, p: [] as Array<string>, l: [] as Array<string> }
      const workIds: Array<string> = []
      for (const [key, list] of groups) {
        const { perspective_name: name, stream_id: stream } = list[0]!
        let model: unknown = models.get(key) ?? (name === "counter" ? Domain.counterInitial : Domain.summaryInitial)
        for (const r of list) {
          model =
            name === "counter"
              ? Domain.foldCounter(model as Domain.Counter, r.payload!)
              : Domain.foldSummary(model as Domain.Summary, r.payload!)
          workIds.push(r.work_id!)
        }
        out[name].ids.push(stream)
        out[name].data.push(JSON.stringify(model))
        out[name].applied.push(list.length)
        cursors.s.push(stream)
        cursors.p.push(name)
        cursors.l.push(list.at(-1)!.event_id!)
      }
      await client.query(commit, [
        out.counter.ids,
        out.counter.data,
        out.counter.applied,
        out.summary.ids,
        out.summary.data,
        out.summary.applied,
        cursors.s,
        cursors.p,
        cursors.l,
        workIds
      ])
      done += workIds.length
    }
  } finally {
    client.release()
  }
}

/**
 * Processes everything pending with `loops` concurrent loops. `batchRows` oldest work rows pick the streams of a
 * cycle (all their pending rows are then taken). Returns start/end `performance.now()` times.
 */
export const run = async (db: pg.Pool, loops: number, batchRows = 600) => {
  const start = performance.now()
  const done = await Promise.all(Array.from({ length: loops }, (_, k) => loop(db, loops, k, batchRows)))
  return { start, end: performance.now(), workRows: done.reduce((a, b) => a + b, 0) }
}

/** The statements, for EXPLAIN in the profile step. */
export const statements = { claimAndFetch, commit }

/** The read-model tables, as `PgPerspectiveStore` creates them (the baseline runs without the pipeline). */
export const createModelTables = async (db: pg.Pool) => {
  for (const name of ["counter", "summary"]) {
    await db.query(`CREATE TABLE IF NOT EXISTS ${schema}.wh_per_${name} (
      id uuid PRIMARY KEY, data jsonb NOT NULL, metadata jsonb NOT NULL DEFAULT '{}'::jsonb, scope jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), version bigint NOT NULL DEFAULT 1)`)
  }
}
