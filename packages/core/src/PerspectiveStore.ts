/**
 * The PerspectiveStore port: the read-model rows of every perspective (`wh_per_<name>` tables).
 *
 * One row per stream: the encoded model (`data`), plus metadata, scope, timestamps and a version that grows
 * with every write. `writeBatch` applies many upserts and deletions in one call (one transaction in Postgres).
 * `query` filters by top-level field equality on `data` (`data @> $1` in Postgres), sorted by id, paged.
 *
 * **Reading.** Applications read through the perspective value, and get its decoded model:
 *
 * ```ts
 * const model = yield* PerspectiveStore.getById(balance, accountId) // Option<{ total: number }>
 * ```
 *
 * {@link getById}, {@link getRow}, {@link getMany} and {@link query} decode with the perspective's schema (a row
 * that does not decode is a {@link PerspectiveStoreError}). The service's own methods are the port: by name, with
 * the stored (encoded) `data`, for storage layers to implement and workers to use.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import * as StorageReason from "./StorageReason.js"
import * as Perspective from "./Perspective.js"

/**
 * A stored read-model row; `Data` is the decoded model when read through a perspective, the stored JSON
 * (`unknown`) through the port.
 *
 * @category models
 * @since 0.1.0
 */
export interface Row<Data = unknown> {
  /** The stream id. */
  readonly id: string
  readonly data: Data
  readonly metadata?: unknown
  readonly scope?: unknown
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * One change to a perspective's rows. `"delete"` and `"purge"` remove the row.
 *
 * @category models
 * @since 0.1.0
 */
export interface Write {
  readonly perspectiveName: string
  readonly streamId: string
  readonly data: unknown
  readonly action: Perspective.Action
  readonly metadata?: unknown
  readonly scope?: unknown
}

/**
 * A query over one perspective's rows.
 *
 * @category models
 * @since 0.1.0
 */
export interface Query {
  /** Rows whose `data` has these top-level fields with equal (JSON) values. */
  readonly where?: Readonly<Record<string, unknown>>
  readonly limit?: number
  readonly offset?: number
}

/**
 * A store call failed.
 *
 * @category errors
 * @since 0.1.0
 */
export class PerspectiveStoreError extends Data.TaggedError("PerspectiveStoreError")<{
  readonly operation: string
  /** Why, as the storage classifies it: match on `reason._tag` (`ConnectionError`, `Refused`, ...). */
  readonly reason: StorageReason.PortReason
  /** What failed, in words (the storage's message). */
  readonly detail: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `${this.operation} failed: ${this.detail}`
  }
}

/**
 * The store's operations (the port: by perspective name, `data` as stored). Applications use the typed
 * accessors ({@link getById}, ...) instead.
 *
 * Names and versions: writes take a perspective's key (`Perspective.name`) and go to that version's rows. Reads
 * take a base name (`Perspective.baseName`: the rows serving reads — in Postgres the `wh_per_<base>` view of the
 * live version; in memory the newest version written) or a name with an explicit version (`balance__v1`,
 * `Perspective.ownRowsName`: that version's own rows, what the worker reads).
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly writeBatch: (writes: ReadonlyArray<Write>) => Effect.Effect<void, PerspectiveStoreError>
  readonly getById: (perspectiveName: string, id: string) => Effect.Effect<Option.Option<Row>, PerspectiveStoreError>
  /** The rows of these streams (absent ones are left out), in one round trip. */
  readonly getMany: (perspectiveName: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Row>, PerspectiveStoreError>
  readonly query: (perspectiveName: string, query?: Query) => Effect.Effect<ReadonlyArray<Row>, PerspectiveStoreError>
}

