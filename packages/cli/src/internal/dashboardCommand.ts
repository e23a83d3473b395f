// `whizbang dashboard`: serves the operations page of `@whizbang/dashboard` for the schema until Ctrl-C. The page
// is a package of its own (it uses this package's operations, so this package cannot depend on it): it is loaded
// when the command runs, and a missing install is a clear error.
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import type { PgClient } from "@whizbang/postgres"
import { Console, Duration, Effect, Option, type Scope } from "effect"
import { Command, Flag } from "effect/cli"
import { invalidInput, type OperationError, refused } from "../OperationError.js"
import { parseDuration } from "../Versions.js"
import { deadInstanceAfterFlag, root, withDatabase } from "./context.js"

/** The part of `@whizbang/dashboard` this command uses. */
interface DashboardModule {
  readonly Dashboard: {
    readonly serve: (options: {
      readonly host: string
      readonly port: number
      readonly basePath: string | undefined
      readonly allowActions: boolean
      readonly token: string | undefined
      readonly refreshInterval: Duration.Duration
      readonly deadInstanceAfter: Duration.Duration
      readonly tenants: {
        readonly serviceSchema: string
        readonly prefix: string | undefined
        readonly catalogSchema: string | undefined
      }
    }) => Effect.Effect<
      { readonly url: string; readonly token: string | undefined; readonly tokenGenerated: boolean },
      { readonly message: string; readonly reason: { readonly _tag: string } },
      PgClient.PgClient | Scope.Scope
    >
  }
}

const specifier = "@whizbang/dashboard"

/** Beside this package, else from the current project (a pnpm install keeps packages apart). */
const load = Effect.tryPromise({
  try: (): Promise<DashboardModule> =>
    import(specifier).catch(() => import(pathToFileURL(createRequire(Path.join(process.cwd(), "package.json")).resolve(specifier)).href)),
  catch: () => refused(`whizbang dashboard needs the ${specifier} package: npm install ${specifier} (beside @whizbang/cli)`)
})

export const dashboard = Command.make(
  "dashboard",
  {
    host: Flag.String("host").pipe(Flag.withDescription("address to listen on"), Flag.withDefault("127.0.0.1")),
    port: Flag.Int("port").pipe(Flag.withDescription("port to listen on (0: any free port)"), Flag.withDefault(0)),
    basePath: Flag.String("base-path").pipe(Flag.withDescription("serve under this path prefix (behind a proxy)"), Flag.optional),
    allowActions: Flag.Boolean("allow-actions").pipe(
      Flag.withDescription(
        "allow retry, discard, cutover and rollback with a token ($WHIZBANG_DASHBOARD_TOKEN, else generated and printed)"
      ),
      Flag.withDefault(false)
    ),
    refresh: Flag.String("refresh").pipe(Flag.withDescription("recompute at most this often when notified (default 2s)"), Flag.optional),
    deadInstanceAfter: deadInstanceAfterFlag
  },
  (flags) =>
    withDatabase(
      Effect.scoped(
        Effect.gen(function* () {
          const module = yield* load
          const shared = yield* root
          const refresh = Option.isSome(flags.refresh) ? yield* parseDuration("refresh", flags.refresh.value) : Duration.seconds(2)
          const envToken = process.env.WHIZBANG_DASHBOARD_TOKEN
          const running = yield* module.Dashboard.serve({
            host: flags.host,
            port: flags.port,
            basePath: Option.getOrUndefined(flags.basePath),
            allowActions: flags.allowActions,
            token: flags.allowActions && envToken !== undefined && envToken !== "" ? envToken : undefined,
            refreshInterval: refresh,
            deadInstanceAfter: Duration.seconds(flags.deadInstanceAfter),
            // The tenants page reads the catalog of the service schema, also when the page shows a tenant's schema.
            tenants: {
              serviceSchema: shared.schema,
              prefix: Option.getOrUndefined(shared.tenantPrefix),
              catalogSchema: Option.getOrUndefined(shared.tenantCatalog)
            }
          }).pipe(Effect.mapError((e): OperationError => invalidInput(e.reason._tag, e.message)))
          yield* Console.log(`whizbang dashboard: ${running.url}`)
          if (running.token === undefined) yield* Console.log("read-only (start with --allow-actions to act from the page)")
          else if (running.tokenGenerated) yield* Console.log(`actions allowed; token: ${running.token}`)
          else yield* Console.log("actions allowed; token from WHIZBANG_DASHBOARD_TOKEN")
          return yield* Effect.never
        })
      )
    )
).pipe(
  Command.withDescription(
    "Serve the operations page (perspectives, versions, lag, dead letters, instances, locks; /tenants: every tenant's lag and dead letters) until Ctrl-C."
  )
)
