/**
 * Writes read-model rows set-based: one upsert and one delete statement per perspective, whatever the batch size.
 * Runs on the caller's transaction when there is one (the completion transaction).
 */
import { Array as Arr, Effect } from "effect"
import type { PgClient } from "../PgClient.js"
import type { PostgresError } from "../PostgresError.js"
import * as Rows from "../sql/perspectiveRows.js"

export interface ModelRowWrite {
  readonly perspectiveName: string
  readonly streamId: string
  readonly data: unknown
  readonly action: "none" | "delete" | "purge"
  readonly metadata?: unknown
  readonly scope?: unknown
  readonly eventsApplied: number
}

/** A written row's version (its applied-event count) after the write. */
export interface WrittenVersion {
  readonly perspectiveName: string
  readonly streamId: string
  readonly version: number
}

/** Returns the new version of every upserted row (deleted rows have none). */
export const writeModels = (
  client: PgClient["Service"],
  writes: ReadonlyArray<ModelRowWrite>
): Effect.Effect<ReadonlyArray<WrittenVersion>, PostgresError> => {
  const byPerspective = Arr.groupBy(writes, (w) => w.perspectiveName)
  const versions: Array<WrittenVersion> = []
  return Effect.as(
    Effect.forEach(
      Object.entries(byPerspective),
      ([name, list]) =>
        Effect.gen(function* () {
          const upserts = list.filter((w) => w.action === "none")
          const deletes = list.filter((w) => w.action !== "none")
          if (upserts.length > 0) {
            const rows = yield* Rows.upsertRows(client, {
              name,
              ids: upserts.map((w) => w.streamId),
              data: upserts.map((w) => JSON.stringify(w.data)),
              metadata: upserts.map((w) => JSON.stringify(w.metadata ?? {})),
              scope: upserts.map((w) => JSON.stringify(w.scope ?? {})),
              applied: upserts.map((w) => w.eventsApplied)
            })
            for (const r of rows) versions.push({ perspectiveName: name, streamId: r.id, version: r.version })
          }
          if (deletes.length > 0) yield* Rows.deleteRows(client, { name, ids: deletes.map((w) => w.streamId) })
        }),
      { discard: true }
    ),
    versions
  )
}
