/**
 * One fresh database per test file, dropped afterwards (`DROP DATABASE ... WITH (FORCE)`), on the run's server.
 *
 * In a vitest file, `layer(TestDatabase.layer)` from `@effect/vitest` gives every test in the block the
 * {@link TestDatabase} service; the database lives as long as the layer.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { inject } from "vitest"
import { TestDatabaseError } from "./TestPostgresError.js"

/**
 * A database that belongs to one test file.
 *
 * @category models
 * @since 0.1.0
 */
export interface TestDatabaseInfo {
  /** Connection URL of the fresh database. */
  readonly url: string
  /** Its name, `wb_test_<hex>`. */
  readonly name: string
}

/**
 * The fresh database of the current test file.
 *
 * @category services
 * @since 0.1.0
 */
export class TestDatabase extends Context.Service<TestDatabase, TestDatabaseInfo>()("@whizbang/testing/TestDatabase") {}

/**
 * The key under which the vitest global setup provides the server's admin URL.
 *
 * @category constants
 * @since 0.1.0
 */
export const serverUrlKey = "whizbangTestPostgresUrl" as const

declare module "vitest" {
  export interface ProvidedContext {
    whizbangTestPostgresUrl: string
  }
}

const adminQuery = (adminUrl: string, sql: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 })
    try {
      await client.connect()
      await client.query(sql)
    } finally {
      await client.end().catch(() => undefined)
    }
  })

const withDatabase = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * Creates a fresh database on the server at `serverUrl` and drops it when the scope closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (serverUrl: string): Effect.Effect<TestDatabaseInfo, TestDatabaseError, import("effect").Scope.Scope> => {
  const name = `wb_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  // `name` is generated here from hex digits only, so quoting it is enough; no user input reaches this SQL.
  return Effect.acquireRelease(
    adminQuery(serverUrl, `CREATE DATABASE "${name}"`).pipe(
      Effect.catchDefect((cause) => Effect.fail(new TestDatabaseError({ operation: "create", database: name, cause }))),
      Effect.as({ name, url: withDatabase(serverUrl, name) })
    ),
    () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).pipe(Effect.ignore)
  )
}

/**
 * A fresh database on the server found by the vitest global setup (`@whizbang/testing/vitest/globalSetup`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<TestDatabase, TestDatabaseError> = Layer.effect(
  TestDatabase,
  Effect.suspend(() => make(inject(serverUrlKey)))
)

/**
 * A fresh database on an explicit server, for use outside vitest's global setup.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerFromServer = (serverUrl: string): Layer.Layer<TestDatabase, TestDatabaseError> =>
  Layer.effect(TestDatabase, make(serverUrl))
