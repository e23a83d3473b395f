/**
 * Where a part of a run spends the server's time, statement by statement (diagnosis only, `BENCH_STATEMENT_COSTS=1`):
 * `pg_stat_statements`' calls, execution and planning time over the part, per unit of work (a tenant in scenario t).
 * Statements of different schemas are one statement here: quoted schema names are replaced by `S`. Needs a server
 * with `pg_stat_statements` in `shared_preload_libraries` (point `DATABASE_URL` at one; the embedded server has not
 * loaded it); without it, says so and measures nothing. Resets the database's statistics at the start.
 */
import pg from "pg"

export interface Window {
  /** The part's statements, most server time first: `top` of them, figures divided by `units`. */
  readonly finish: (units: number, top?: number) => Promise<ReadonlyArray<string>>
}

interface Row {
  readonly statement: string
  readonly calls: string
  readonly exec_ms: number
  readonly plan_ms: number
}

/** Starts a window over `url`'s database, or returns `undefined` (not asked for, or no `pg_stat_statements`). */
export const start = async (url: string, log: (line: string) => void): Promise<Window | undefined> => {
  if (process.env.BENCH_STATEMENT_COSTS !== "1") return undefined
  const client = new pg.Client({ connectionString: url, application_name: "bench-statement-costs" })
  await client.connect()
  try {
    await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    await client.query("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)")
  } catch (error) {
    log(`statement costs: not measured (${error instanceof Error ? error.message : String(error)})`)
    await client.end()
    return undefined
  }
  return {
    finish: async (units, top = 12) => {
      try {
        const { rows } = await client.query<Row>(
          `SELECT left(regexp_replace(regexp_replace(query, '\\s+', ' ', 'g'), '"[^"]+"\\.', 'S.', 'g'), 90) AS statement,
                  sum(calls)::text AS calls, sum(total_exec_time)::float8 AS exec_ms, sum(total_plan_time)::float8 AS plan_ms
           FROM pg_stat_statements
           WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
           GROUP BY 1 ORDER BY sum(total_exec_time) + sum(total_plan_time) DESC LIMIT $1`,
          [top]
        )
        const per = (n: number) => (n / units).toFixed(2).padStart(7)
        return [
          `statement costs per unit (${units}): calls, execution ms, planning ms (server time, so waits included)`,
          ...rows.map((r) => `${per(Number(r.calls))} ${per(r.exec_ms)} ${per(r.plan_ms)}  ${r.statement}`)
        ]
      } finally {
        await client.end()
      }
    }
  }
}
