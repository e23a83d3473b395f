/**
 * `pnpm start`: runs the example against DATABASE_URL, or against a throw-away embedded PostgreSQL when it is unset.
 */
import { EventRegistry } from "@whizbang/core"
import { PgClient, PgEventStore, PgMigrator } from "@whizbang/postgres"
import { TestPostgres } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Events from "./events.js"
import { program } from "./program.js"

const fromEnv = process.env.DATABASE_URL
const server = fromEnv ? { url: fromEnv, stop: async () => undefined } : await TestPostgres.startEmbedded()
console.log(fromEnv ? "Using DATABASE_URL" : `Started an embedded PostgreSQL at ${server.url.replace(/:[^:@/]+@/, ":***@")}`)

const client = PgClient.layer({ url: server.url, schema: "hello" })
const store = PgEventStore.layer({ registry: EventRegistry.make(Events.all) })
const app = store.pipe(Layer.provideMerge(PgMigrator.layer), Layer.provide(client))

try {
  const { accountId, events } = await Effect.runPromise(program.pipe(Effect.provide(app)))
  console.log(`Read back stream ${accountId}:`)
  for (const e of events) {
    console.log(`  v${e.streamVersion} ${e.eventType} ${JSON.stringify(e.payload)} (user ${e.scope.userId ?? "-"})`)
  }
} finally {
  await server.stop()
}
