/**
 * Where a schema lives on a Citus cluster with schema-based sharding, and moving it to another worker node
 * (`PgTenants.placement` / `PgTenants.move`, `whizbang tenants move`). On plain PostgreSQL every schema is local:
 * {@link citus} says so and nothing else here runs.
 *
 * The move blocks the schema's writes while Citus copies it (`shard_transfer_mode => 'block_writes'`): Citus 13.2.2's
 * online mode (`force_logical`, the default of `citus_schema_move` and of the rebalancer for tables with a primary
 * key) lost acknowledged writes made during its final switch on this project's test cluster — an append Whizbang had
 * confirmed, and plain INSERTs from pgbench without Whizbang (README, "Outgrowing one database"). With
 * `block_writes` appends wait for the copy instead, and none was lost.
 */
import { Schema } from "effect"
import * as Operation from "../internal/operation.js"

/**
 * Whether the database has the `citus` extension (the other operations here read Citus's catalogs, which plain
 * PostgreSQL does not have: run them only when it does).
 *
 * @category operations
 * @since 0.7.0
 */
export const citus = Operation.single({
  name: "schemaPlacement.citus",
  Row: Schema.Struct({ citus: Schema.Boolean }),
  sql: "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"
})

/**
 * The worker node that holds the schema's tables; no row when the schema is not a distributed schema (local to
 * the coordinator, or absent).
 *
 * @category operations
 * @since 0.7.0
 */
export const placement = Operation.findOne({
  name: "schemaPlacement.placement",
  Row: Schema.Struct({ host: Schema.String, port: Schema.Number }),
  params: (r: { readonly schema: string }) => [r.schema],
  sql: `SELECT n.nodename::text AS host, n.nodeport::int AS port
FROM pg_dist_schema s
JOIN pg_dist_partition dp ON dp.colocationid = s.colocationid
JOIN pg_dist_shard sh ON sh.logicalrelid = dp.logicalrelid
JOIN pg_dist_placement pl ON pl.shardid = sh.shardid
JOIN pg_dist_node n ON n.groupid = pl.groupid
WHERE s.schemaid = (SELECT oid FROM pg_namespace WHERE nspname = $1)
LIMIT 1`
})

/**
 * The active primary worker nodes that may hold shards (where a schema can be moved to).
 *
 * @category operations
 * @since 0.7.0
 */
export const workerNodes = Operation.findAll({
  name: "schemaPlacement.workerNodes",
  Row: Schema.Struct({ host: Schema.String, port: Schema.Number }),
  sql: `SELECT nodename::text AS host, nodeport::int AS port FROM pg_dist_node
WHERE noderole = 'primary' AND isactive AND shouldhaveshards AND groupid <> 0 ORDER BY nodename, nodeport`
})

/**
 * Moves the distributed schema to the worker node, its writes blocked while its tables are copied; returns when
 * the schema is there.
 *
 * @category operations
 * @since 0.7.0
 */
export const move = Operation.void({
  name: "schemaPlacement.move",
  params: (r: { readonly schema: string; readonly host: string; readonly port: number }) => [r.schema, r.host, r.port],
  sql: `SELECT citus_schema_move(n.oid::regnamespace, $2::text, $3::int, shard_transfer_mode => 'block_writes')
FROM pg_namespace n WHERE n.nspname = $1`
})
