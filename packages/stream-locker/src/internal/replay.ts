/**
 * The fold and the commit shared by rewinds and bootstraps: read a stream's events for one perspective from
 * `wh_events` in event-id order, decode them with the EventRegistry, fold them from a starting model in chunks of
 * the snapshot interval (a snapshot at each full chunk), then write model, snapshots and covered work rows.
 */
import type { EventRegistry, PerspectiveRunner } from "@whizbang/core"
import { type PgClient, PgPerspectiveSnapshots, type PostgresError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect, Option } from "effect"
import { RebuildFailed } from "../StreamLockError.js"

const Replays = PgOperations.Replays
type EventRow = PgOperations.Replays.EventRow

export interface Fold {
  readonly model: unknown
  readonly action: "none" | "delete" | "purge"
  readonly last: EventRow | undefined
  /** Replayed event ids (after the start), in order. */
  readonly eventIds: ReadonlyArray<string>
  readonly snapshots: ReadonlyArray<PgPerspectiveSnapshots.Snapshot>
}

export interface FoldInput {
  readonly client: PgClient.PgClient["Service"]
  readonly events: EventRegistry.EventRegistry
  readonly runner: PerspectiveRunner.PerspectiveRunner
  readonly streamId: string
  readonly start: Option.Option<{ readonly eventId: string; readonly data: unknown }>
  readonly every: number
  readonly operation: "rewind" | "bootstrap"
}

export const fold = (input: FoldInput): Effect.Effect<Fold, RebuildFailed | PostgresError.PostgresError> =>
  Effect.gen(function* () {
    const { client, runner, streamId } = input
    const perspectiveName = runner.perspectiveName
    const failed = (reason: string, cause?: unknown) =>
      new RebuildFailed({ operation: input.operation, streamId, perspectiveName, reason, ...(cause === undefined ? {} : { cause }) })
    const after = Option.match(input.start, { onNone: () => null, onSome: (s) => s.eventId })
    const rows = yield* Replays.readEvents(client, { streamId, eventTypes: runner.eventTypes, afterEventId: after, perspectiveName })
    let model: unknown = Option.match(input.start, { onNone: () => undefined, onSome: (s) => s.data })
    let action: Fold["action"] = "none"
    const snapshots: Array<PgPerspectiveSnapshots.Snapshot> = []
    for (let from = 0; from < rows.length; from += input.every) {
      const chunk = rows.slice(from, from + input.every)
      const envelopes = yield* Effect.forEach(chunk, (row) =>
        input.events.decode(row.eventType, row.payload, row.eventId).pipe(
          Effect.mapError((e) => failed(`event ${row.eventId} does not decode: ${e.message}`, e)),
          Effect.map((payload) => ({
            eventId: row.eventId,
            streamId,
            streamVersion: row.streamVersion,
            eventType: row.eventType,
            payload,
            metadata: row.metadata ?? {},
            scope: row.scope ?? {}
          }))
        )
      )
      const outcome = yield* runner.run(streamId, model, envelopes)
      if (outcome.failure !== undefined) return yield* failed(outcome.failure.message, outcome.failure)
      model = outcome.model
      action = outcome.action
      if (chunk.length === input.every) snapshots.push({ streamId, perspectiveName, eventId: chunk.at(-1)!.eventId, data: model })
    }
    return { model, action, last: rows.at(-1), eventIds: rows.map((r) => r.eventId), snapshots }
  })

/**
 * Inside the caller's transaction: deletes the covered work rows, writes (or deletes) the model row and the
 * snapshots. Returns the number of covered work rows (events never applied before).
 */
export const commit = (
  client: PgClient.PgClient["Service"],
  streamId: string,
  perspectiveName: string,
  result: Fold,
  keep: number,
  /** How much the row's version (applied-event count) grows; default: the covered work rows. */
  versionIncrement?: number
): Effect.Effect<number, PostgresError.PostgresError> =>
  Effect.gen(function* () {
    const covered = yield* Replays.deleteCoveredWork(client, { streamId, perspectiveName, eventIds: result.eventIds })
    const last = result.last
    if (last !== undefined) {
      if (result.action === "none") {
        yield* Replays.upsertModel(client, {
          perspectiveName,
          streamId,
          data: JSON.stringify(result.model),
          metadata: JSON.stringify({ ...((last.metadata as object | null) ?? {}), eventId: last.eventId, eventType: last.eventType }),
          scope: JSON.stringify(last.scope ?? {}),
          newlyApplied: versionIncrement ?? covered
        })
      } else {
        yield* Replays.deleteModel(client, { perspectiveName, streamId })
      }
    }
    yield* PgPerspectiveSnapshots.write(client, result.snapshots, keep)
    return covered
  })
