/**
 * The tenant catalog of a service: a tenant is a Postgres schema, listed in `<schema>_tenants.wh_tenants`
 * (`catalogSchema`) beside the service's own schema, which is the tenant `default`. Adding a tenant creates and
 * migrates its schema; removing one drops it; `migrate` brings every tenant's schema to the shipped migrations.
 * Everything here is idempotent and resumable: an add that died half-way is finished by the next add of that id,
 * a `migrate` run again skips the tenants done (one statement each).
 *
 * **Where it lives on Citus**: the catalog schema is created with schema-based sharding off, so it stays a local
 * schema of the coordinator; each tenant schema is created with the session's setting (a distributed schema when
 * `citus.enable_schema_based_sharding` is on), so one tenant's statements go to one node.
 *
 * **Gotchas**
 * - Ids become schema names (`prefix` + id): they are validated (`InvalidTenantId`) before anything is written.
 * - Adds, removes and migrations of one service run one at a time (a transaction-scoped advisory lock per tenant).
 * - `changes` wakes on every add and remove (channel `wh_tenants`), in this process and others.
 * - On Citus, `move` blocks the tenant's writes while its schema is copied (see {@link Shape.move}).
 *
 * @since 0.6.0
 */
import { Clock, Context, Effect, Layer, Option, type Stream } from "effect"
import * as Identifier from "./internal/identifier.js"
import * as MigrationLock from "./internal/migrationLock.js"
import * as TenantId from "./internal/tenants/tenantId.js"
import { PgClient } from "./PgClient.js"
import * as PgMigrator from "./PgMigrator.js"
import { type MigrationError, PostgresConfigError, type PostgresError } from "./PostgresError.js"
import * as MigrationSql from "./sql/migrations.js"
import * as SchemaPlacement from "./sql/schemaPlacement.js"
import * as Sql from "./sql/tenants.js"
import { type InvalidTenantId, TenantConflict, TenantMoveRefused, TenantRemovalRefused, UnknownTenant } from "./TenantError.js"

/**
 * The id of the tenant whose schema is the service's own (the client's schema): a single-tenant service is this
 * tenant alone.
 *
 * @category constants
 * @since 0.6.0
 */
export const defaultTenant = "default"

/**
 * @category models
 * @since 0.6.0
 */
export interface Options {
  /** Prepended to a tenant id to name its schema; default `tenant_`. A valid identifier of at most 20 characters. */
  readonly prefix?: string | undefined
  /** The schema of the catalog; default `<service schema>_tenants`. */
  readonly catalogSchema?: string | undefined
}

/**
 * The options as {@link decodeOptions} leaves them.
 *
 * @category models
 * @since 0.6.0
 */
export interface Decoded {
  readonly prefix: string
  readonly catalogSchema: string
}

/**
 * Checks the options without connecting; `option` prefixes the names in errors (`tenants.` in the umbrella).
 *
 * @category constructors
 * @since 0.6.0
 */
export const decodeOptions = (
  options: Options | undefined,
  serviceSchema: string,
  option = ""
): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const prefix = options?.prefix ?? "tenant_"
    if (!(typeof prefix === "string" && prefix.length <= 20 && Identifier.isValid(prefix) && !prefix.startsWith("pg_"))) {
      return yield* new PostgresConfigError({
        option: `${option}prefix`,
        message: `${option}prefix must be 1 to 20 characters of a-z, 0-9 and _, starting with a letter or _, not pg_ (got ${JSON.stringify(prefix)})`
      })
    }
    const catalogSchema = yield* Identifier.validateSchema(options?.catalogSchema ?? `${serviceSchema}_tenants`, `${option}catalogSchema`)
    if (catalogSchema === serviceSchema || catalogSchema.startsWith(prefix)) {
      return yield* new PostgresConfigError({
        option: `${option}catalogSchema`,
        message: `${option}catalogSchema "${catalogSchema}" must differ from the service schema and not start with the tenant prefix "${prefix}"`
      })
    }
    return { prefix, catalogSchema }
  })

/**
 * One row of the catalog.
 *
 * @category models
 * @since 0.6.0
 */
export interface Tenant {
  readonly id: string
  readonly schema: string
  /** `provisioning` while its schema is being created and migrated, `removing` while it is dropped. */
  readonly state: "active" | "provisioning" | "removing"
  readonly createdAt: Date
  /** When `add` or `migrate` last brought its schema to the shipped migrations. */
  readonly migratedAt: Date | undefined
}

