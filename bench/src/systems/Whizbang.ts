/**
 * Whizbang itself: `PgPerspectivePipeline` (event store, coordinator, perspective store, NOTIFY listener, worker)
 * in this process, one layer per instance (each with its own pool and instance id).
 *
 * Loading writes the events and their work rows with set-based SQL in exactly the shape `PgEventStore.append`
 * writes them (one work row per (event, perspective), partition = abs(hashtext(stream)) % 10000), so the
 * measured work is the worker's alone.
 */
import { EventStore, InstanceProvider, PerspectiveWorker, type WorkerOptions, PerspectiveRewinder } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Context, Effect, Layer, References, Tracer } from "effect"
import type pg from "pg"
import * as CycleProfiler from "../CycleProfiler.js"
import * as Domain from "../Domain.js"

export const schema = "bench"

const clientLayer = (url: string, maxConnections: number) =>
  PgClient.layer({ url, schema, maxConnections, applicationName: "bench-whizbang" })

/** Migrates the schema (the pipeline would too; loading needs the tables first). */
export const migrate = async (url: string) => {
  await Effect.runPromise(
    Effect.scoped(Effect.asVoid(Layer.build(SchemaReady.layer.pipe(Layer.provide(clientLayer(url, 2)), Layer.orDie))))
  )
}

/**
 * Events `[from, to)` of the data set, with their work rows (one per event and perspective of `work`), in chunks.
 * Resolves with the time (epoch ms) the last chunk's work rows were committed: from then on a worker can see all of them.
 */
export const load = async (
  db: pg.Pool | pg.PoolClient,
  from: number,
  to: number,
  streams: number,
  work: ReadonlyArray<string> = ["counter", "summary"],
  /** The schema loaded (a tenant's in scenario t); default the bench's. */
  target: string = schema
): Promise<number> => {
  const chunk = 100_000
  let committed = 0
  for (let start = from; start < to; start += chunk) {
    const end = Math.min(to, start + chunk)
    const g = `SELECT ${Domain.sql.eventId("i", Domain.baseMs)} AS ev, ${Domain.sql.stream("i", streams)} AS st,
      ${Domain.sql.seq("i", streams)} AS sq, ${Domain.sql.amount("i")} AS am FROM generate_series(${start}::bigint, ${end - 1}::bigint) i`
    await db.query(`INSERT INTO ${target}.wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope)
      SELECT ev, st, sq, 'Deposited', jsonb_build_object('accountId', st::text, 'amount', am, 'seq', sq), '{}', '{}' FROM (${g}) g`)
    if (work.length > 0) {
      await db.query(
        `INSERT INTO ${target}.wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
        SELECT gen_random_uuid(), st, p, ev, abs(hashtext(st::text)) % 10000 FROM (${g}) g CROSS JOIN unnest($1::text[]) v(p)`,
        [work]
      )
    }
    committed = performance.timeOrigin + performance.now()
  }
  await db.query(`ANALYZE ${target}.wh_events; ANALYZE ${target}.wh_perspective_events`)
  return committed
}

export const readModels = async (db: pg.Pool, target: string = schema) => {
  const read = async (name: string) =>
    new Map(
      (await db.query<{ id: string; data: unknown }>(`SELECT id::text, data FROM ${target}.wh_per_${name}`)).rows.map((r) => [r.id, r.data])
    )
  return { counter: await read("counter"), summary: await read("summary") }
}

export const pendingWork = async (db: pg.Pool, target: string = schema) =>
  Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${target}.wh_perspective_events`)).rows[0]!.n)

/** What the worker hooks saw. */
export interface Observed {
  firstClaim: number
  lastCommit: number
  applied: number
}

export interface Instances {
  readonly observed: Observed
  readonly store: EventStore.EventStore["Service"]
  readonly workers: ReadonlyArray<PerspectiveWorker.PerspectiveWorker["Service"]>
}

export interface RunOptions {
  readonly instances: number
  readonly options?: WorkerOptions.WorkerOptionsInput
  /** Called with every committed (stream, perspective) group and the commit time. */
  readonly onProcessed?: (perspective: string, eventIds: ReadonlyArray<string>, at: number) => void
  readonly connectionsPerInstance?: number
}

/**
 * Starts `instances` pipelines and runs `body` while they live; they stop when it returns.
 * Timestamps are `performance.now()` milliseconds.
 */
export const withInstances = <A>(url: string, run: RunOptions, body: (i: Instances) => Promise<A>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const observed: Observed = { firstClaim: Number.POSITIVE_INFINITY, lastCommit: 0, applied: 0 }
        const hooks: PerspectiveWorker.Hooks = {
          onWorkProcessingStarted: () => Effect.sync(() => void (observed.firstClaim = Math.min(observed.firstClaim, performance.now()))),
          onPerspectiveEventProcessed: (group) =>
            Effect.sync(() => {
              const at = performance.now()
              observed.applied += group.eventIds.length
              observed.lastCommit = Math.max(observed.lastCommit, at)
              run.onProcessed?.(group.perspectiveName, group.eventIds, at)
            })
        }
        const contexts = []
        for (let k = 0; k < run.instances; k++) {
          const layer = PgPerspectivePipeline.layer({
            events: Domain.registry,
            perspectives: Domain.perspectives,
            ...(run.options ? { options: run.options } : {}),
            hooks
          }).pipe(
            Layer.provide(PerspectiveRewinder.layerUnsupported),
            Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench" })),
            Layer.provideMerge(SchemaReady.layer),
            Layer.provideMerge(clientLayer(url, run.connectionsPerInstance ?? 10)),
            Layer.orDie
          )
          contexts.push(yield* Layer.build(layer))
        }
        const store = Context.get(contexts[0]!, EventStore.EventStore)
        const workers = contexts.map((c) => Context.get(c, PerspectiveWorker.PerspectiveWorker))
        return yield* Effect.promise(() => body({ observed, store, workers }))
      }).pipe(
        Effect.provideService(References.MinimumLogLevel, "Error"),
        CycleProfiler.enabled ? Effect.provideService(Tracer.Tracer, CycleProfiler.tracer) : (self) => self
      )
    )
  )

/**
 * Resolves once the hooks counted `target` applied (event, perspective) pairs; fails when nothing was applied
 * for `stallMs` (a broken worker must not hang the run) or after `timeoutMs` in all.
 */
export const untilApplied = (observed: Observed, target: number, timeoutMs: number, stallMs = 30_000) =>
  new Promise<void>((resolve, reject) => {
    const started = Date.now()
    let seen = observed.applied
    let progressAt = started
    const tick = () => {
      if (observed.applied >= target) return resolve()
      const now = Date.now()
      if (observed.applied > seen) [seen, progressAt] = [observed.applied, now]
      if (now - progressAt > stallMs || now - started > timeoutMs) {
        return reject(
          new Error(
            `worker stalled or timed out: ${observed.applied} of ${target} (event, perspective) pairs applied after ${now - started} ms`
          )
        )
      }
      setTimeout(tick, 2)
    }
    tick()
  })

/** Appends one event (used by the latency scenario); resolves with the event id once committed. */
export const appendOne = (store: Instances["store"], stream: string, amount: number, seq: number) =>
  Effect.runPromise(
    Effect.map(Effect.orDie(store.append(stream, [Domain.Deposited.make({ accountId: stream, amount, seq })])), (r) => r.events[0]!.eventId)
  )

export const awaitIdle = (workers: Instances["workers"]) =>
  Effect.runPromise(Effect.forEach(workers, (w) => w.awaitIdle, { discard: true }))
