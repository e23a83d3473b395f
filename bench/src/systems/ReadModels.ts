/**
 * Plain read-model tables for the peer libraries that have no read-model store of their own
 * (graphile-worker, pg-boss): `rm_counter` and `rm_summary`, one jsonb document per stream.
 */
import type pg from "pg"
import * as Domain from "../Domain.js"

export const create = async (db: pg.Pool) => {
  for (const name of ["counter", "summary"]) {
    await db.query(`CREATE TABLE IF NOT EXISTS rm_${name} (id text PRIMARY KEY, data jsonb NOT NULL, version int NOT NULL)`)
  }
}

/** Loads both models of a stream in one round trip. */
export const get = async (db: pg.PoolClient | pg.Pool, stream: string) => {
  const rows = (
    await db.query<{ name: string; data: unknown }>(
      `SELECT 'counter' AS name, data FROM rm_counter WHERE id = $1 UNION ALL SELECT 'summary', data FROM rm_summary WHERE id = $1`,
      [stream]
    )
  ).rows
  return { counter: rows.find((r) => r.name === "counter")?.data, summary: rows.find((r) => r.name === "summary")?.data }
}

/** Writes both models of a stream in one statement. */
export const put = (db: pg.PoolClient | pg.Pool, stream: string, counter: unknown, summary: unknown) =>
  db.query(
    `WITH c AS (
      INSERT INTO rm_counter (id, data, version) VALUES ($1, $2, 1) ON CONFLICT (id) DO UPDATE SET data = excluded.data, version = rm_counter.version + 1)
    INSERT INTO rm_summary (id, data, version) VALUES ($1, $3, 1) ON CONFLICT (id) DO UPDATE SET data = excluded.data, version = rm_summary.version + 1`,
    [stream, JSON.stringify(counter), JSON.stringify(summary)]
  )

export const read = async (db: pg.Pool) => {
  const one = async (name: string) =>
    new Map((await db.query<{ id: string; data: unknown }>(`SELECT id, data FROM rm_${name}`)).rows.map((r) => [r.id, r.data]))
  return { counter: await one("counter"), summary: await one("summary") }
}

/** Applies one event to both read models (read, fold, write): what a peer's job handler does per event. */
export const applyOne = async (db: pg.Pool, e: Domain.Payload) => {
  const client = await db.connect()
  try {
    const m = await get(client, e.accountId)
    await put(
      client,
      e.accountId,
      Domain.foldCounter((m.counter ?? Domain.counterInitial) as Domain.Counter, e),
      Domain.foldSummary((m.summary ?? Domain.summaryInitial) as Domain.Summary, e)
    )
  } finally {
    client.release()
  }
}
