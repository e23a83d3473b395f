/**
 * Whizbang's side of scenario v (perspective versions): version 1 registered and materialized set-based, an appender
 * in this process that declares version 1 only (an old deploy: appends route to every registered version in the
 * database whatever the appender declares), and the registry row of a version.
 */
import { EventStore, InstanceProvider } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgPerspectiveVersions, SchemaReady } from "@whizbang/postgres"
import { PerspectiveTable } from "@whizbang/postgres/internal"
import { Context, Effect, Layer, References } from "effect"
import type pg from "pg"
import * as Domain from "../Domain.js"
import { schema } from "./Whizbang.js"

const clientLayer = (url: string, maxConnections: number) =>
  PgClient.layer({ url, schema, maxConnections, applicationName: "bench-versions" })

/** Registers version 1 of the bench's perspectives (live at once; no history yet, so nothing to replay). */
export const registerV1 = (url: string) =>
  Effect.runPromise(
    Effect.asVoid(PgPerspectiveVersions.register(Domain.perspectives).pipe(Effect.provide(clientLayer(url, 2)), Effect.orDie))
  )

/** The table of one version's rows (`counter` -> `wh_per_counter__v1`, `counter__v2` -> `wh_per_counter__v2`), qualified. */
export const tableOf = (key: string) => `${schema}.${PerspectiveTable.ofVersion(key)}`

/**
 * Version 1's read models and cursors for every stored event, set-based, as the worker would have left them: one row
 * per stream in `wh_per_counter__v1` and `wh_per_summary__v1` (version = events applied), one completed cursor per
 * (stream, perspective) at the stream's newest event. Run on the loaded events only (no work rows).
 */
export const loadV1Models = async (db: pg.Pool) => {
  await db.query(`INSERT INTO ${tableOf("counter")} (id, data, version)
    SELECT stream_id, jsonb_build_object('count', count(*), 'sum', sum((payload->>'amount')::bigint)), count(*)
    FROM ${schema}.wh_events GROUP BY stream_id`)
  await db.query(`INSERT INTO ${tableOf("summary")} (id, data, version)
    SELECT stream_id, jsonb_build_object(
      'version', max(stream_version),
      'last', (array_agg((payload->>'amount')::int ORDER BY stream_version DESC))[1],
      'max', max((payload->>'amount')::int),
      'ordered', true), count(*)
    FROM ${schema}.wh_events GROUP BY stream_id`)
  await db.query(`INSERT INTO ${schema}.wh_perspective_cursors (stream_id, perspective_name, last_event_id, status, processed_at)
    SELECT l.stream_id, v.p, l.event_id, 2, now()
    FROM (SELECT DISTINCT ON (stream_id) stream_id, event_id FROM ${schema}.wh_events ORDER BY stream_id, event_id DESC) l
    CROSS JOIN (VALUES ('counter'), ('summary')) v(p)`)
  await db.query(`ANALYZE ${schema}.wh_events; ANALYZE ${schema}.wh_perspective_cursors`)
}

/**
 * Runs `body` with an event store of this process: the pipeline's ports without a worker, declaring version 1 only.
 */
export const withAppender = <A>(url: string, body: (store: EventStore.EventStore["Service"]) => Promise<A>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(
          PgPerspectivePipeline.layerPorts({ events: Domain.registry, perspectives: Domain.perspectives }).pipe(
            Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-appender" })),
            Layer.provideMerge(SchemaReady.layerVerify),
            Layer.provideMerge(clientLayer(url, 10)),
            Layer.orDie
          )
        )
        return yield* Effect.promise(() => body(Context.get(context, EventStore.EventStore)))
      }).pipe(Effect.provideService(References.MinimumLogLevel, "Error"))
    )
  )

/** A version's registry row; times are epoch ms of the database's clock (`now()` of the registering transaction, etc.). */
export interface VersionRow {
  readonly state: string
  readonly registeredAt: number
  readonly stateChangedAt: number
  readonly historyEvents: number
  readonly historyStreams: number
}

export const versionRow = async (db: pg.Pool, key: string): Promise<VersionRow | undefined> => {
  const rows = (
    await db.query<{ state: string; registered: string; changed: string; events: string; streams: number }>(
      `SELECT state, extract(epoch FROM registered_at) * 1000 AS registered, extract(epoch FROM state_changed_at) * 1000 AS changed,
        backfill_events AS events, backfill_streams AS streams
      FROM ${schema}.wh_perspective_versions WHERE perspective_name = $1::text`,
      [key]
    )
  ).rows
  const r = rows[0]
  return r === undefined
    ? undefined
    : {
        state: r.state,
        registeredAt: Number(r.registered),
        stateChangedAt: Number(r.changed),
        historyEvents: Number(r.events),
        historyStreams: r.streams
      }
}

/** Rows of a table as `id -> data`. */
export const readTable = async (db: pg.Pool, table: string) =>
  new Map((await db.query<{ id: string; data: unknown }>(`SELECT id::text, data FROM ${table}`)).rows.map((r) => [r.id, r.data]))

/** Work rows still in `wh_perspective_events`, streams of history still planned, dead letters. */
export const leftOver = async (db: pg.Pool) => {
  const r = (
    await db.query<{ work: number; planned: number; dead: number }>(
      `SELECT (SELECT count(*) FROM ${schema}.wh_perspective_events)::int AS work,
        (SELECT count(*) FROM ${schema}.wh_perspective_backfill)::int AS planned,
        (SELECT count(*) FROM ${schema}.wh_dead_letters)::int AS dead`
    )
  ).rows[0]!
  return r
}

/** How often autovacuum (or anyone) analyzed the work table so far: the planner's view of the pending work. */
export const workTableAnalyzes = async (db: pg.Pool) => {
  const r = (
    await db.query<{ auto: string; manual: string }>(
      `SELECT autoanalyze_count AS auto, analyze_count AS manual FROM pg_stat_user_tables
      WHERE schemaname = $1::text AND relname = 'wh_perspective_events'`,
      [schema]
    )
  ).rows[0]
  return { auto: Number(r?.auto ?? 0), manual: Number(r?.manual ?? 0) }
}
