/**
 * A migrated Whizbang schema in a fresh test database: `PgClient` (and `SchemaReady`) for one test file.
 *
 * ```ts
 * layer(PgTestDatabase.layer({ schema: "orders" }))((it) => { ... })
 * ```
 *
 * @since 0.1.0
 */
import { PgClient, SchemaReady } from "@whizbang/postgres"
import { Effect, Layer } from "effect"
import * as TestDatabase from "./TestDatabase.js"

/**
 * Options of {@link layer}.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The service schema; default `whizbang`. */
  readonly schema?: string
  /** Pool size; default 10. */
  readonly maxConnections?: number
}

/**
 * A client of the schema and a provable "schema is migrated" token. Build errors are defects: a test cannot recover.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOn = (
  database: Layer.Layer<TestDatabase.TestDatabase, unknown>,
  options: Options = {}
): Layer.Layer<PgClient.PgClient | SchemaReady.SchemaReady | TestDatabase.TestDatabase> => {
  const client = Layer.unwrap(
    Effect.map(Effect.service(TestDatabase.TestDatabase), ({ url }) =>
      PgClient.layer({ url, schema: options.schema ?? "whizbang", maxConnections: options.maxConnections })
    )
  )
  return SchemaReady.layer.pipe(Layer.provideMerge(client), Layer.provideMerge(database), Layer.orDie)
}

/**
 * {@link layerOn} a fresh database on the run's server.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options = {}): Layer.Layer<PgClient.PgClient | SchemaReady.SchemaReady | TestDatabase.TestDatabase> =>
  layerOn(TestDatabase.layer, options)
