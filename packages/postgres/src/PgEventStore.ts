/**
 * The PostgreSQL event store: appends events (and their perspective work rows) with optimistic concurrency in
 * ONE round trip — the `wh_append_events` function (migration 0003) locks the stream, checks the version, mints
 * the ids after the lock (so a stream's id order is its version order) and writes everything — and reads streams
 * back decoded.
 *
 * Validation and encoding are `AppendRequest.prepare` from `@whizbang/core`, shared with the in-memory store,
 * so both accept and refuse exactly the same input; both pass `EventStoreContract`.
 *
 * Workers are woken by `NOTIFY wh_work`: an append inside a caller's transaction notifies in that transaction's
 * commit; any other append commits without one and the store notifies right after (one notification in flight per
 * process, so concurrent appends never queue on Postgres's notification lock at commit).
 *
 * **Gotchas**: tables must exist — provide `PgMigrator.layer` (or run migrations) before appending.
 *
 * @since 0.1.0
 */
import { AppendRequest, type Envelope, EventStore, EventStoreError, EventRegistry } from "@whizbang/core"
import { Effect, Layer } from "effect"
import { PgClient, prepared as preparedStatement } from "./PgClient.js"
import type { PostgresError } from "./PostgresError.js"
import * as Transaction from "./internal/transaction.js"
import * as WorkWakeUp from "./internal/workWakeUp.js"
import * as AppendSql from "./sql/appendEvents.js"
import * as ReadSql from "./sql/readStream.js"

/**
 * Options of the Postgres event store.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly registry: EventRegistry.EventRegistry
  /** The perspectives that handle an event type: one work row is written per perspective. Default: none. */
  readonly routing?: (eventType: string) => ReadonlyArray<string>
  /** Stream partitions for work distribution. Default 10,000. */
  readonly partitionCount?: number
  /** Event types with `PostAllPerspectives` / `PostLifecycle` receptors: their lifecycle is tracked durably. */
  readonly lifecycleTypes?: (eventType: string) => boolean
}

interface EventRow {
  readonly event_id: string
  readonly stream_id: string
  readonly stream_version: number
  readonly event_type: string
  readonly payload: unknown
  readonly metadata: Envelope.EventMetadata
  readonly scope: Envelope.EventScope | null
}

const unavailable = (cause: PostgresError) => new EventStoreError.EventStoreUnavailable({ cause })

/**
 * Builds the store on the `PgClient` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<EventStore.EventStore["Service"], never, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const { registry } = options
    const routing = options.routing ?? (() => [])
    const partitionCount = options.partitionCount ?? 10_000
    const lifecycleTypes = options.lifecycleTypes ?? (() => false)
    const wakeWorkers = WorkWakeUp.make(client)

    const append: EventStore.EventStore["Service"]["append"] = (streamId, events, appendOptions) =>
      Effect.gen(function* () {
        const prepared = yield* AppendRequest.prepare(registry, streamId, events, appendOptions)
        const batchTypes = [...new Set(prepared.events.map((e) => e.eventType))]
        const routedTypes: Array<string> = []
        const routedPerspectives: Array<string> = []
        for (const type of batchTypes) {
          for (const perspective of routing(type)) {
            routedTypes.push(type)
            routedPerspectives.push(perspective)
          }
        }
        const supplied = prepared.events.filter((e) => e.supplied).map((e) => e.eventId)
        // Inside a caller's transaction the work is visible only at its commit: the NOTIFY rides in it. Otherwise
        // the append commits without one and the workers are woken after the commit (see WorkWakeUp).
        const inTransaction = (yield* Transaction.currentClient(client.pool))._tag === "Some"
        const rows = yield* client
          .query<{ outcome: string; version: string; ids: ReadonlyArray<string> | null }>(
            AppendSql.appendEvents,
            [
              streamId,
              prepared.expectedVersion === "any" ? null : prepared.expectedVersion === "noStream" ? 0 : prepared.expectedVersion,
              prepared.events.map((e) => e.eventId),
              prepared.events.map((e) => e.supplied),
              prepared.events.map((e) => e.eventType),
              prepared.events.map((e) => JSON.stringify(e.encodedPayload)),
              prepared.correlationId ?? null,
              prepared.causationId,
              prepared.timestamp,
              JSON.stringify(prepared.scope),
              routedTypes,
              routedPerspectives,
              partitionCount,
              batchTypes.filter(lifecycleTypes),
              inTransaction
            ],
            preparedStatement
          )
          .pipe(
            // A supplied id stored by a concurrent append to another stream since the function's check.
            Effect.catchIf(
              (error) => error.reason._tag === "UniqueViolation" && error.reason.constraint === "wh_events_pkey" && supplied.length > 0,
              () => Effect.fail(new EventStoreError.DuplicateEventId({ eventIds: supplied }))
            ),
            Effect.catchTag("PostgresError", (error) => Effect.fail(unavailable(error)))
          )
        const row = rows[0]
        if (row === undefined) return yield* Effect.die(new Error("wh_append_events returned no row"))
        const before = Number(row.version)
        if (row.outcome === "wrong_version") {
          const expected = prepared.expectedVersion === "noStream" ? "noStream" : (prepared.expectedVersion as number)
          return yield* new EventStoreError.WrongExpectedVersion({ streamId, expected, actual: before })
        }
        if (row.outcome === "duplicate") return yield* new EventStoreError.DuplicateEventId({ eventIds: row.ids ?? supplied })
        const ids = row.ids ?? []
        // Even with no route of its own: the registry may have routed the events to versions this process does not know.
        if (!inTransaction) yield* wakeWorkers
        return { streamId, nextExpectedVersion: before + ids.length, events: AppendRequest.envelopes(prepared, ids, before) }
      })

    const readStream: EventStore.EventStore["Service"]["readStream"] = (streamId, readOptions) =>
      Effect.gen(function* () {
        const { afterVersion, limit } = yield* EventStore.checkRead(streamId, readOptions)
        const rows = yield* client
          .query<EventRow>(ReadSql.readStream, [streamId, afterVersion, limit ?? null], preparedStatement)
          .pipe(Effect.mapError(unavailable))
        return yield* Effect.forEach(rows, (row) =>
          registry.decode(row.event_type, row.payload, row.event_id).pipe(
            Effect.map(
              (payload): Envelope.Envelope => ({
                eventId: row.event_id,
                streamId: row.stream_id,
                streamVersion: row.stream_version,
                eventType: row.event_type,
                payload,
                metadata: row.metadata,
                scope: row.scope ?? {}
              })
            )
          )
        )
      })

    const streamVersion: EventStore.EventStore["Service"]["streamVersion"] = (streamId) =>
      EventStore.checkRead(streamId).pipe(
        Effect.flatMap(() =>
          client.query<{ version: string }>(AppendSql.streamVersion, [streamId], preparedStatement).pipe(Effect.mapError(unavailable))
        ),
        Effect.map(([row]) => Number(row?.version ?? 0))
      )

    return EventStore.EventStore.of({ append, readStream, streamVersion })
  })

/**
 * The Postgres event store as a layer; building it validates the registry (`EventRegistry.validate`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<EventStore.EventStore, EventRegistry.InvalidEventDefinition, PgClient> =>
  Layer.effect(EventStore.EventStore, Effect.andThen(EventRegistry.validate(options.registry), make(options)))
