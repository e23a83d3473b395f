/**
 * Peer: graphile-worker 0.16.6 (0.17+ needs Node 22), the usual way — one job per event, the job's
 * `queue_name` = the stream id so a stream's jobs run one at a time in order, the task loads both read models,
 * folds the event and writes both back.
 */
import { Logger, run, runMigrations } from "graphile-worker"
import type pg from "pg"
import * as Domain from "../Domain.js"
import * as ReadModels from "./ReadModels.js"

const quiet = new Logger(() => () => undefined)

export const setup = async (url: string, db: pg.Pool) => {
  await runMigrations({ connectionString: url, logger: quiet })
  await ReadModels.create(db)
}

/** Jobs for events `[from, to)`, added in event order (ids ascend with i). */
export const load = async (db: pg.Pool, from: number, to: number, streams: number) => {
  const chunk = 20_000
  for (let start = from; start < to; start += chunk) {
    const end = Math.min(to, start + chunk)
    await db.query(`SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
      SELECT ROW('project', json_build_object('accountId', st::text, 'amount', am, 'seq', sq), st::text, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
      FROM (SELECT i, ${Domain.sql.stream("i", streams)} AS st, ${Domain.sql.seq("i", streams)} AS sq, ${Domain.sql.amount("i")} AS am
            FROM generate_series(${start}::bigint, ${end - 1}::bigint) i) g ORDER BY i))`)
  }
}

/** Runs the worker until `events` jobs completed; returns first job start / last job completion times. */
export const process = async (url: string, db: pg.Pool, events: number, concurrency = 10) => {
  let first = Number.POSITIVE_INFINITY
  let last = 0
  let completed = 0
  let failed = 0
  let resolveDone!: () => void
  const done = new Promise<void>((resolve) => (resolveDone = resolve))
  const runner = await run({
    connectionString: url,
    concurrency,
    maxPoolSize: concurrency + 2,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    taskList: {
      project: (payload) => ReadModels.applyOne(db, payload as Domain.Payload)
    }
  })
  runner.events.on("job:start", () => void (first = Math.min(first, performance.now())))
  runner.events.on("job:failed", () => void failed++)
  runner.events.on("job:complete", ({ error }) => {
    if (error !== undefined && error !== null) return
    completed++
    last = performance.now()
    if (completed >= events) resolveDone()
  })
  await done
  await runner.stop()
  return { start: first, end: last, failed }
}
