/**
 * Writes read-model rows set-based: one upsert and one delete statement per perspective, whatever the batch size.
 * Runs on the caller's transaction when there is one (the completion transaction).
 */
import { Effect } from "effect"
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

export const writeModels = (client: PgClient["Service"], writes: ReadonlyArray<ModelRowWrite>): Effect.Effect<void, PostgresError> => {
  const byPerspective = new Map<string, Array<ModelRowWrite>>()
  for (const w of writes) {
    const list = byPerspective.get(w.perspectiveName)
    if (list === undefined) byPerspective.set(w.perspectiveName, [w])
    else list.push(w)
  }
  return Effect.forEach(byPerspective, ([name, list]) =>
    Effect.gen(function* () {
      const upserts = list.filter((w) => w.action === "none")
      const deletes = list.filter((w) => w.action !== "none")
      if (upserts.length > 0) {
        yield* client.query(Rows.upsertRows(name), [
          upserts.map((w) => w.streamId),
          upserts.map((w) => JSON.stringify(w.data)),
          upserts.map((w) => JSON.stringify(w.metadata ?? {})),
          upserts.map((w) => JSON.stringify(w.scope ?? {})),
          upserts.map((w) => w.eventsApplied)
        ])
      }
      if (deletes.length > 0) yield* client.query(Rows.deleteRows(name), [deletes.map((w) => w.streamId)])
    }), { discard: true })
}
