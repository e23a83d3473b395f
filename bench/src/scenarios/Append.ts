/**
 * Scenario g: appends/s from one process. Whizbang's `EventStore.append` (one round trip, `wh_append_events`, or
 * `wh_append_batch` for the appends that waited while two were in flight:
 * stream lock, version check, ids, events, work rows, NOTIFY) against a raw-INSERT floor that writes the same rows
 * (events + one work row per perspective, one statement, no lock, no version check, versions counted in the
 * client) and Emmett 0.42's `appendToStream`. Single events and batches of 10, 1 and 8 concurrent appenders (each
 * appender appends round-robin to its own streams). Whizbang is measured twice: the store alone (the comparable
 * figure) and with a worker instance running in the same process (as users run it; the worker applies the work
 * rows on the same 2 cores).
 *
 * Checked after every run: every system stored every event (gap-free versions), and in Whizbang's store a
 * stream's event-id order is its version order (ids minted under the stream lock, whatever the concurrency).
 */
import { EventId, EventStore } from "@whizbang/core"
import { PgClient, PgEventStore } from "@whizbang/postgres"
import { getPostgreSQLEventStore } from "@event-driven-io/emmett-postgresql"
import type { Event } from "@event-driven-io/emmett"
import { Effect, Layer, ManagedRuntime } from "effect"
import type pg from "pg"
import * as Domain from "../Domain.js"
import * as Profile from "../Profile.js"
import * as PG from "../Postgres.js"
import * as Stats from "../Stats.js"
import * as Whizbang from "../systems/Whizbang.js"
import type { Table } from "../Table.js"

export const systems = ["raw INSERT", "whizbang", "whizbang + worker", "emmett"] as const
export type System = (typeof systems)[number]

export const shapes: ReadonlyArray<{ readonly batch: number; readonly appenders: number }> = [
  { batch: 1, appenders: 1 },
  { batch: 1, appenders: 8 },
  { batch: 10, appenders: 1 },
  { batch: 10, appenders: 8 }
]

/** Streams per shape; appender `a` of `n` appends to the streams `s` with `s % n = a`. */
const streamsPerShape = 1_000

export interface Cell {
  readonly system: System
  readonly batch: number
  readonly appenders: number
  readonly appends: number
  readonly seconds: number
  readonly appendsPerSecond: number
}

export interface Run {
  readonly system: System
  readonly cells: ReadonlyArray<Cell>
  readonly problems: ReadonlyArray<string>
}

const payload = (s: number, seq: number) => ({ accountId: Domain.streamId(s), amount: Domain.amountOf(seq), seq })

/** The stream appender `a` of a shape writes to on its `k`-th append (streams numbered from `base`). */
const streamOf = (base: number, shape: { batch: number; appenders: number }, a: number, k: number) =>
  base + a + (k % Math.floor(streamsPerShape / shape.appenders)) * shape.appenders

/**
 * Runs one shape: `appends` appends in all, shared by the appenders; resolves with the elapsed seconds. Each
 * system runs its appenders its own way: promises for the peers, fibers for Whizbang (as an Effect program runs it).
 */
type Runner = (base: number, shape: { batch: number; appenders: number }, appends: number) => Promise<number>

/** Appenders as promise loops around one append of `batch` events to stream number `s` (its events from `first`). */
const promiseRunner =
  (append: (s: number, first: number, batch: number) => Promise<void>): Runner =>
  async (base, shape, appends) => {
    const next = new Map<number, number>()
    let issued = 0
    const start = performance.now()
    await Promise.all(
      Array.from({ length: shape.appenders }, async (_, a) => {
        for (let k = 0; issued < appends; k++) {
          issued++
          const s = streamOf(base, shape, a, k)
          const first = next.get(s) ?? 1
          next.set(s, first + shape.batch)
          await append(s, first, shape.batch)
        }
      })
    )
    return (performance.now() - start) / 1000
  }

/** Appenders as fibers, one `run` per shape. */
const whizbangRunner =
  (store: EventStore.EventStore["Service"], run: <A, E>(e: Effect.Effect<A, E>) => Promise<A>): Runner =>
  (base, shape, appends) => {
    const next = new Map<number, number>()
    let issued = 0
    const appender = (a: number) =>
      Effect.gen(function* () {
        for (let k = 0; issued < appends; k++) {
          issued++
          const s = streamOf(base, shape, a, k)
          const first = next.get(s) ?? 1
          next.set(s, first + shape.batch)
          yield* Effect.orDie(
            store.append(
              Domain.streamId(s),
              Array.from({ length: shape.batch }, (_, j) => Domain.Deposited.make(payload(s, first + j)))
            )
          )
        }
      })
    return run(
      Effect.gen(function* () {
        const start = performance.now()
        yield* Effect.forEach(
          Array.from({ length: shape.appenders }, (_, a) => a),
          appender,
          { concurrency: "unbounded", discard: true }
        )
        return (performance.now() - start) / 1000
      })
    )
  }

