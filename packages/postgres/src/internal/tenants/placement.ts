/**
 * Where a tenant's schema lives on Citus (schema-based sharding), and moving it to another worker node while the
 * service runs (`citus_schema_move`, writes blocked while its tables are copied).
 *
 * @internal
 */
import { Clock, Effect, Option } from "effect"
import type { MoveReport, Node } from "../../PgTenants.js"
import type { PostgresError } from "../../PostgresError.js"
import * as SchemaPlacement from "../../sql/schemaPlacement.js"
import { type InvalidTenantId, TenantMoveRefused, type UnknownTenant } from "../../TenantError.js"
import type { Catalog } from "./catalog.js"

/** See `PgTenants.placement`. */
export const placement = (
  catalog: Catalog,
  tenantId: string
): Effect.Effect<Option.Option<Node>, InvalidTenantId | UnknownTenant | PostgresError> =>
  Effect.gen(function* () {
    const { client } = catalog
    const tenant = yield* catalog.get(tenantId)
    const { citus } = yield* SchemaPlacement.citus(client)
    return citus ? yield* SchemaPlacement.placement(client, { schema: tenant.schema }) : Option.none<Node>()
  })

/** See `PgTenants.move`. */
export const move = (
  catalog: Catalog,
  tenantId: string,
  to: Node
): Effect.Effect<MoveReport, InvalidTenantId | UnknownTenant | TenantMoveRefused | PostgresError> =>
  Effect.gen(function* () {
    const { client } = catalog
    const tenant = yield* catalog.get(tenantId)
    const target = `${to.host}:${to.port}`
    const refuse = (reason: TenantMoveRefused["reason"], nodes: ReadonlyArray<Node> = []) =>
      new TenantMoveRefused({
        tenantId: tenant.id,
        schema: tenant.schema,
        reason,
        target,
        nodes: nodes.map((n) => `${n.host}:${n.port}`)
      })
    const { citus } = yield* SchemaPlacement.citus(client)
    if (!citus) return yield* refuse("notCitus")
    const from = yield* SchemaPlacement.placement(client, { schema: tenant.schema })
    if (Option.isNone(from)) return yield* refuse("notDistributed")
    const nodes = yield* SchemaPlacement.workerNodes(client)
    const isTarget = (n: Node) => n.host === to.host && n.port === to.port
    if (!nodes.some(isTarget)) return yield* refuse("unknownNode", nodes)
    const report = { tenantId: tenant.id, schema: tenant.schema, from: from.value, to }
    if (isTarget(from.value)) return { ...report, moved: false, millis: 0 }
    const started = yield* Clock.currentTimeMillis
    yield* Effect.logInfo("tenant move started: its appends wait until its tables are copied", {
      tenant: tenant.id,
      schema: tenant.schema,
      from: `${from.value.host}:${from.value.port}`,
      to: target
    })
    yield* SchemaPlacement.move(client, { schema: tenant.schema, host: to.host, port: to.port })
    const millis = (yield* Clock.currentTimeMillis) - started
    yield* Effect.logInfo("tenant moved", { tenant: tenant.id, schema: tenant.schema, to: target, millis })
    return { ...report, moved: true, millis }
  })
