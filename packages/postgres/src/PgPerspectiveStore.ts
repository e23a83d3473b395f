/**
 * The Postgres `PerspectiveStore`: one table per perspective version, `wh_per_<base>__v<N>` (id, data, metadata,
 * scope, created_at, updated_at, version), created at start-up when missing, written set-based; reads by a base name
 * go through `wh_per_<base>`, a view of the live version (see `PgPerspectiveVersions`), by id or by JSON
 * containment (`data @> filter`). Reads by id outside a caller's transaction run at most two statements per
 * perspective at once; the reads that arrive meanwhile go together in the next one, sent after they were asked, so
 * each still sees every commit that ended before it was asked.
 *
 * @since 0.1.0
 */
import { Effect, Exit, Layer, Option } from "effect"
import { type DefinitionErrors, Perspective, PerspectiveStore, StorageReason } from "@whizbang/core"
import * as CoalescingQueue from "./internal/coalescingQueue.js"
import * as Transaction from "./internal/transaction.js"
import { ddlLock, ensureBase, isLaidOut, readLayout } from "./internal/versionTables.js"
import { writeModels } from "./internal/writeModels.js"
import { PgClient } from "./PgClient.js"
import type { PostgresError } from "./PostgresError.js"
import { SchemaReady } from "./SchemaReady.js"
import type { VersionTableConflict } from "./VersionError.js"
import * as Rows from "./sql/perspectiveRows.js"

const toRow = (r: typeof Rows.Row.Type): PerspectiveStore.Row => ({
  id: r.id,
  data: r.data,
  metadata: r.metadata,
  scope: r.scope,
  version: r.version,
  createdAt: r.createdAt.getTime(),
  updatedAt: r.updatedAt.getTime()
})

/**
 * Reads by id of one perspective outside a caller's transaction: at most this many statements at once; the reads
 * that arrive while both are busy go together in the next one (`id = ANY(...)`), as appends do in `PgEventStore`.
 */
const maxConcurrentReads = 2

/** The most ids one coalesced read asks for. */
const maxReadsPerStatement = 500

/** Perspective names with a queue of their own; reads of further names (any valid name may be asked) go alone. */
const maxQueuedPerspectives = 256

/**
 * The ids that may share a statement: written as Postgres writes them back, so each row finds its reader. Any other
 * text (upper case, braces, not a uuid) is read alone and keeps its own answer or error.
 */
const canonicalUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const storeError = (operation: string) => (cause: PostgresError) =>
  new PerspectiveStore.PerspectiveStoreError({ operation, reason: cause.reason, detail: cause.message, cause })

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
    // Laid out already (every start after the first): one read, no lock, no DDL.
    if (isLaidOut(yield* readLayout(client, byBase), byBase)) return
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* ddlLock(client)
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
            reason: new StorageReason.InvalidRequest(),
            detail: `invalid perspective name ${JSON.stringify(name)}`
          })
        )
  /** The rows of these ids (those that exist), by id as Postgres writes it. */
  const rowsById = (name: string, ids: ReadonlyArray<string>, operation: string) =>
    Rows.selectRows(client, { name, ids }).pipe(
      Effect.mapError(storeError(operation)),
      Effect.map((rows) => new Map(rows.map((r) => [r.id, toRow(r)])))
    )
  // One queue per perspective name (already validated). A read waits only while both statements of its perspective
  // are busy, and goes in a statement sent after it arrived: it sees every commit that ended before it was asked.
  const readers = new Map<
    string,
    (id: string) => Effect.Effect<Option.Option<PerspectiveStore.Row>, PerspectiveStore.PerspectiveStoreError>
  >()
  // One id's row; an id Postgres writes back in another form (upper case, braces) is the map's only key.
  const alone = (name: string, id: string) =>
    Effect.map(rowsById(name, [id], "getById"), (rows) => Option.fromNullishOr(rows.values().next().value))
  const readerOf = (name: string) => {
    const existing = readers.get(name)
    if (existing !== undefined) return existing
    if (readers.size >= maxQueuedPerspectives) return (id: string) => alone(name, id)
    const reader = CoalescingQueue.make<string, Option.Option<PerspectiveStore.Row>, PerspectiveStore.PerspectiveStoreError>({
      maxInFlight: maxConcurrentReads,
      maxBatch: maxReadsPerStatement,
      key: (id) => id,
      one: (id) => alone(name, id),
      many: (ids) =>
        Effect.match(rowsById(name, ids, "getById"), {
          onFailure: (error) => ids.map(() => Exit.fail(error)),
          onSuccess: (rows) => ids.map((id) => Exit.succeed(Option.fromNullishOr(rows.get(id))))
        })
    })
    readers.set(name, reader)
    return reader
  }
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
    // Inside a caller's transaction a read is the transaction's own statement (it must see its writes). Outside, reads
    // of one perspective share a statement while both of its statements are busy.
    getById: (name, id) =>
      Effect.gen(function* () {
        yield* checked(name)
        const inTransaction = (yield* Transaction.currentClient(client))._tag === "Some"
        return yield* !canonicalUuid.test(id) || inTransaction ? alone(name, id) : readerOf(name)(id)
      }),
    getMany: (name, ids) => Effect.andThen(checked(name), rowsById(name, ids, "getMany")),
    query: (name, query = {}) =>
      checked(name).pipe(
        Effect.andThen(
          Rows.queryRows(client, {
            name,
            where: JSON.stringify(query.where ?? {}),
            limit: query.limit ?? 1000,
            offset: query.offset ?? 0
          }).pipe(Effect.mapError(storeError("query")))
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

/**
 * {@link layer} over tables laid out already by `PgPerspectiveVersions.register`, which the pipeline runs first with
 * the same keys (its slow path lays out every key it registers; its fast path returns only when they are laid out):
 * the names are checked, and no statement is sent (every tenant's start read the layout twice).
 *
 * @internal
 */
export const layerRegistered = (
  perspectiveNames: ReadonlyArray<string>
): Layer.Layer<PerspectiveStore.PerspectiveStore, DefinitionErrors.InvalidPerspectiveName, PgClient | SchemaReady> =>
  Layer.effect(
    PerspectiveStore.PerspectiveStore,
    Effect.gen(function* () {
      yield* SchemaReady
      yield* Effect.forEach(perspectiveNames, Perspective.validateName, { discard: true })
      return yield* make
    })
  )
