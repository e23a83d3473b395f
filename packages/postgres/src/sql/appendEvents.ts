import type { AppendRequest } from "@whizbang/core"
import { Schema } from "effect"
import { Events as e } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * An append's answer: `outcome`, the stream's `version` before it (bigint) and the ids it wrote (or the
 * supplied ids already stored, for `duplicate`). `busy`: its stream was locked, nothing was written.
 *
 * @category models
 * @since 0.5.0
 */
export const Outcome = Schema.Struct({
  outcome: Schema.Literals(["ok", "wrong_version", "duplicate", "busy"]),
  version: Operation.Int8,
  ids: Schema.NullOr(Schema.Array(Schema.String))
})

/**
 * @category models
 * @since 0.5.0
 */
export type Outcome = typeof Outcome.Type

/**
 * What an append writes besides its events: the (event type, perspective) pairs of the caller's routing, the
 * lifecycle-tracked types of its events, and the partition count.
 *
 * @category models
 * @since 0.5.0
 */
export interface Routing {
  readonly routed: ReadonlyArray<readonly [string, string]>
  readonly lifecycle: ReadonlyArray<string>
  readonly partitionCount: number
}

const expectedOf = (prepared: AppendRequest.PreparedAppend): number | null =>
  prepared.expectedVersion === "any" ? null : prepared.expectedVersion === "noStream" ? 0 : prepared.expectedVersion

/**
 * The append statement: ONE round trip. `wh_append_events` (migrations 0003, 0005, 0006, 0010, 0014) takes the stream's advisory lock,
 * checks the expected version, refuses supplied ids already stored, mints ids above the stream's highest id,
 * writes the events, their work rows (firing the `wh_notify_work` trigger) and lifecycle rows, and returns
 * `outcome` ('ok' | 'wrong_version' | 'duplicate'), `version` (before the append) and `ids`.
 *
 * Params: $1 stream id, $2 expected version (null = any), $3 event ids (proposed or supplied), $4 supplied flags,
 * $5 types, $6 payloads, $7 correlation id (null = the first event's id), $8 causation id, $9 timestamp,
 * $10 scope, $11 routed event types, $12 routed perspective names (parallel arrays), $13 partition count,
 * $14 lifecycle-tracked types of the batch, $15 notify in this transaction (false: the caller wakes the workers
 * after the commit; migration 0006), $16 wait for the stream's lock (false: a stream locked by another transaction
 * answers `outcome` 'busy' with nothing written; migration 0014).
 *
 * @category operations
 * @since 0.5.0
 */
export const appendEvents = Operation.single({
  name: "appendEvents.appendEvents",
  Row: Outcome,
  params: (r: Routing & { readonly append: AppendRequest.PreparedAppend; readonly notify: boolean; readonly waitForLock: boolean }) => [
    r.append.streamId,
    expectedOf(r.append),
    r.append.events.map((e) => e.eventId),
    r.append.events.map((e) => e.supplied),
    r.append.events.map((e) => e.eventType),
    r.append.events.map((e) => JSON.stringify(e.encodedPayload)),
    r.append.correlationId ?? null,
    r.append.causationId,
    r.append.timestamp,
    JSON.stringify(r.append.scope),
    r.routed.map(([type]) => type),
    r.routed.map(([, perspective]) => perspective),
    r.partitionCount,
    r.lifecycle,
    r.notify,
    r.waitForLock
  ],
  prepared: true,
  sql: `SELECT outcome, version, ids FROM wh_append_events(
  $1::uuid, $2::bigint, $3::uuid[], $4::boolean[], $5::text[], $6::jsonb[], $7::text, $8::text, $9::text, $10::jsonb,
  $11::text[], $12::text[], $13::int, $14::text[], $15::boolean, $16::boolean)`
})

/**
 * A stream's version: its highest `stream_version` (0: no event), a bigint.
 *
 * @category operations
 * @since 0.5.0
 */
export const streamVersion = Operation.single({
  name: "appendEvents.streamVersion",
  Row: Schema.Struct({ version: Operation.Int8 }),
  params: (r: { readonly streamId: string }) => [r.streamId],
  prepared: true,
  sql: `SELECT coalesce(max(${e.streamVersion}), 0)::bigint AS version FROM ${e.table} WHERE ${e.streamId} = $1::uuid`
})

/**
 * Several appends in ONE round trip (migration 0013): `wh_append_batch` takes each append's stream (each at most
 * once), expected version (null = any), event count, correlation id, causation id, timestamp and scope, then the
 * events of all of them in order, and returns one row per append: `n` (its position, from 1), `outcome`, `version`
 * (before it) and `ids`, as {@link appendEvents} does for one.
 *
 * Params: $1 stream ids, $2 expected versions, $3 event counts, $4 correlation ids, $5 causation ids, $6 timestamps,
 * $7 scopes; $8 event ids, $9 supplied flags, $10 types, $11 payloads; $12 routed event types, $13 routed perspective
 * names, $14 partition count, $15 lifecycle-tracked types (each the union over the appends).
 *
 * @category operations
 * @since 0.5.0
 */
export const appendBatch = Operation.findAll({
  name: "appendEvents.appendBatch",
  Row: Schema.Struct({ ...Outcome.fields, n: Schema.Number }),
  params: (r: Routing & { readonly appends: ReadonlyArray<AppendRequest.PreparedAppend> }) => {
    const events = r.appends.flatMap((a) => a.events)
    return [
      r.appends.map((a) => a.streamId),
      r.appends.map(expectedOf),
      r.appends.map((a) => a.events.length),
      r.appends.map((a) => a.correlationId ?? null),
      r.appends.map((a) => a.causationId),
      r.appends.map((a) => a.timestamp),
      r.appends.map((a) => JSON.stringify(a.scope)),
      events.map((e) => e.eventId),
      events.map((e) => e.supplied),
      events.map((e) => e.eventType),
      events.map((e) => JSON.stringify(e.encodedPayload)),
      r.routed.map(([type]) => type),
      r.routed.map(([, perspective]) => perspective),
      r.partitionCount,
      r.lifecycle
    ]
  },
  prepared: true,
  sql: `SELECT n, outcome, version, ids FROM wh_append_batch(
  $1::uuid[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::jsonb[],
  $8::uuid[], $9::boolean[], $10::text[], $11::jsonb[], $12::text[], $13::text[], $14::int, $15::text[])`
})
