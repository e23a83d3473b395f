/**
 * Scenario t's floor (issue 39): what a schema per tenant costs hand-written SQL, without Whizbang. The set-based
 * baseline of scenario a (`systems/Baseline.ts`: two statements a cycle, no leases, no fencing) drains the same
 * events twice, each in a fresh database:
 * - in one schema (scenario a's baseline with `loops` loops);
 * - spread over `tenants` schemas, each a copy of the bench schema's queue tables (`CREATE TABLE .. (LIKE ..
 *   INCLUDING ALL)`: the same columns and indexes) and the two read-model tables, loaded as the tenants of scenario t
 *   are (`events / tenants` events over `streams / tenants` streams each, work rows included, then ANALYZE);
 *   `loops` connections take the schemas in turn and drain each whole, stopping at a short cycle rather than running
 *   a last empty claim (the fewest statements a schema can take).
 * The ratio of the two is what the layout itself costs, measured with the least work a tenant can take (two
 * statements, no leases, fencing or services): each tenant's statements are parsed and planned for that tenant's
 * tables, and a session reads the catalog entries of each tenant's relations the first time it touches them,
 * whoever writes the SQL. A library that keeps a tenant in its own schema and does more per tenant is not expected
 * above it.
 */
import type pg from "pg"
import * as Domain from "../Domain.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import { inParallel } from "../inParallel.js"
import * as Baseline from "../systems/Baseline.js"
import * as Whizbang from "../systems/Whizbang.js"
import { baseline } from "./Throughput.js"

export interface Floor {
  readonly loops: number
  /** The hand-written baseline in one schema (events/s). */
  readonly oneSchema: number
  /** The same events over `tenants` schemas (events/s). */
  readonly schemas: number
  readonly tenants: number
  /** Seconds to create the tenants' schemas and tables (not in the rate). */
  readonly setupSeconds: number
  readonly problems: ReadonlyArray<string>
}

/** The tables a schema of the floor holds: the bench schema's queue tables, copied with their indexes. */
const queueTables = ["wh_events", "wh_perspective_events", "wh_perspective_cursors"] as const

const createSchema = async (db: pg.Pool, target: string) => {
  await db.query(
    `CREATE SCHEMA ${target}; ${queueTables
      .map((t) => `CREATE TABLE ${target}.${t} (LIKE ${Whizbang.schema}.${t} INCLUDING ALL);`)
      .join(" ")}`
  )
  await Baseline.createModelTables(db, undefined, target)
}

/** Runs both drains; the events and streams are scenario a's, `tenants` as scenario t's. */
export const run = async (
  serverUrl: string,
  options: { readonly tenants: number; readonly loops: number; readonly events: number; readonly streams: number },
  log: (s: string) => void
): Promise<Floor> => {
  const { tenants, loops, events, streams } = options
  const eventsPerTenant = Math.floor(events / tenants)
  const streamsPerTenant = Math.max(1, Math.floor(streams / tenants))
  const one = await baseline(serverUrl, loops, events, streams, log)
  return PG.withFreshDatabase(serverUrl, "tf", async (url) => {
    const db = PG.pool(url, 6)
    try {
      await Whizbang.migrate(url)
      const schemas = Array.from({ length: tenants }, (_, k) => `floor_${String(k + 1).padStart(5, "0")}`)
      const s0 = performance.now()
      await inParallel(schemas, 4, (s) => createSchema(db, s))
      await inParallel(schemas, 4, async (s) => void (await Whizbang.load(db, 0, eventsPerTenant, streamsPerTenant, undefined, s)))
      const setupSeconds = (performance.now() - s0) / 1000
      const r = await Baseline.runSchemas(db, loops, schemas)
      const total = eventsPerTenant * tenants
      const rate = total / ((r.end - r.start) / 1000)
      const problems: Array<string> = []
      if (r.workRows !== total * 2) problems.push(`${r.workRows} work rows completed of ${total * 2}`)
      await inParallel(schemas, 4, async (s) => {
        const found = Domain.verify(Domain.expected(eventsPerTenant, streamsPerTenant), await Whizbang.readModels(db, s))
        problems.push(...found.map((p) => `${s}: ${p}`))
      })
      log(
        `floor: hand-written SQL, ${Stats.fmt(total)} events over ${tenants} schemas: ${Stats.fmt(rate)} events/s; in one schema ${Stats.fmt(one.eventsPerSecond)} (${Stats.ratio(rate, one.eventsPerSecond)}); ${loops} loops; schemas set up in ${Stats.fmt(setupSeconds, 1)} s`
      )
      return {
        loops,
        oneSchema: one.eventsPerSecond,
        schemas: rate,
        tenants,
        setupSeconds,
        problems: [...one.problems.map((p) => `one schema: ${p}`), ...problems].slice(0, 20)
      }
    } finally {
      await db.end()
    }
  })
}
