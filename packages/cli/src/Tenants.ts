/**
 * The tenants of a service as an operator sees them: the catalog (`PgTenants`) with each tenant's health — pending
 * work, lag in seconds (the age of its oldest pending work row) and dead letters — read from every tenant's schema
 * in one statement per 100 tenants. `whizbang tenants list` runs {@link overview}; {@link fromTenantError} is how
 * every command turns a tenant error into the CLI's `OperationError`.
 *
 * **Gotchas**
 * - A tenant being added (`provisioning`) or removed (`removing`) has no health: its schema may be half there.
 * - A tenant whose schema cannot be read (a table missing: migrations not applied) is listed with its error, and
 *   ranked first: it needs an operator.
 *
 * @since 0.6.0
 */
import { PgClient, PgTenants, type PostgresError, type TenantError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import { orFailure } from "./internal/database.js"
import { databaseFailure, invalidInput, NotFound, OperationError, refused } from "./OperationError.js"

const Sql = PgOperations.TenantHealth

/**
 * One tenant with its health.
 *
 * @category models
 * @since 0.6.0
 */
export interface TenantHealth {
  readonly id: string
  readonly schema: string
  readonly state: PgTenants.Tenant["state"]
  readonly createdAt: string
  readonly migratedAt: string | null
  /** Pending work rows; null when not read (a tenant not active, or its schema unreadable). */
  readonly pending: number | null
  /** Seconds since its oldest pending work row was enqueued; null when nothing is pending or not read. */
  readonly lagSeconds: number | null
  readonly deadLetters: number | null
  /** Why its schema could not be read. */
  readonly error: string | null
}

/**
 * @category models
 * @since 0.6.0
 */
export interface Overview {
  /** Every tenant in the catalog. */
  readonly tenants: number
  readonly active: number
  /** Tenants being added or removed. */
  readonly inTransition: number
  /** Tenants whose schema could not be read. */
  readonly unreadable: number
  /** Sums and the maximum over every tenant read. */
  readonly totals: {
    readonly pending: number
    readonly deadLetters: number
    readonly maxLagSeconds: number | null
    /** Tenants with pending work. */
    readonly lagging: number
  }
  /** The worst `top` tenants: unreadable ones first, then those in transition, then by lag, pending and dead letters. */
  readonly shown: ReadonlyArray<TenantHealth>
  /** How many statements read the tenants' health. */
  readonly statements: number
}

/**
 * The CLI's error for a tenant error: an invalid id is bad input (exit 2), an unknown tenant not found (3), a
 * conflict or refused removal refused (4), anything else a database failure (1).
 *
 * @category constructors
 * @since 0.6.0
 */
export const fromTenantError = (
  error:
    | TenantError.InvalidTenantId
    | TenantError.UnknownTenant
    | TenantError.TenantConflict
    | TenantError.TenantRemovalRefused
    | TenantError.TenantMoveRefused
    | PostgresError.PostgresError
    | PostgresError.MigrationError
): OperationError => {
  switch (error._tag) {
    case "InvalidTenantId":
      return invalidInput("tenant", error.message)
    case "UnknownTenant":
      return new OperationError({ reason: new NotFound({ what: "tenant", id: error.tenantId }), message: error.message })
    case "TenantConflict":
    case "TenantRemovalRefused":
    case "TenantMoveRefused":
      return refused(error.message)
    default:
      return databaseFailure(error)
  }
}

const iso = (date: Date | undefined): string | null => (date === undefined ? null : date.toISOString())

/** Health of `schemas`: one statement per batch; a batch that fails is read schema by schema, to name the culprit. */
const healthOf = (client: PgClient.Shape, schemas: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const found = new Map<string, (typeof PgOperations.TenantHealth.Health)["Type"] | { readonly error: string }>()
    let statements = 0
    for (let start = 0; start < schemas.length; start += Sql.batchSize) {
      const batch = schemas.slice(start, start + Sql.batchSize)
      statements += 1
      const rows = yield* Effect.orElseSucceed(Sql.summary(client, { schemas: batch }), () => undefined)
      if (rows !== undefined) {
        for (const row of rows) found.set(row.schema, row)
        continue
      }
      for (const schema of batch) {
        statements += 1
        const one = yield* Sql.summary(client, { schemas: [schema] }).pipe(
          Effect.map((r): (typeof PgOperations.TenantHealth.Health)["Type"] | { readonly error: string } => r[0] ?? { error: "no row" }),
          Effect.catch((e: PostgresError.PostgresError) => Effect.succeed({ error: e.message }))
        )
        found.set(schema, one)
      }
    }
    return { found, statements }
  })

const rank = (t: TenantHealth): ReadonlyArray<number> => [
  t.error === null ? 0 : 1,
  t.state === "active" ? 0 : 1,
  t.lagSeconds ?? 0,
  t.pending ?? 0,
  t.deadLetters ?? 0
]

const worse = (a: TenantHealth, b: TenantHealth): number => {
  const ra = rank(a)
  const rb = rank(b)
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return rb[i]! - ra[i]!
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/**
 * Every tenant of the catalog with its health, the totals, and the worst `top` (default 20).
 *
 * @category operations
 * @since 0.6.0
 */
export const overview = (options: {
  readonly top?: number | undefined
}): Effect.Effect<Overview, OperationError, PgTenants.PgTenants | PgClient.PgClient> =>
  Effect.gen(function* () {
    const catalog = yield* PgTenants.PgTenants
    const client = yield* PgClient.PgClient
    const tenants = yield* orFailure(catalog.list)
    const active = tenants.filter((t) => t.state === "active")
    const { found, statements } = yield* healthOf(
      client,
      active.map((t) => t.schema)
    )
    const all = tenants.map((t): TenantHealth => {
      const health = t.state === "active" ? found.get(t.schema) : undefined
      const read = health !== undefined && !("error" in health) ? health : undefined
      return {
        id: t.id,
        schema: t.schema,
        state: t.state,
        createdAt: t.createdAt.toISOString(),
        migratedAt: iso(t.migratedAt),
        pending: read?.pending ?? null,
        lagSeconds: read?.lagSeconds ?? null,
        deadLetters: read?.deadLetters ?? null,
        error: health !== undefined && "error" in health ? health.error : t.state === "active" && health === undefined ? "not read" : null
      }
    })
    return {
      tenants: all.length,
      active: active.length,
      inTransition: all.length - active.length,
      unreadable: all.filter((t) => t.error !== null).length,
      totals: {
        pending: all.reduce((sum, t) => sum + (t.pending ?? 0), 0),
        deadLetters: all.reduce((sum, t) => sum + (t.deadLetters ?? 0), 0),
        maxLagSeconds: all.reduce<number | null>((max, t) => (t.lagSeconds === null ? max : Math.max(max ?? 0, t.lagSeconds)), null),
        lagging: all.filter((t) => (t.pending ?? 0) > 0).length
      },
      shown: [...all].sort(worse).slice(0, Math.max(0, options.top ?? 20)),
      statements
    }
  })
