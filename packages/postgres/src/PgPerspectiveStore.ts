/**
 * The Postgres `PerspectiveStore`: one table per perspective version, `wh_per_<base>__v<N>` (id, data, metadata,
 * scope, created_at, updated_at, version), created at start-up when missing, written set-based; reads by a base name
 * go through `wh_per_<base>`, a view of the live version (see `PgPerspectiveVersions`), by id or by JSON
 * containment (`data @> filter`).
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { type DefinitionErrors, Perspective, PerspectiveStore } from "@whizbang/core"
import { ddlLock, ensureBase } from "./internal/versionTables.js"
import { writeModels } from "./internal/writeModels.js"
import { PgClient, prepared } from "./PgClient.js"
import type { PostgresError } from "./PostgresError.js"
import { SchemaReady } from "./SchemaReady.js"
import type { VersionTableConflict } from "./VersionError.js"
import * as Rows from "./sql/perspectiveRows.js"

interface RowRecord {
  readonly id: string
  readonly data: unknown
  readonly metadata: unknown
  readonly scope: unknown
  readonly version: number
  readonly created_at: Date
  readonly updated_at: Date
}

const toRow = (r: RowRecord): PerspectiveStore.Row => ({
  id: r.id,
  data: r.data,
  metadata: r.metadata,
  scope: r.scope,
  version: r.version,
  createdAt: r.created_at.getTime(),
  updatedAt: r.updated_at.getTime()
})

const storeError = (operation: string) => (cause: PostgresError) =>
  new PerspectiveStore.PerspectiveStoreError({ operation, reason: cause.message, cause })

/**
 * Creates the tables of these perspectives (keys) when missing, and the `wh_per_<base>` views; a table of a
 * pre-versions release becomes version 1's table. Names are validated (`Perspective.validateName`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const ensureTables = (
  perspectiveNames: ReadonlyArray<string>
): Effect.Effect<void, DefinitionErrors.InvalidPerspectiveName | PostgresError | VersionTableConflict, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const names = yield* Effect.forEach(perspectiveNames, Perspective.validateName)
    const byBase = new Map<string, Array<string>>()
    for (const name of names) {
      const { baseName } = Perspective.parseKey(name)
      byBase.set(baseName, [...(byBase.get(baseName) ?? []), name])
    }
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* client.query(ddlLock)
        for (const [baseName, keys] of byBase) yield* ensureBase(client, baseName, keys)
      })
    )
  })

/**
 * Builds the store; perspective names are validated before any SQL names a table.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.gen(function* () {
  const client = yield* PgClient
  const checked = (name: string) =>
    Perspective.isValidName(name)
      ? Effect.succeed(name)
      : Effect.fail(
          new PerspectiveStore.PerspectiveStoreError({
            operation: "perspective name",
            reason: `invalid perspective name ${JSON.stringify(name)}`
          })
        )
  return PerspectiveStore.PerspectiveStore.of({
    writeBatch: (writes) =>
      Effect.forEach(writes, (w) => checked(w.perspectiveName), { discard: true }).pipe(
        Effect.andThen(
          client
            .withTransaction(
              writeModels(
                client,
                writes.map((w) => ({ ...w, eventsApplied: 1 }))
              )
            )
            .pipe(Effect.asVoid, Effect.mapError(storeError("writeBatch")))
        )
      ),
    getById: (name, id) =>
      checked(name).pipe(
        Effect.andThen(client.query<RowRecord>(Rows.selectRows(name), [[id]], prepared).pipe(Effect.mapError(storeError("getById")))),
        Effect.map((rows) => Option.fromNullishOr(rows[0]).pipe(Option.map(toRow)))
      ),
    getMany: (name, ids) =>
      checked(name).pipe(
        Effect.andThen(client.query<RowRecord>(Rows.selectRows(name), [ids], prepared).pipe(Effect.mapError(storeError("getMany")))),
        Effect.map((rows) => new Map(rows.map((r) => [r.id, toRow(r)])))
      ),
    query: (name, query = {}) =>
      checked(name).pipe(
        Effect.andThen(
          client
            .query<RowRecord>(Rows.queryRows(name), [JSON.stringify(query.where ?? {}), query.limit ?? 1000, query.offset ?? 0], prepared)
            .pipe(Effect.mapError(storeError("query")))
        ),
        Effect.map((rows) => rows.map(toRow))
      )
  })
})

/**
 * The store as a layer; creates the tables of `perspectiveNames` (keys) after the schema is migrated.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  perspectiveNames: ReadonlyArray<string>
): Layer.Layer<
  PerspectiveStore.PerspectiveStore,
  DefinitionErrors.InvalidPerspectiveName | PostgresError | VersionTableConflict,
  PgClient | SchemaReady
> =>
  Layer.effect(
    PerspectiveStore.PerspectiveStore,
    Effect.gen(function* () {
      yield* SchemaReady
      yield* ensureTables(perspectiveNames)
      return yield* make
    })
  )
