// The page's options, checked before anything listens or connects.
import { DurationOption } from "@whizbang/core/internal"
import { PgTenants } from "@whizbang/postgres"
import { Duration, Effect, Result } from "effect"
import type { Options } from "../Dashboard.js"
import { type DashboardError, invalidOption } from "../DashboardError.js"
import * as Token from "./token.js"

/** The public options (`Dashboard.Options`), as given. */
export type Input = Options

export interface Decoded {
  readonly host: string
  readonly port: number
  /** "" or "/a/b" (no trailing slash). */
  readonly basePath: string
  /** Set when actions are allowed. */
  readonly token: string | undefined
  readonly tokenGenerated: boolean
  readonly refreshInterval: Duration.Duration
  readonly slowRefreshInterval: Duration.Duration
  readonly deadInstanceAfter: Duration.Duration
  readonly stuckAfter: Duration.Duration
  readonly historyPoints: number
  /** Set when the tenants page is served. */
  readonly tenants: { readonly serviceSchema: string; readonly catalog: PgTenants.Decoded; readonly top: number } | undefined
}

const duration = (option: string, input: Duration.Input | undefined, fallback: Duration.Duration, min: Duration.Duration) =>
  input === undefined
    ? Effect.succeed(fallback)
    : Result.match(DurationOption.check(input, "positive"), {
        onSuccess: (d) =>
          Duration.isLessThan(d, min)
            ? Effect.fail(invalidOption(option, `${option} must be at least ${Duration.format(min)}, got ${Duration.format(d)}`))
            : Effect.succeed(d),
        onFailure: (message) => Effect.fail(invalidOption(option, `${option} ${message}`))
      })

const basePathPattern = /^(\/[A-Za-z0-9._~-]+)*$/

const decodeTenants = (input: Input["tenants"], clientSchema: string) =>
  Effect.gen(function* () {
    if (input === undefined) return undefined
    const serviceSchema = input.serviceSchema ?? clientSchema
    const catalog = yield* PgTenants.decodeOptions(input, serviceSchema, "tenants.").pipe(
      Effect.mapError((e) => invalidOption(e.option, e.message))
    )
    const top = input.top ?? 50
    if (!Number.isInteger(top) || top < 1 || top > 1000) {
      return yield* invalidOption("tenants.top", `tenants.top must be a whole number from 1 to 1000, got ${top}`)
    }
    return { serviceSchema, catalog, top }
  })

export const decode = (input: Input, clientSchema: string): Effect.Effect<Decoded, DashboardError> =>
  Effect.gen(function* () {
    const host = input.host ?? "127.0.0.1"
    if (host.length === 0 || /[\s/]/.test(host)) return yield* invalidOption("host", `host must be a host name or address, got "${host}"`)
    const port = input.port ?? 0
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* invalidOption("port", `port must be a whole number from 0 (any free port) to 65535, got ${port}`)
    }
    const basePath = (input.basePath ?? "").replace(/\/+$/, "")
    if (!basePathPattern.test(basePath)) {
      return yield* invalidOption(
        "base-path",
        `base-path must be a path such as /ops/whizbang (letters, digits, . _ ~ -), got "${input.basePath}"`
      )
    }
    const allow = input.allowActions ?? false
    if (!allow && input.token !== undefined) {
      return yield* invalidOption("token", "a token was given but actions are not allowed: pass allowActions (--allow-actions) too")
    }
    if (input.token !== undefined && input.token.length < 16) {
      return yield* invalidOption("token", `the actions token must have at least 16 characters, got ${input.token.length}`)
    }
    const historyPoints = input.historyPoints ?? 60
    if (!Number.isInteger(historyPoints) || historyPoints < 2 || historyPoints > 1000) {
      return yield* invalidOption("historyPoints", `historyPoints must be a whole number from 2 to 1000, got ${historyPoints}`)
    }
    return {
      host,
      port,
      basePath,
      token: allow ? (input.token ?? Token.generate()) : undefined,
      tokenGenerated: allow && input.token === undefined,
      refreshInterval: yield* duration("refresh", input.refreshInterval, Duration.seconds(2), Duration.millis(100)),
      slowRefreshInterval: yield* duration("slow-refresh", input.slowRefreshInterval, Duration.seconds(10), Duration.millis(100)),
      deadInstanceAfter: yield* duration("dead-instance-after", input.deadInstanceAfter, Duration.seconds(30), Duration.seconds(1)),
      stuckAfter: yield* duration("stuck-after", input.stuckAfter, Duration.seconds(30), Duration.seconds(1)),
      historyPoints,
      tenants: yield* decodeTenants(input.tenants, clientSchema)
    }
  })
