/**
 * The PerspectiveStore port: the read-model rows of every perspective (`wh_per_<name>` tables).
 *
 * One row per stream: the encoded model (`data`), plus metadata, scope, timestamps and a version that grows
 * with every write. `writeBatch` applies many upserts and deletions in one call (one transaction in Postgres).
 * `query` filters by top-level field equality on `data` (`data @> $1` in Postgres), sorted by id, paged.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import type * as Perspective from "./Perspective.js"

/**
 * A stored read-model row.
 *
 * @category models
 * @since 0.1.0
 */
export interface Row {
  /** The stream id. */
  readonly id: string
  readonly data: unknown
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
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `${this.operation} failed: ${this.reason}`
  }
}

/**
 * The store's operations.
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
  (typeof data === "object" && data !== null &&
    Object.entries(where).every(([k, v]) => json((data as Record<string, unknown>)[k]) === json(v)))

/**
 * Creates an in-memory store.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<Shape> = Effect.sync(() => {
  const tables = new Map<string, Map<string, Row>>()
  const table = (name: string) => {
    let t = tables.get(name)
    if (t === undefined) tables.set(name, (t = new Map()))
    return t
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
    getById: (perspectiveName, id) => Effect.sync(() => Option.fromNullishOr(tables.get(perspectiveName)?.get(id))),
    getMany: (perspectiveName, ids) =>
      Effect.sync(() => {
        const t = tables.get(perspectiveName)
        const found = new Map<string, Row>()
        for (const id of ids) {
          const row = t?.get(id)
          if (row !== undefined) found.set(id, row)
        }
        return found
      }),
    query: (perspectiveName, query = {}) =>
      Effect.sync(() => {
        const rows = [...(tables.get(perspectiveName)?.values() ?? [])]
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
