/**
 * Peer: pg-boss 10.4.2 (11+ needs Node 22) with a `singleton` queue and `singletonKey` = the stream id, so at most
 * one job per stream is active. One job per event; a worker fetches batches (at most one job per key per batch),
 * folds each job's event into both read models (jobs of a batch in parallel: they are of different streams).
 *
 * Jobs are inserted with ids that ascend in event order: pg-boss orders by (priority, created_on, id), and jobs
 * of one insert share created_on.
 */
import PgBoss from "pg-boss"
import type pg from "pg"
import * as Domain from "../Domain.js"
import * as ReadModels from "./ReadModels.js"

const queue = "project"

export const setup = async (url: string, db: pg.Pool) => {
  const boss = new PgBoss({ connectionString: url, schema: "pgboss", supervise: false, schedule: false, migrate: true, max: 4 })
  boss.on("error", () => undefined)
  await boss.start()
  await boss.createQueue(queue, { name: queue, policy: "singleton" })
  await boss.stop({ graceful: false, wait: true })
  await ReadModels.create(db)
}

export const load = async (db: pg.Pool, from: number, to: number, streams: number) => {
  const chunk = 20_000
  for (let start = from; start < to; start += chunk) {
    const end = Math.min(to, start + chunk)
    await db.query(`INSERT INTO pgboss.job (id, name, data, singleton_key, policy)
      SELECT ${Domain.sql.eventId("i", Domain.baseMs)}, '${queue}', jsonb_build_object('accountId', st::text, 'amount', am, 'seq', sq), st::text, 'singleton'
      FROM (SELECT i, ${Domain.sql.stream("i", streams)} AS st, ${Domain.sql.seq("i", streams)} AS sq, ${Domain.sql.amount("i")} AS am
            FROM generate_series(${start}::bigint, ${end - 1}::bigint) i) g ORDER BY i`)
  }
}

export interface Options {
  readonly workers: number
  readonly batchSize: number
  readonly pollingIntervalSeconds: number
}

export const defaults: Options = { workers: 2, batchSize: 100, pollingIntervalSeconds: 0.5 }

export const process = async (url: string, db: pg.Pool, events: number, options: Options = defaults) => {
  const boss = new PgBoss({ connectionString: url, schema: "pgboss", supervise: false, schedule: false, migrate: false, max: 12 })
  boss.on("error", () => undefined)
  let first = Number.POSITIVE_INFINITY
  let last = 0
  let completed = 0
  let resolveDone!: () => void
  const done = new Promise<void>((resolve) => (resolveDone = resolve))
  await boss.start()
  const handler = async (jobs: Array<PgBoss.Job<Domain.Payload>>) => {
    first = Math.min(first, performance.now())
    await Promise.all(jobs.map(({ data: e }) => ReadModels.applyOne(db, e)))
  }
  for (let k = 0; k < options.workers; k++) {
    await boss.work<Domain.Payload>(
      queue,
      { batchSize: options.batchSize, pollingIntervalSeconds: options.pollingIntervalSeconds },
      handler
    )
  }
  // Completion is recorded by pg-boss after the handler returns (not awaited by its worker): poll the job table.
  const poll = setInterval(() => {
    void db.query<{ n: string }>(`SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'`, [queue]).then(
      ({ rows }) => {
        const n = Number(rows[0]!.n)
        if (n > completed) last = performance.now()
        completed = n
        if (completed >= events) resolveDone()
      },
      () => undefined
    )
  }, 20)
  await done
  clearInterval(poll)
  await boss.stop({ graceful: false, wait: true })
  return { start: first, end: last }
}
