import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { ConfigProvider, Effect } from "effect"

const withEnv = (env: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))

describe("PgClient.layerConfig", () => {
  it.effect("reads DATABASE_URL and WHIZBANG_SCHEMA (connections are lazy, so no server is needed)", () =>
    Effect.gen(function* () {
      const client = yield* Effect.service(PgClient.PgClient).pipe(
        Effect.provide(PgClient.layerConfig()),
        withEnv({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", WHIZBANG_SCHEMA: "orders" })
      )
      expect(client.schema).toBe("orders")
      const defaulted = yield* Effect.service(PgClient.PgClient).pipe(
        Effect.provide(PgClient.layerConfig()),
        withEnv({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" })
      )
      expect(defaulted.schema).toBe("whizbang")
    })
  )

  it.effect("fails with a ConfigError without DATABASE_URL, and a PostgresConfigError for a hostile schema", () =>
    Effect.gen(function* () {
      const missing = yield* Effect.flip(Effect.service(PgClient.PgClient).pipe(Effect.provide(PgClient.layerConfig()), withEnv({})))
      expect(missing._tag).toBe("ConfigError")
      const hostile = yield* Effect.flip(
        Effect.service(PgClient.PgClient).pipe(
          Effect.provide(PgClient.layerConfig()),
          withEnv({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", WHIZBANG_SCHEMA: "public; DROP" })
        )
      )
      expect(hostile).toMatchObject({ _tag: "PostgresConfigError", option: "schema" })
    })
  )
})

describe("PgClient.decodeOptions", () => {
  it.effect("refuses a missing or malformed URL and bad pool options before any connection, naming the option", () =>
    Effect.gen(function* () {
      const refused = (options: Omit<Partial<PgClient.Options>, "url"> & { readonly url: unknown }) =>
        Effect.flip(Effect.scoped(PgClient.make(options as unknown as PgClient.Options)))
      expect(yield* refused({ url: undefined })).toMatchObject({ _tag: "PostgresConfigError", option: "url" })
      expect(yield* refused({ url: "not a url" })).toMatchObject({ option: "url", message: expect.stringMatching(/not a URL/) })
      expect(yield* refused({ url: "postgres://u@h" })).toMatchObject({ option: "url", message: expect.stringMatching(/no database/) })
      expect(yield* refused({ url: "postgres://u@h/db", maxConnections: 0 })).toMatchObject({ option: "maxConnections" })
      expect(yield* refused({ url: "postgres://u@h/db", connectTimeout: "-1 seconds" })).toMatchObject({ option: "connectTimeout" })
      expect(yield* refused({ url: "postgres://u@h/db", applicationName: "caf\u00e9" })).toMatchObject({ option: "applicationName" })
      const decoded = yield* PgClient.decodeOptions({ url: "postgres://u@h/db" })
      expect(decoded).toMatchObject({ maxConnections: 10, applicationName: "whizbang", schema: "whizbang" })
    })
  )
})