/**
 * The store as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class PerspectiveStore extends Context.Service<PerspectiveStore, Shape>()("@whizbang/core/PerspectiveStore") {}

const json = (u: unknown) => JSON.stringify(u)

const matches = (data: unknown, where: Readonly<Record<string, unknown>> | undefined) =>
  where === undefined ||
  (typeof data === "object" &&
    data !== null &&
    Object.entries(where).every(([k, v]) => json((data as Record<string, unknown>)[k]) === json(v)))

/**
 * Creates an in-memory store.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<Shape> = Effect.sync(() => {
  const tables = new Map<string, Map<string, Row>>()
  const keyFor = (name: string) => {
    const { baseName, version } = Perspective.parseKey(name)
    return Perspective.keyOf(baseName, version)
  }
  const table = (name: string) => {
    const key = keyFor(name)
    let t = tables.get(key)
    if (t === undefined) tables.set(key, (t = new Map()))
    return t
  }
  // A base name reads the newest version written (memory has no cutover); an explicit version reads its own rows.
  const readable = (name: string) => {
    if (Perspective.parseKey(name).baseName !== name || name.endsWith("__v1")) return tables.get(keyFor(name))
    let best: { readonly version: number; readonly rows: Map<string, Row> } | undefined
    for (const [key, rows] of tables) {
      const parsed = Perspective.parseKey(key)
      if (parsed.baseName === name && (best === undefined || parsed.version > best.version)) best = { version: parsed.version, rows }
    }
    return best?.rows
  }
  return PerspectiveStore.of({
    writeBatch: (writes) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        for (const w of writes) {
          const t = table(w.perspectiveName)
          if (w.action !== "none") {
            t.delete(w.streamId)
            continue
          }
          const previous = t.get(w.streamId)
          t.set(w.streamId, {
            id: w.streamId,
            data: w.data,
            ...(w.metadata === undefined ? {} : { metadata: w.metadata }),
            ...(w.scope === undefined ? {} : { scope: w.scope }),
            version: (previous?.version ?? 0) + 1,
            createdAt: previous?.createdAt ?? now,
            updatedAt: now
          })
        }
      }),
    getById: (perspectiveName, id) => Effect.sync(() => Option.fromNullishOr(readable(perspectiveName)?.get(id))),
    getMany: (perspectiveName, ids) =>
      Effect.sync(() => {
        const t = readable(perspectiveName)
        const found = new Map<string, Row>()
        for (const id of ids) {
          const row = t?.get(id)
          if (row !== undefined) found.set(id, row)
        }
        return found
      }),
    query: (perspectiveName, query = {}) =>
      Effect.sync(() => {
        const rows = [...(readable(perspectiveName)?.values() ?? [])]
          .filter((row) => matches(row.data, query.where))
          .sort((a, b) => a.id.localeCompare(b.id))
        const offset = query.offset ?? 0
        return rows.slice(offset, query.limit === undefined ? undefined : offset + query.limit)
      })
  })
})

/**
 * Provides an in-memory {@link PerspectiveStore}.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<PerspectiveStore> = Layer.effect(PerspectiveStore, makeMemory)

const decoderOf = <M, E>(perspective: Perspective.Perspective<M, E>, operation: string) => {
  const decode = Schema.decodeUnknownEffect(perspective.model)
  return (row: Row): Effect.Effect<Row<M>, PerspectiveStoreError> =>
    decode(row.data).pipe(
      Effect.map((data) => ({ ...row, data })),
      Effect.mapError(
        (cause) =>
          new PerspectiveStoreError({
            operation,
            reason: new StorageReason.UnexpectedRow({ operation, issue: cause.message }),
            detail:
              `the stored model of perspective "${perspective.name}", row ${row.id}, does not decode: ${cause.message}` +
              ` (if "${perspective.baseName}" has versions with another model, it is served by the live one: read through its value)`,
            cause
          })
      )
    )
}

/**
 * The row of stream `id` in `perspective`, its model decoded, with its version and timestamps.
 *
 * @category accessors
 * @since 0.1.0
 */
export const getRow = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  id: string
): Effect.Effect<Option.Option<Row<M>>, PerspectiveStoreError, PerspectiveStore> => {
  const decode = decoderOf(perspective, "getById")
  return Effect.flatMap(PerspectiveStore, (store) => store.getById(perspective.baseName, id)).pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.succeedNone, onSome: (row) => Effect.map(decode(row), Option.some) }))
  )
}

/**
 * The decoded model of stream `id` in `perspective`: `yield* PerspectiveStore.getById(balance, id)`.
 *
 * @category accessors
 * @since 0.1.0
 */
export const getById = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  id: string
): Effect.Effect<Option.Option<M>, PerspectiveStoreError, PerspectiveStore> =>
  Effect.map(
    getRow(perspective, id),
    Option.map((row) => row.data)
  )

/**
 * The decoded models of these streams (absent ones are left out), in one round trip.
 *
 * @category accessors
 * @since 0.1.0
 */
export const getMany = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, M>, PerspectiveStoreError, PerspectiveStore> => {
  const decode = decoderOf(perspective, "getMany")
  return Effect.flatMap(PerspectiveStore, (store) => store.getMany(perspective.baseName, ids)).pipe(
    Effect.flatMap((rows) => Effect.forEach(rows.values(), decode)),
    Effect.map((rows) => new Map(rows.map((row) => [row.id, row.data] as const)))
  )
}

/**
 * The rows of `perspective` matching `query`, models decoded, sorted by id.
 *
 * @category accessors
 * @since 0.1.0
 */
export const query = <M, E>(
  perspective: Perspective.Perspective<M, E>,
  query?: Query
): Effect.Effect<ReadonlyArray<Row<M>>, PerspectiveStoreError, PerspectiveStore> =>
  Effect.flatMap(PerspectiveStore, (store) => store.query(perspective.baseName, query)).pipe(
    Effect.flatMap((rows) => Effect.forEach(rows, decoderOf(perspective, "query")))
  )
