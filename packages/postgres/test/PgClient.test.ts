import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { ConfigProvider, Effect } from "effect"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))

describe("PgClient.layerConfig", () => {
  it.effect("reads DATABASE_URL and WHIZBANG_SCHEMA (connections are lazy, so no server is needed)", () =>
    Effect.gen(function*() {
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
    }))

  it.effect("fails with a ConfigError without DATABASE_URL, and a PostgresConfigError for a hostile schema", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(
        Effect.service(PgClient.PgClient).pipe(Effect.provide(PgClient.layerConfig()), withEnv({}))
      )
      expect(missing._tag).toBe("ConfigError")
      const hostile = yield* Effect.flip(
        Effect.service(PgClient.PgClient).pipe(
          Effect.provide(PgClient.layerConfig()),
          withEnv({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", WHIZBANG_SCHEMA: "public; DROP" })
        )
      )
      expect(hostile).toMatchObject({ _tag: "PostgresConfigError", option: "schema" })
    }))
})