const runShapes = async (system: System, runner: Runner, appends: number, log: (s: string) => void) => {
  // Warm-up (connections, JIT, Emmett's lazily created schema) on streams no shape uses.
  await runner(900_000, { batch: 1, appenders: 1 }, 50)
  const cells: Array<Cell> = []
  for (const [i, shape] of shapes.entries()) {
    const seconds = await runner((i + 1) * 100_000, shape, appends)
    const cell = { system, ...shape, appends, seconds, appendsPerSecond: appends / seconds }
    log(
      `append ${system}: batch ${shape.batch} x${shape.appenders} appenders: ${Stats.fmt(cell.appendsPerSecond)} appends/s (${Stats.fmt(cell.appendsPerSecond * shape.batch)} events/s)`
    )
    cells.push(cell)
  }
  return cells
}

/** Every appended event is stored once, versions gap-free: the count each stream should have. */
const expectedEvents = (appends: number) => shapes.reduce((sum, shape) => sum + appends * shape.batch, 0) + 50

const checkWhizbang = async (db: pg.Pool, appends: number): Promise<Array<string>> => {
  const problems: Array<string> = []
  const [counts] = (
    await db.query<{ n: string; gaps: string; disorder: string }>(`
    SELECT count(*) AS n,
           count(*) FILTER (WHERE prev_version IS DISTINCT FROM stream_version - 1 AND NOT (prev_version IS NULL AND stream_version = 1)) AS gaps,
           count(*) FILTER (WHERE prev_id >= event_id) AS disorder
    FROM (SELECT stream_version, event_id,
                 lag(stream_version) OVER (PARTITION BY stream_id ORDER BY stream_version) AS prev_version,
                 lag(event_id) OVER (PARTITION BY stream_id ORDER BY stream_version) AS prev_id
          FROM ${Whizbang.schema}.wh_events) t`)
  ).rows
  if (Number(counts!.n) !== expectedEvents(appends)) problems.push(`${counts!.n} events stored, expected ${expectedEvents(appends)}`)
  if (Number(counts!.gaps) > 0) problems.push(`${counts!.gaps} version gaps`)
  if (Number(counts!.disorder) > 0) problems.push(`${counts!.disorder} events whose id is below the previous version's`)
  return problems
}

const once = (serverUrl: string, system: System, appends: number, log: (s: string) => void): Promise<Run> =>
  PG.withFreshDatabase(serverUrl, "append", async (url) => {
    if (system === "emmett") {
      const store = getPostgreSQLEventStore(url)
      try {
        type Deposited = Event<"Deposited", Domain.Payload & Record<string, unknown>>
        const runner = promiseRunner(async (s, first, batch) => {
          await store.appendToStream<Deposited>(
            Domain.streamId(s),
            Array.from({ length: batch }, (_, j) => ({ type: "Deposited", data: payload(s, first + j) }))
          )
        })
        return { system, cells: await runShapes(system, runner, appends, log), problems: [] }
      } finally {
        await store.close()
      }
    }
    await Whizbang.migrate(url)
    const db = PG.pool(url, 10)
    try {
      if (system === "raw INSERT") {
        const sql = `WITH e AS (
            INSERT INTO ${Whizbang.schema}.wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope)
            SELECT u.id, $1::uuid, u.v, 'Deposited', u.p, '{}', '{}' FROM unnest($2::uuid[], $3::bigint[], $4::jsonb[]) AS u(id, v, p)
            RETURNING event_id, stream_id)
          INSERT INTO ${Whizbang.schema}.wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
          SELECT gen_random_uuid(), e.stream_id, v.p, e.event_id, abs(hashtext(e.stream_id::text)) % 10000
          FROM e CROSS JOIN (VALUES ('counter'), ('summary')) AS v(p)`
        const runner = promiseRunner(async (s, first, batch) => {
          const versions = Array.from({ length: batch }, (_, j) => first + j)
          await db.query(sql, [
            Domain.streamId(s),
            versions.map(() => EventId.unsafeMake()),
            versions,
            versions.map((v) => JSON.stringify(payload(s, v)))
          ])
        })
        return { system, cells: await runShapes(system, runner, appends, log), problems: [] }
      }
      if (system === "whizbang + worker") {
        const cells = await Whizbang.withInstances(url, { instances: 1, connectionsPerInstance: 12 }, ({ store }) =>
          runShapes(system, whizbangRunner(store, Effect.runPromise), appends, log)
        )
        return { system, cells, problems: await checkWhizbang(db, appends) }
      }
      const runtime = ManagedRuntime.make(
        PgEventStore.layer({ registry: Domain.registry, routing: () => ["counter", "summary"] }).pipe(
          Layer.provideMerge(PgClient.layer({ url, schema: Whizbang.schema, maxConnections: 10, applicationName: "bench-append" })),
          Layer.orDie
        )
      )
      try {
        const store = await runtime.runPromise(Effect.service(EventStore.EventStore))
        const cells = await runShapes(system, whizbangRunner(store, runtime.runPromise), appends, log)
        return { system, cells, problems: await checkWhizbang(db, appends) }
      } finally {
        await runtime.dispose()
      }
    } finally {
      await db.end()
    }
  })