/**
 * What {@link Shape.migrate} did.
 *
 * @category models
 * @since 0.6.0
 */
export interface MigrateReport {
  readonly tenants: number
  /** Tenants that had migrations to apply (the others were current). */
  readonly migrated: ReadonlyArray<string>
  /** Tenants whose migration failed, with the error; the others were migrated (run `migrate` again to resume). */
  readonly failed: ReadonlyArray<{ readonly tenantId: string; readonly error: PostgresError | MigrationError }>
}

/**
 * Progress of {@link Shape.migrate}: called after each tenant.
 *
 * @category models
 * @since 0.6.0
 */
export type Progress = (done: number, total: number, tenantId: string) => Effect.Effect<void>

/**
 * A Citus worker node.
 *
 * @category models
 * @since 0.7.0
 */
export interface Node {
  readonly host: string
  readonly port: number
}

/**
 * What {@link Shape.move} did.
 *
 * @category models
 * @since 0.7.0
 */
export interface MoveReport {
  readonly tenantId: string
  readonly schema: string
  readonly from: Node
  readonly to: Node
  /** False when the schema was on that node already (nothing was done). */
  readonly moved: boolean
  /** How long the move took: the tenant's appends waited at most this long. */
  readonly millis: number
}

/**
 * @category models
 * @since 0.6.0
 */
export interface Shape {
  readonly serviceSchema: string
  readonly catalogSchema: string
  readonly prefix: string
  /** Checks an id (it becomes a schema name); the default tenant's id is valid. */
  readonly validate: (tenantId: unknown) => Effect.Effect<string, InvalidTenantId>
  /** The schema of a valid tenant id (the service schema for the default tenant). */
  readonly schemaOf: (tenantId: string) => string
  /** Every tenant, the default one first, then by id. */
  readonly list: Effect.Effect<ReadonlyArray<Tenant>, PostgresError>
  /** An active tenant. */
  readonly get: (tenantId: string) => Effect.Effect<Tenant, InvalidTenantId | UnknownTenant | PostgresError>
  /** Creates and migrates the tenant's schema, then lists it as active; finishes an add that died half-way. */
  readonly add: (tenantId: string) => Effect.Effect<Tenant, InvalidTenantId | TenantConflict | PostgresError | MigrationError>
  /** Drops the tenant's schema (every event and read model in it) and its catalog row; `confirm` repeats the id. */
  readonly remove: (
    tenantId: string,
    options: { readonly confirm: string }
  ) => Effect.Effect<void, InvalidTenantId | UnknownTenant | TenantRemovalRefused | PostgresError>
  /**
   * On Citus (schema-based sharding), the worker node that holds the tenant's schema; `None` on plain PostgreSQL or
   * for a schema local to the coordinator.
   */
  readonly placement: (tenantId: string) => Effect.Effect<Option.Option<Node>, InvalidTenantId | UnknownTenant | PostgresError>
  /**
   * Moves the tenant's schema to another Citus worker node while the service runs (`citus_schema_move`). Its writes
   * are blocked while its tables are copied (`block_writes`): appends wait, nothing is lost; reads go on. Citus's
   * online mode is not used: it lost acknowledged writes here (README, "Outgrowing one database"). Moving a schema
   * to the node it is on does nothing (`moved: false`).
   */
  readonly move: (
    tenantId: string,
    to: Node
  ) => Effect.Effect<MoveReport, InvalidTenantId | UnknownTenant | TenantMoveRefused | PostgresError>
  /** Migrates every tenant's schema (`concurrency` at a time, default 4), reporting progress after each. */
  readonly migrate: (options?: {
    readonly concurrency?: number
    readonly onProgress?: Progress
  }) => Effect.Effect<MigrateReport, PostgresError>
  /**
   * Wakes when tenants are added or removed, here or in another process: the id, or `undefined` once listening
   * (and after a reconnect: something may have changed).
   */
  readonly changes: Stream.Stream<string | undefined>
}

/**
 * @category services
 * @since 0.6.0
 */
export class PgTenants extends Context.Service<PgTenants, Shape>()("@whizbang/postgres/PgTenants") {}

type Row = typeof Sql.Row.Type

