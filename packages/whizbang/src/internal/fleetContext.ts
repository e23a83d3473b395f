/**
 * What the fleet's fibers share: the process's one client and the tenant catalog, the decoded options, this
 * process's instance, the state (see `fleetState.ts`), the tenants' services (`tenantStacks.ts`), the metrics, and
 * the fleet's scope, where holds and retries are forked.
 */
import type { PgClient, PgTenants } from "@whizbang/postgres"
import type { Scope } from "effect"
import type { FleetState } from "./fleetState.js"
import type { Options } from "./tenantFleetOptions.js"
import type * as TenantMetrics from "./tenantMetrics.js"
import type { TenantStacks } from "./tenantStacks.js"

/** What the fleet knows of its own process. */
export interface Self {
  /** This process's instance: every tenant's services register it. */
  readonly instanceId: string
  /** Another instance silent for longer is taken as gone. */
  readonly staleSeconds: number
  /** Whether it keeps the queue tables' statistics (`queueVacuum` not `false`). */
  readonly analyzeQueues: boolean
}

export interface FleetContext {
  readonly client: PgClient.Shape
  readonly catalog: PgTenants.Shape
  readonly options: Options
  readonly self: Self
  readonly state: FleetState
  readonly stacks: TenantStacks
  readonly metrics: TenantMetrics.Metrics
  /** The fleet's own: closed with it, interrupting every hold. */
  readonly scope: Scope.Scope
}

/** Whether this process applies the tenant's work (`tenants.serve`). */
export const serves = (options: Options, tenantId: string): boolean => options.serve === undefined || options.serve.has(tenantId)
