/**
 * What a database's sessions do, seen from outside (scenario t): every 50 ms, `pg_stat_activity` of one database,
 * read over a connection to another database (the server URL's), so the sampler's own statements never count in
 * the database it watches.
 * - Connections: the peak number of sessions per `application_name`, per labelled part of the run. Client backends
 *   only: a parallel worker (a VACUUM's index vacuuming uses up to 2) shows in `pg_stat_activity` with its leader's
 *   application name and query, but it is no connection (it counts against `max_worker_processes`, not
 *   `max_connections`); counted, it made a worker process's peak 12 sessions in bench t where its pools hold 10.
 * - Statements: while counting, the distinct `(pid, query_start)` pairs seen per `application_name` — each is a
 *   statement that started; one that starts and ends between two samples is missed, so it is a lower bound.
 * - Transactions: `xact_commit + xact_rollback` of `pg_stat_database` for the database (every transaction of every
 *   session, whatever its length; backends flush these counters at most once a second, so a window's edges are
 *   off by at most a second's worth).
 */
import pg from "pg"

export interface Sampler {
  /** Names the part of the run the next samples belong to. */
  readonly part: (label: string) => void
  /** Peak sessions per application name in each part. */
  readonly peaks: () => Record<string, Record<string, number>>
  /** Starts counting statements (distinct `(pid, query_start)`), per application name. */
  readonly countStatements: () => void
  /** Stops counting and returns the statements seen per application name since `countStatements`. */
  readonly statements: () => Record<string, number>
  /** `xact_commit + xact_rollback` of the database now. */
  readonly transactions: () => Promise<number>
  readonly stop: () => Promise<void>
}

export const start = async (serverUrl: string, database: string, everyMs = 50): Promise<Sampler> => {
  const client = new pg.Client({ connectionString: serverUrl, application_name: "bench-sampler" })
  client.on("error", () => undefined)
  await client.connect()
  let label = "start"
  const peaks: Record<string, Record<string, number>> = {}
  let seen: Map<string, Set<string>> | undefined
  /** The statements already started when counting began (not counted). */
  let before: Set<string> | undefined
  let running = true
  let busy = Promise.resolve()
  /** One statement at a time on the sampler's connection. */
  let chain: Promise<unknown> = Promise.resolve()
  const exclusive = <A>(f: () => Promise<A>): Promise<A> => {
    const next = chain.then(f)
    chain = next.catch(() => undefined)
    return next
  }
  const sample = async () => {
    const rows = (
      await client.query<{ pid: number; app: string; query_start: Date | null; state: string | null; age: string; query: string }>(
        "SELECT pid, application_name AS app, query_start, state, (now() - backend_start)::text AS age, left(query, 90) AS query FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
        [database]
      )
    ).rows
    const counts = new Map<string, number>()
    if (seen !== undefined && before === undefined) {
      before = new Set(rows.flatMap((r) => (r.query_start === null ? [] : [`${r.pid}@${r.query_start.getTime()}`])))
    }
    for (const r of rows) {
      counts.set(r.app, (counts.get(r.app) ?? 0) + 1)
      if (seen !== undefined && r.query_start !== null) {
        const key = `${r.pid}@${r.query_start.getTime()}`
        if (before === undefined) continue
        if (before.has(key)) continue
        const set = seen.get(r.app) ?? seen.set(r.app, new Set()).get(r.app)!
        set.add(key)
      }
    }
    // `BENCH_TRACE_SESSIONS=<n>` (diagnosis only): print the sessions of any application holding more than n.
    const over = Number(process.env.BENCH_TRACE_SESSIONS ?? Number.NaN)
    for (const [app, n] of counts)
      if (n > over && app.startsWith("bench-tenants-w"))
        console.error(
          `[sessions ${label}] ${app} ${n}:\n${rows
            .filter((r) => r.app === app)
            .map((r) => `  ${r.pid} ${r.state} age ${r.age} ${r.query.replace(/\s+/g, " ")}`)
            .join("\n")}`
        )
    const part = peaks[label] ?? {}
    peaks[label] = part
    for (const [app, n] of counts) part[app] = Math.max(part[app] ?? 0, n)
  }
  const loop = async () => {
    while (running) {
      busy = exclusive(sample).catch(() => undefined)
      await busy
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  }
  void loop()
  return {
    part: (next) => {
      label = next
    },
    peaks: () => peaks,
    countStatements: () => {
      seen = new Map()
      before = undefined
    },
    statements: () => {
      const out: Record<string, number> = {}
      for (const [app, set] of seen ?? new Map<string, Set<string>>()) out[app] = set.size
      seen = undefined
      return out
    },
    transactions: async () => {
      const rows = (
        await exclusive(() =>
          client.query<{ n: string }>("SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1", [
            database
          ])
        )
      ).rows
      return Number(rows[0]?.n ?? Number.NaN)
    },
    stop: async () => {
      running = false
      await busy
      await client.end().catch(() => undefined)
    }
  }
}
