/**
 * Typed errors of tenants (`PgTenants`, `Whizbang.layerTenants`, `whizbang tenants`).
 *
 * @since 0.6.0
 */
import { Data } from "effect"

/**
 * A tenant id that cannot name a tenant: ids become schema names, so they are refused unless they are 1 to 40
 * characters of `a-z`, `0-9` and `_`, starting with a letter, not starting with `pg_` (Postgres's own) nor with the
 * service's tenant prefix (an id that would address a tenant's schema by its schema name). Nothing was written.
 *
 * @category errors
 * @since 0.6.0
 */
export class InvalidTenantId extends Data.TaggedError("InvalidTenantId")<{
  /** The id as given (maybe not a string). */
  readonly tenantId: unknown
  readonly reason: string
}> {
  override get message(): string {
    return `invalid tenant id ${JSON.stringify(this.tenantId) ?? String(this.tenantId)}: ${this.reason}`
  }
}

/**
 * No tenant of that id in the catalog (never added, removed, or still being added).
 *
 * @category errors
 * @since 0.6.0
 */
export class UnknownTenant extends Data.TaggedError("UnknownTenant")<{
  readonly tenantId: string
  /** Its state when it is in the catalog but not active (`provisioning`, `removing`). */
  readonly state: string | undefined
}> {
  override get message(): string {
    return this.state === undefined
      ? `unknown tenant "${this.tenantId}" (see \`whizbang tenants list\`)`
      : `tenant "${this.tenantId}" is ${this.state}, not active`
  }
}

/**
 * Tenancy is on and the fiber has no tenant: Whizbang never falls back to the default tenant. Run the work inside
 * `Tenants.run(tenantId, effect)` (or set `Tenants.CurrentTenant` and use `Tenants.provideCurrent`).
 *
 * @category errors
 * @since 0.6.0
 */
export class TenantRequired extends Data.TaggedError("TenantRequired")<{
  /** What needed the tenant. */
  readonly operation: string
}> {
  override get message(): string {
    return `${this.operation} needs a tenant: tenancy is on and none is set (run it inside Tenants.run(tenantId, ...))`
  }
}

/**
 * A tenant cannot be added: the id is taken, or its schema exists and is not a tenant's (Whizbang never adopts
 * or overwrites a schema it did not create).
 *
 * @category errors
 * @since 0.6.0
 */
export class TenantConflict extends Data.TaggedError("TenantConflict")<{
  readonly tenantId: string
  readonly schema: string
  readonly reason: "exists" | "schemaTaken"
}> {
  override get message(): string {
    return this.reason === "exists"
      ? `tenant "${this.tenantId}" exists already`
      : `schema "${this.schema}" exists and belongs to no tenant: tenant "${this.tenantId}" is not added (drop or rename that schema, or pick another id)`
  }
}

/**
 * A removal refused: the default tenant cannot be removed, and any other removal must be confirmed by repeating
 * the id (`confirm`), since it drops the tenant's schema with every event and read model in it.
 *
 * @category errors
 * @since 0.6.0
 */
export class TenantRemovalRefused extends Data.TaggedError("TenantRemovalRefused")<{
  readonly tenantId: string
  readonly reason: "default" | "notConfirmed"
}> {
  override get message(): string {
    return this.reason === "default"
      ? `the default tenant holds the service's own schema and cannot be removed`
      : `removing tenant "${this.tenantId}" drops its schema and every event in it: confirm by passing its id again`
  }
}

/**
 * A tenant's schema cannot be moved (`PgTenants.move`): the database is not a Citus cluster (`notCitus`), the
 * schema is local to the coordinator rather than a distributed schema (`notDistributed`: the database's
 * `citus.enable_schema_based_sharding` was off when it was created), or the target is not an active worker node that
 * may hold shards (`unknownNode`, naming those that are). Nothing was moved.
 *
 * @category errors
 * @since 0.7.0
 */
export class TenantMoveRefused extends Data.TaggedError("TenantMoveRefused")<{
  readonly tenantId: string
  readonly schema: string
  readonly reason: "notCitus" | "notDistributed" | "unknownNode"
  /** The target as given (`host:port`). */
  readonly target: string
  /** The worker nodes a schema can be moved to (`host:port`), for `unknownNode`. */
  readonly nodes: ReadonlyArray<string>
}> {
  override get message(): string {
    switch (this.reason) {
      case "notCitus":
        return `tenant "${this.tenantId}" cannot be moved: the database is not a Citus cluster (no citus extension)`
      case "notDistributed":
        return `tenant "${this.tenantId}" cannot be moved: schema ${this.schema} is local to the coordinator, not a distributed schema (README, "Outgrowing one database")`
      case "unknownNode":
        return `tenant "${this.tenantId}" cannot be moved to ${this.target}: not an active worker node that holds shards (worker nodes: ${this.nodes.join(", ") || "none"})`
    }
  }
}
