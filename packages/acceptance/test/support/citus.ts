// The Citus tier's cluster: found at WHIZBANG_CITUS_URL, else at the coordinator `../shared/citus/cluster.sh start`
// runs (127.0.0.1:5701). Each test uses service schemas of its own in the coordinator's database, made distributed
// schemas by the migrator (the database has `citus.enable_schema_based_sharding` on, as the README tells users to set),
// and spread over both worker nodes; they are dropped with the test's scope.
import { randomUUID } from "node:crypto"
import { Cause, Duration, Effect, type Scope } from "effect"
import { PgClient } from "whizbang"

export const url = process.env.WHIZBANG_CITUS_URL ?? "postgres://postgres@127.0.0.1:5701/postgres"

/** One statement on the coordinator, outside any service (a client of its own, closed after it). */
export const query = <Row extends object>(sql: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) => client.query<Row>(sql, params)).pipe(
    Effect.provide(PgClient.layer({ url, schema: "public", maxConnections: 1, connectTimeout: Duration.millis(1_500) })),
    Effect.orDie
  )

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** `undefined` when a Citus coordinator with 2+ worker nodes answers at {@link url}, else why the tier is skipped. */
export const unavailable = (): Promise<string | undefined> =>
  Effect.runPromise(
    query<{ citus: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus").pipe(
      Effect.flatMap(([row]) =>
        row?.citus
          ? Effect.map(
              query<{ workers: number }>(
                "SELECT count(*)::int AS workers FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0"
              ),
              ([w]) =>
                (w?.workers ?? 0) >= 2 ? undefined : `the coordinator at ${url} has ${w?.workers ?? 0} worker node(s); the tier needs 2`
            )
          : Effect.succeed(`no citus extension in the database at ${url}`)
      ),
      Effect.catchCause((cause) =>
        Effect.succeed(
          `no Citus coordinator answers at ${url} (${reason(Cause.squash(cause))}); start one with ../shared/citus/cluster.sh start or set WHIZBANG_CITUS_URL`
        )
      )
    )
  )

/** The README's one-time set-up of the database: schemas created from now on are distributed schemas. */
export const enableSchemaSharding = Effect.asVoid(
  query(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET citus.enable_schema_based_sharding = on', current_database()); END $$`)
)

/** `n` fresh schema names, dropped (CASCADE) when the scope closes. */
export const schemas = (prefix: string, n: number): Effect.Effect<ReadonlyArray<string>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const run = randomUUID().replaceAll("-", "").slice(0, 8)
      return Array.from({ length: n }, (_, i) => `${prefix}_${run}_${i}`)
    }),
    (names) => Effect.forEach(names, (name) => query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`), { discard: true })
  )

export interface Placement {
  readonly schema: string
  readonly port: number
}

/** The worker node of each distributed schema of `names` (absent: not a distributed schema). */
export const placements = (names: ReadonlyArray<string>) =>
  query<Placement>(
    `SELECT s.schema_name::text AS schema, min(sh.nodeport)::int AS port
       FROM citus_schemas s JOIN citus_shards sh ON sh.colocation_id = s.colocation_id
      WHERE s.schema_name::text = ANY($1::text[]) GROUP BY 1 ORDER BY 1`,
    [names]
  )

/** The coordinator's port (a node that holds no shards). */
export const coordinatorPort = Number(new URL(url).port || 5432)

/** The host name a worker node is registered under (`pg_dist_node.nodename`). */
export const hostOf = (port: number) =>
  Effect.map(
    query<{ host: string }>("SELECT nodename::text AS host FROM pg_dist_node WHERE nodeport = $1 AND groupid <> 0", [port]),
    (rows) => rows[0]!.host
  )

/** The ports of the worker nodes. */
export const workerPorts = Effect.map(
  query<{ port: number }>(
    "SELECT nodeport::int AS port FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0 ORDER BY nodeport"
  ),
  (rows) => rows.map((r) => r.port)
)

/**
 * Moves a distributed schema to the worker node at `port` (`citus_schema_move`), its writes blocked while it copies:
 * the README's `block_writes` (the online `force_logical` lost acknowledged writes here; README, "Outgrowing one
 * database").
 */
export const move = (schema: string, port: number) =>
  query(
    "SELECT citus_schema_move($1::regnamespace, host, port, shard_transfer_mode => 'block_writes') FROM (SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE nodeport = $2) n",
    [schema, port]
  )

/** Spreads `names` (distributed schemas) over the worker nodes alternately, moving those on the wrong node. */
export const spread = (names: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const ports = yield* workerPorts
    const now = yield* placements(names)
    for (const [i, name] of names.entries()) {
      const want = ports[i % ports.length]!
      if (now.find((p) => p.schema === name)?.port !== want) yield* move(name, want)
    }
    return yield* placements(names)
  })
