/**
 * The PostgreSQL event store: appends events (and their perspective work rows) with optimistic concurrency in
 * ONE round trip — the `wh_append_events` function (migration 0003) locks the stream, checks the version, mints
 * the ids after the lock (so a stream's id order is its version order) and writes everything — and reads streams
 * back decoded.
 *
 * Concurrent appends go together: at most two appends of a store run at once outside callers' transactions, and
 * the appends that arrive meanwhile wait and then go in one `wh_append_batch` call (migration 0013: one round trip
 * and one commit for all of them, at most 64 appends and 1,000 events, never two of one stream). A lone appender's
 * appends never wait, and an append of more than 100 events goes alone, outside the two slots, so bulk appends hold
 * up no other append. Each append keeps its own answer (`WrongExpectedVersion`, `DuplicateEventId`, its ids), and
 * an append in a slot never waits for its stream's lock (alone, `wh_append_events` with `p_wait_for_lock` false,
 * migration 0014; together, the call's try-locks): an append whose stream is locked (by a caller's open transaction)
 * is answered busy, with nothing written, and run again outside the slots, where it waits.
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
import { PgClient } from "./PgClient.js"
import * as CoalescingQueue from "./internal/coalescingQueue.js"
import * as EventAppends from "./internal/eventAppends.js"
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

/**
 * Appends of one store in flight at once, outside callers' transactions. The appends that arrive while all are in
 * flight wait and go together, one `wh_append_batch` call (one transaction) per free slot. Two, not one: with one,
 * 8 appenders of one event beside 2 appenders of 100 events had a p99 of 9.1-12.6 ms against 6.3-7.2 ms with two;
 * with one event only, one slot was not clearly faster (interleaved runs, PostgreSQL 15: medians 4,945 and 4,758
 * appends/s, each spanning about 1,000).
 */
const maxConcurrentAppends = 2

/** At most this many appends go in one `wh_append_batch` call. */
const maxAppendsPerBatch = 64

/**
 * At most this many events go in one `wh_append_batch` call (an append that waited alone may have up to
 * `maxEventsToWait`), so an append that waits for a slot waits for a call of at most about this size.
 */
const maxEventsPerBatch = 1_000

/**
 * An append of more events than this goes alone, outside the slots: a bulk append never holds up the appends that
 * would wait for its slot.
 */
const maxEventsToWait = 100

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
    const wakeWorkers = WorkWakeUp.make(client)
    const { requestOf, appendOne, appendMany } = EventAppends.make(client, {
      routing: options.routing ?? (() => []),
      partitionCount: options.partitionCount ?? 10_000,
      lifecycleTypes: options.lifecycleTypes ?? (() => false)
    })

    const submit = CoalescingQueue.make<EventAppends.Request, EventAppends.OutcomeRow, EventAppends.AppendFailure>({
      maxInFlight: maxConcurrentAppends,
      maxBatch: maxAppendsPerBatch,
      maxWeight: maxEventsPerBatch,
      weight: (request) => request.prepared.events.length,
      key: (request) => request.prepared.streamId,
      // Alone in a slot, an append still never waits for its stream's lock: one waiting in each slot would hold up
      // every other append of the process until the lock's holder commits. A locked stream answers 'busy', and the
      // append runs again outside the slots, where it waits.
      one: (request) => appendOne(request, false, false),
      many: appendMany
    })

    const append: EventStore.EventStore["Service"]["append"] = (streamId, events, appendOptions) =>
      Effect.gen(function* () {
        const prepared = yield* AppendRequest.prepare(registry, streamId, events, appendOptions)
        const request = requestOf(prepared)
        // Inside a caller's transaction the work is visible only at its commit: the NOTIFY rides in it, and the
        // append is the transaction's own statement. Otherwise the append commits without one, alone or with the
        // appends that waited with it, and the workers are woken after the commit (see WorkWakeUp).
        const inTransaction = (yield* Transaction.currentClient(client))._tag === "Some"
        const first = yield* inTransaction
          ? appendOne(request, true, true)
          : prepared.events.length > maxEventsToWait
            ? appendOne(request, false, true)
            : submit(request)
        // Its stream's lock was held (by a caller's transaction or another call): alone, it waits for the lock there.
        const row = first.outcome === "busy" ? yield* appendOne(request, false, true) : first
        const before = Number(row.version)
        if (row.outcome === "wrong_version") {
          const expected = prepared.expectedVersion === "noStream" ? "noStream" : (prepared.expectedVersion as number)
          return yield* new EventStoreError.WrongExpectedVersion({ streamId, expected, actual: before })
        }
        if (row.outcome === "duplicate") return yield* new EventStoreError.DuplicateEventId({ eventIds: row.ids ?? request.supplied })
        const ids = row.ids ?? []
        // Even with no route of its own: the registry may have routed the events to versions this process does not know.
        if (!inTransaction) yield* wakeWorkers
        return { streamId, nextExpectedVersion: before + ids.length, events: AppendRequest.envelopes(prepared, ids, before) }
      })

    const readStream: EventStore.EventStore["Service"]["readStream"] = (streamId, readOptions) =>
      Effect.gen(function* () {
        const { afterVersion, limit } = yield* EventStore.checkRead(streamId, readOptions)
        const rows = yield* ReadSql.readStream(client, { streamId, afterVersion, limit: limit ?? null }).pipe(
          Effect.mapError(EventAppends.unavailable)
        )
        return yield* Effect.forEach(rows, (row) =>
          registry.decode(row.eventType, row.payload, row.eventId).pipe(
            Effect.map(
              (payload): Envelope.Envelope => ({
                eventId: row.eventId,
                streamId: row.streamId,
                streamVersion: row.streamVersion,
                eventType: row.eventType,
                payload,
                // As `wh_append_events` wrote them (from a validated `AppendRequest`): not decoded again on every read.
                metadata: row.metadata as Envelope.EventMetadata,
                scope: (row.scope ?? {}) as Envelope.EventScope
              })
            )
          )
        )
      })

    const streamVersion: EventStore.EventStore["Service"]["streamVersion"] = (streamId) =>
      EventStore.checkRead(streamId).pipe(
        Effect.flatMap(() => AppendSql.streamVersion(client, { streamId }).pipe(Effect.mapError(EventAppends.unavailable))),
        Effect.map((row) => Number(row.version))
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