const toTenant = (row: Row): Tenant => ({
  id: row.tenantId,
  schema: row.schemaName,
  state: row.state,
  createdAt: row.createdAt,
  migratedAt: row.migratedAt ?? undefined
})

/**
 * Serves the catalog; the first `add` creates it (and lists the default tenant in it), so a service or a command
 * that only reads tenants writes nothing (without a catalog, the default tenant is the only one).
 *
 * @category constructors
 * @since 0.6.0
 */
export const make = (options: Decoded): Effect.Effect<Shape, PostgresError, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const serviceSchema = client.schema
    const { prefix, catalogSchema } = options
    const lock = (tenantId: string) => Sql.lock(client, { catalogSchema, tenantId })
    const notify = (tenantId: string) => Sql.notify(client, { catalogSchema, tenantId })

    // Created by the first add, not before: reading the tenants (a CLI's `--tenant`, `tenants list`) writes nothing.
    const ensureCatalog = client.withTransaction(
      Effect.gen(function* () {
        yield* lock("")
        // Coordinator-local on Citus: the catalog spans tenants, so it must not become a distributed schema.
        yield* Sql.createLocally(client)
        yield* Sql.createCatalogSchema(client, { catalogSchema })
        yield* Sql.createCatalog(client, { catalogSchema })
        yield* Sql.insertActive(client, { catalogSchema, tenantId: defaultTenant, schema: serviceSchema })
      })
    )

    const validate = (tenantId: unknown) => validateId(tenantId, prefix)
    const schemaOf = (tenantId: string) => (tenantId === defaultTenant ? serviceSchema : `${prefix}${tenantId}`)
    // Without a catalog yet there is the default tenant alone.
    const defaultRow: Row = {
      tenantId: defaultTenant,
      schemaName: serviceSchema,
      state: "active",
      createdAt: new Date(0),
      migratedAt: null
    }
    const orNoCatalog = <A>(query: Effect.Effect<A, PostgresError>, none: A) =>
      Effect.catchIf(
        query,
        (e) => e.reason._tag === "UndefinedTable" || (e.reason._tag === "Unknown" && e.reason.code === "3F000"),
        () => Effect.succeed(none)
      )
    const row = (tenantId: string) =>
      orNoCatalog(
        Effect.map(Sql.tenant(client, { catalogSchema, tenantId }), Option.getOrUndefined),
        tenantId === defaultTenant ? defaultRow : undefined
      )

    const list = Effect.map(orNoCatalog(Sql.tenants(client, { catalogSchema, defaultTenant }), [defaultRow]), (rows) => rows.map(toTenant))

    const get = (tenantId: string) =>
      Effect.flatMap(validate(tenantId), (id) =>
        Effect.flatMap(row(id), (found) =>
          found?.state === "active"
            ? Effect.succeed(toTenant(found))
            : Effect.fail(new UnknownTenant({ tenantId: id, state: found?.state }))
        )
      )

    const migrateOne = (schema: string) => Effect.provideService(PgMigrator.run, PgClient, client.forSchema(schema))

    const add = (tenantId: string) =>
      Effect.gen(function* () {
        const id = yield* validate(tenantId)
        const schema = schemaOf(id)
        yield* ensureCatalog
        yield* client.withTransaction(
          Effect.gen(function* () {
            yield* lock(id)
            const found = yield* row(id)
            if (found !== undefined && found.state !== "provisioning") {
              return yield* new TenantConflict({ tenantId: id, schema, reason: "exists" })
            }
            if (found === undefined) {
              const taken = yield* MigrationSql.schemaExists(client, { schema })
              if (taken > 0) return yield* new TenantConflict({ tenantId: id, schema, reason: "schemaTaken" })
              yield* Sql.insertProvisioning(client, { catalogSchema, tenantId: id, schema })
            }
          })
        )
        yield* migrateOne(schema)
        const active = yield* client.withTransaction(Effect.tap(Sql.activate(client, { catalogSchema, tenantId: id }), () => notify(id)))
        yield* Effect.logInfo("tenant added", { tenant: id, schema })
        return toTenant(active)
      })

    const remove = (tenantId: string, options: { readonly confirm: string }) =>
      Effect.gen(function* () {
        const id = yield* validate(tenantId)
        if (id === defaultTenant) return yield* new TenantRemovalRefused({ tenantId: id, reason: "default" })
        if (options.confirm !== id) return yield* new TenantRemovalRefused({ tenantId: id, reason: "notConfirmed" })
        const found = yield* row(id)
        if (found === undefined) return yield* new UnknownTenant({ tenantId: id, state: undefined })
        // First out of service everywhere (the fleets let go of it on the notification), then dropped.
        yield* client.withTransaction(Effect.andThen(Sql.markRemoving(client, { catalogSchema, tenantId: id }), notify(id)))
        yield* client
          .withTransaction(
            Effect.gen(function* () {
              yield* lock(id)
              yield* MigrationLock.take(client, found.schemaName)
              yield* Sql.dropSchema(client, { schema: found.schemaName })
              yield* Sql.deleteTenant(client, { catalogSchema, tenantId: id })
              yield* notify(id)
            })
          )
          .pipe(
            // A statement of the tenant's services still in flight (a fleet lets go on the notification, a moment
            // later) can lock the schema's tables in another order than DROP does: the deadlock's victim is tried
            // again, by then the services have let go.
            Effect.retry({
              while: (e) => (e as { readonly _tag?: string })._tag === "PostgresError" && (e as PostgresError).reason._tag === "Deadlock",
              times: 5
            })
          )
        yield* Effect.logInfo("tenant removed", { tenant: id, schema: found.schemaName })
      })

    const migrate = (migrateOptions?: { readonly concurrency?: number; readonly onProgress?: Progress }) =>
      Effect.gen(function* () {
        const tenants = (yield* list).filter((t) => t.state !== "removing")
        const migrated: Array<string> = []
        const failed: Array<MigrateReport["failed"][number]> = []
        let done = 0
        yield* Effect.forEach(
          tenants,
          (tenant) =>
            migrateOne(tenant.schema).pipe(
              Effect.tap((report) =>
                report.applied.length > 0
                  ? Effect.andThen(
                      Effect.sync(() => migrated.push(tenant.id)),
                      orNoCatalog(Sql.markMigrated(client, { catalogSchema, tenantId: tenant.id }), undefined)
                    )
                  : Effect.void
              ),
              Effect.catch((error) => Effect.sync(() => void failed.push({ tenantId: tenant.id, error }))),
              Effect.andThen(
                Effect.suspend(() => {
                  done += 1
                  return migrateOptions?.onProgress?.(done, tenants.length, tenant.id) ?? Effect.void
                })
              )
            ),
          { concurrency: Math.max(1, migrateOptions?.concurrency ?? 4), discard: true }
        )
        return { tenants: tenants.length, migrated, failed }
      })

    const placement = (tenantId: string) =>
      Effect.gen(function* () {
        const tenant = yield* get(tenantId)
        const { citus } = yield* SchemaPlacement.citus(client)
        return citus ? yield* SchemaPlacement.placement(client, { schema: tenant.schema }) : Option.none<Node>()
      })

    const move = (tenantId: string, to: Node) =>
      Effect.gen(function* () {
        const tenant = yield* get(tenantId)
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

    const changes = client.forSchema(catalogSchema).listen("wh_tenants")

    return PgTenants.of({
      serviceSchema,
      catalogSchema,
      prefix,
      validate,
      schemaOf,
      list,
      get,
      add,
      remove,
      placement,
      move,
      migrate,
      changes
    })
  })

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.6.0
 */
export const layerDecoded = (options: Decoded): Layer.Layer<PgTenants, PostgresError, PgClient> => Layer.effect(PgTenants, make(options))

/**
 * Checks a tenant id without connecting (`InvalidTenantId` says why it cannot be one); `prefix` is the service's
 * tenant schema prefix (default `tenant_`).
 *
 * @category validation
 * @since 0.6.0
 */
export const validateId = (tenantId: unknown, prefix = "tenant_"): Effect.Effect<string, InvalidTenantId> =>
  tenantId === defaultTenant ? Effect.succeed(defaultTenant) : TenantId.validate(tenantId, prefix)

/**
 * @category layers
 * @since 0.6.0
 */
export const layer = (options?: Options): Layer.Layer<PgTenants, PostgresError | PostgresConfigError, PgClient> =>
  Layer.effect(
    PgTenants,
    Effect.flatMap(PgClient, (client) => Effect.flatMap(decodeOptions(options, client.schema), make))
  )
