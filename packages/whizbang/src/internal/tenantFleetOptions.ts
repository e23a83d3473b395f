// The tenant fleet's options (`tenants.*` of the umbrella's configuration, less the catalog's): checked without
// connecting, each error naming its option.
import { DurationOption } from "@whizbang/core/internal"
import { PostgresError, type TenantError } from "@whizbang/postgres"
import { Duration, Effect, Result } from "effect"
import type * as Whizbang from "../Whizbang.js"

/** How the fleet runs (decoded). */
export interface Options {
  readonly idleTimeToLive: Duration.Duration
  readonly idleCheck: Duration.Duration
  /** At most this many tenants held at once (their services started and working); the others wait their turn. */
  readonly maxActive: number
  /** A held tenant hands its slot on after this long when others wait (it waits again at the back). */
  readonly timeSlice: Duration.Duration
  /**
   * Apply only these tenants' work (requests for the others get their write side, no worker); `undefined`: every
   * tenant; empty: a process that only writes.
   */
  readonly serve: ReadonlySet<string> | undefined
  /** Label the lag gauge with each tenant with work (`whizbang_tenant_lag_seconds`); default off. */
  readonly metricsPerTenant: boolean
}

/** The fleet's options as given (`tenants` of the umbrella's config, less the catalog's). */
export type Input = Pick<Whizbang.TenantsConfig, "idleTimeToLive" | "idleCheck" | "maxActive" | "timeSlice" | "serve" | "metricsPerTenant">

const duration = (option: string, input: unknown, fallback: Duration.Duration) =>
  Result.match(DurationOption.checkOr(input, "positive", fallback), {
    onSuccess: Effect.succeed,
    onFailure: (message) => Effect.fail(new PostgresError.PostgresConfigError({ option, message: `${option} ${message}` }))
  })

/** Checks the fleet's options without connecting; errors name `tenants.<option>`. */
export const decodeOptions = (
  input: Input | undefined,
  validate: (tenantId: unknown) => Effect.Effect<string, TenantError.InvalidTenantId>
): Effect.Effect<Options, PostgresError.PostgresConfigError> =>
  Effect.gen(function* () {
    const idleTimeToLive = yield* duration("tenants.idleTimeToLive", input?.idleTimeToLive, Duration.seconds(30))
    const idleCheck = yield* duration("tenants.idleCheck", input?.idleCheck, Duration.seconds(2))
    const serve =
      input?.serve === undefined
        ? undefined
        : new Set(
            yield* Effect.forEach(input.serve, (id) =>
              validate(id).pipe(
                Effect.mapError(
                  (error) => new PostgresError.PostgresConfigError({ option: "tenants.serve", message: `tenants.serve: ${error.message}` })
                )
              )
            )
          )
    const timeSlice = yield* duration("tenants.timeSlice", input?.timeSlice, Duration.seconds(5))
    const maxActive = input?.maxActive ?? 32
    if (typeof maxActive !== "number" || !Number.isSafeInteger(maxActive) || maxActive < 1) {
      return yield* new PostgresError.PostgresConfigError({
        option: "tenants.maxActive",
        message: `tenants.maxActive must be a positive integer, got ${JSON.stringify(maxActive)}`
      })
    }
    const metricsPerTenant = input?.metricsPerTenant ?? false
    if (typeof metricsPerTenant !== "boolean") {
      return yield* new PostgresError.PostgresConfigError({
        option: "tenants.metricsPerTenant",
        message: `tenants.metricsPerTenant must be a boolean, got ${JSON.stringify(metricsPerTenant)}`
      })
    }
    return { idleTimeToLive, idleCheck, maxActive, timeSlice, serve, metricsPerTenant }
  })
