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
import { Context, Effect, Layer, type Option, type Stream } from "effect"
import * as Identifier from "./internal/identifier.js"
import * as Catalog from "./internal/tenants/catalog.js"
import * as Migration from "./internal/tenants/migration.js"
import * as Placement from "./internal/tenants/placement.js"
import * as Provisioning from "./internal/tenants/provisioning.js"
import * as TenantId from "./internal/tenants/tenantId.js"
import { PgClient } from "./PgClient.js"
import { type MigrationError, PostgresConfigError, type PostgresError } from "./PostgresError.js"
import type { InvalidTenantId, TenantConflict, TenantMoveRefused, TenantRemovalRefused, UnknownTenant } from "./TenantError.js"

/**
 * The id of the tenant whose schema is the service's own (the client's schema): a single-tenant service is this
 * tenant alone.
 *
 * @category constants
 * @since 0.6.0
 */
export const defaultTenant: "default" = TenantId.defaultTenant

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

/**
 * Serves the catalog; the first `add` creates it (and lists the default tenant in it), so a service or a command
 * that only reads tenants writes nothing (without a catalog, the default tenant is the only one).
 *
 * @category constructors
 * @since 0.6.0
 */
export const make = (options: Decoded): Effect.Effect<Shape, PostgresError, PgClient> =>
  Effect.map(PgClient, (client) => {
    const catalog = Catalog.make(client, options)
    return PgTenants.of({
      serviceSchema: catalog.serviceSchema,
      catalogSchema: catalog.catalogSchema,
      prefix: catalog.prefix,
      validate: catalog.validate,
      schemaOf: catalog.schemaOf,
      list: catalog.list,
      get: catalog.get,
      add: (tenantId) => Provisioning.add(catalog, tenantId),
      remove: (tenantId, removeOptions) => Provisioning.remove(catalog, tenantId, removeOptions),
      placement: (tenantId) => Placement.placement(catalog, tenantId),
      move: (tenantId, to) => Placement.move(catalog, tenantId, to),
      migrate: (migrateOptions) => Migration.migrateAll(catalog, migrateOptions),
      changes: client.forSchema(catalog.catalogSchema).listen("wh_tenants")
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
  TenantId.validateOrDefault(tenantId, prefix)

/**
 * @category layers
 * @since 0.6.0
 */
export const layer = (options?: Options): Layer.Layer<PgTenants, PostgresError | PostgresConfigError, PgClient> =>
  Layer.effect(
    PgTenants,
    Effect.flatMap(PgClient, (client) => Effect.flatMap(decodeOptions(options, client.schema), make))
  )
