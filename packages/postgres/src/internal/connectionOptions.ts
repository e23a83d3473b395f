// Validation of the client's options, pure and before any connection: a start refused for a bad option must not
// have touched the database (migrations run only after the client is built).
import { Duration, Effect, Redacted } from "effect"
import * as Identifier from "./identifier.js"
import * as DurationOption from "./durationOption.js"
import { PostgresConfigError } from "../PostgresError.js"

export interface Decoded {
  readonly connectionString: string
  readonly schema: string
  readonly maxConnections: number
  readonly connectTimeoutMillis: number
  readonly idleTimeoutMillis: number
  readonly applicationName: string
  readonly preparedStatements: boolean
  readonly jit: boolean
  /** Prepared statements planned once per connection (`PgClient.dedicated`'s `genericPlans`); not a user option. */
  readonly genericPlans?: boolean | undefined
}

export interface Input {
  readonly url: unknown
  readonly schema?: unknown
  readonly maxConnections?: unknown
  readonly connectTimeout?: Duration.Input | undefined
  readonly idleTimeout?: Duration.Input | undefined
  readonly applicationName?: unknown
  readonly preparedStatements?: unknown
  readonly jit?: unknown
}

/** The option names to report; the umbrella calls the URL `databaseUrl`. */
export interface Names {
  readonly url: string
}

const fail = (option: string, message: string) => Effect.fail(new PostgresConfigError({ option, message: `${option} ${message}` }))

// Without a host or a database in the URL, pg would fill them from PGHOST/PGDATABASE or the OS user: a service
// could migrate a database nobody named. So both must be in the URL (a socket directory goes in `?host=`).
const decodeUrl = (option: string, input: unknown): Effect.Effect<string, PostgresConfigError> => {
  const raw = Redacted.isRedacted(input) ? Redacted.value(input) : input
  if (raw === undefined || raw === null) return fail(option, "is missing (is the environment variable set?)")
  if (typeof raw !== "string" || raw.trim() === "") return fail(option, "must be a non-empty postgres:// URL")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail(option, "is not a URL; expected postgres://user@host:port/database")
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    return fail(option, `must use the postgres:// or postgresql:// scheme, got "${url.protocol}"`)
  }
  if (url.hostname === "" && !url.searchParams.has("host"))
    return fail(option, "names no host; expected postgres://user@host:port/database")
  if (decodeURIComponent(url.pathname.replace(/^\//, "")) === "")
    return fail(option, "names no database; expected postgres://user@host:port/database")
  return Effect.succeed(raw)
}

// Postgres truncates application_name to 63 bytes and replaces non-ASCII characters with "?".
const decodeApplicationName = (input: unknown): Effect.Effect<string, PostgresConfigError> => {
  if (input === undefined) return Effect.succeed("whizbang")
  if (typeof input !== "string" || !/^[\x20-\x7e]{1,63}$/.test(input)) {
    return fail("applicationName", `must be 1 to 63 printable ASCII characters, got ${JSON.stringify(input)}`)
  }
  return Effect.succeed(input)
}

/** A pool size: an integer >= 1, else a `PostgresConfigError` naming `option`. */
export const decodePoolSize = (option: string, input: unknown): Effect.Effect<number, PostgresConfigError> =>
  typeof input === "number" && Number.isSafeInteger(input) && input >= 1
    ? Effect.succeed(input)
    : fail(option, `must be an integer >= 1, got ${String(input)}`)

/** A boolean option: `fallback` when absent, else true or false, or a `PostgresConfigError` naming `option`. */
export const decodeFlag = (option: string, input: unknown, fallback: boolean): Effect.Effect<boolean, PostgresConfigError> => {
  const value = input ?? fallback
  return typeof value === "boolean" ? Effect.succeed(value) : fail(option, `must be true or false, got ${JSON.stringify(value)}`)
}

export const decode = (input: Input, names: Names = { url: "url" }): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const connectionString = yield* decodeUrl(names.url, input.url)
    const schema = yield* Identifier.validateSchema(input.schema ?? "whizbang", "schema")
    // The LISTEN connection is opened outside the pool (see PgClient.listen), so one pooled connection can serve everything.
    const max = yield* decodePoolSize("maxConnections", input.maxConnections ?? 10)
    const connectTimeoutMillis = Duration.toMillis(
      yield* DurationOption.decode("connectTimeout", input.connectTimeout, "positive", Duration.seconds(10))
    )
    const idleTimeoutMillis = Duration.toMillis(
      yield* DurationOption.decode("idleTimeout", input.idleTimeout, "positive", Duration.seconds(30))
    )
    const applicationName = yield* decodeApplicationName(input.applicationName)
    const preparedStatements = yield* decodeFlag("preparedStatements", input.preparedStatements, true)
    const jit = yield* decodeFlag("jit", input.jit, false)
    return {
      connectionString,
      schema,
      maxConnections: max,
      connectTimeoutMillis,
      idleTimeoutMillis,
      applicationName,
      preparedStatements,
      jit
    }
  })