export interface Result {
  readonly appends: number
  readonly runs: ReadonlyArray<Run>
  readonly summary: ReadonlyArray<{
    readonly system: System
    readonly batch: number
    readonly appenders: number
    readonly appendsPerSecond: Stats.Spread
  }>
}

/** Appends per shape and system: `--append-count N`, else 500 (quick) or 5,000 (full). */
export const appendsOf = (profile: Profile.Profile, args: ReadonlyArray<string>) => {
  const given = Profile.stringArg(args, "append-count")
  if (given === undefined) return profile.name === "quick" ? 500 : 5_000
  const n = Number(given)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--append-count needs a positive integer, got ${given}`)
  return n
}

export const run = async (serverUrl: string, profile: Profile.Profile, appends: number, log: (s: string) => void): Promise<Result> => {
  const runs: Array<Run> = []
  for (let rep = 1; rep <= profile.repetitions; rep++) {
    for (const system of systems) runs.push(await once(serverUrl, system, appends, log))
  }
  const summary = systems.flatMap((system) =>
    shapes.map((shape) => ({
      system,
      ...shape,
      appendsPerSecond: Stats.spread(
        runs
          .filter((r) => r.system === system)
          .flatMap((r) => r.cells)
          .filter((c) => c.batch === shape.batch && c.appenders === shape.appenders)
          .map((c) => c.appendsPerSecond)
      )
    }))
  )
  return { appends, runs, summary }
}

const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`

export const table = (result: Result, profile: Profile.Profile): Table => {
  const get = (system: System, batch: number, appenders: number) =>
    result.summary.find((s) => s.system === system && s.batch === batch && s.appenders === appenders)!.appendsPerSecond
  return {
    title: `g. Appends/s from one process (${Stats.fmt(result.appends)} appends per shape; median (min–max) of ${profile.repetitions})`,
    head: [
      "events per append",
      "appenders",
      "raw INSERT",
      "whizbang",
      "vs raw INSERT",
      "emmett",
      "whizbang vs emmett",
      "whizbang + worker",
      "all stored, id order = version order"
    ],
    rows: shapes.map(({ batch, appenders }) => {
      const [raw, wb, em, worker] = (["raw INSERT", "whizbang", "emmett", "whizbang + worker"] as const).map((s) =>
        get(s, batch, appenders)
      )
      return [
        String(batch),
        String(appenders),
        Stats.fmtSpread(raw!),
        Stats.fmtSpread(wb!),
        ratio(wb!.median, raw!.median),
        Stats.fmtSpread(em!),
        ratio(wb!.median, em!.median),
        Stats.fmtSpread(worker!),
        result.runs.every((r) => r.problems.length === 0) ? "yes" : "NO"
      ]
    }),
    notes: [
      "raw INSERT: the same rows (events + 2 work rows each) in one statement, no lock, no version check, versions counted in the client: the floor.",
      "whizbang: EventStore.append (one round trip: wh_append_events alone; the appends that wait while two are in flight go together in one wh_append_batch). whizbang + worker: the same with a PgPerspectivePipeline instance applying the work in this process.",
      "emmett: @event-driven-io/emmett-postgresql 0.42 getPostgreSQLEventStore().appendToStream, default options."
    ]
  }
}
