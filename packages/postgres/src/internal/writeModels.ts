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
  const byPerspective = new Map<string, Array<ModelRowWrite>>()
  for (const w of writes) {
    const list = byPerspective.get(w.perspectiveName)
    if (list === undefined) byPerspective.set(w.perspectiveName, [w])
    else list.push(w)
  }
  const versions: Array<WrittenVersion> = []
  return Effect.as(
    Effect.forEach(
      byPerspective,
      ([name, list]) =>
        Effect.gen(function* () {
          const upserts = list.filter((w) => w.action === "none")
          const deletes = list.filter((w) => w.action !== "none")
          if (upserts.length > 0) {
            const rows = yield* client.query<{ id: string; version: number }>(Rows.upsertRows(name), [
              upserts.map((w) => w.streamId),
              upserts.map((w) => JSON.stringify(w.data)),
              upserts.map((w) => JSON.stringify(w.metadata ?? {})),
              upserts.map((w) => JSON.stringify(w.scope ?? {})),
              upserts.map((w) => w.eventsApplied)
            ])
            for (const r of rows) versions.push({ perspectiveName: name, streamId: r.id, version: r.version })
          }
          if (deletes.length > 0) yield* client.query(Rows.deleteRows(name), [deletes.map((w) => w.streamId)])
        }),
      { discard: true }
    ),
    versions
  )
}

/**
 * The same writes as parts of a larger statement (the completion's `finishCompletion`): one upsert CTE and one delete
 * CTE per perspective, numbered from parameter `firstParam`, and a select-list expression that runs them and returns
 * the written rows as JSON (`[{ p, id, v }]`, `v` null for a deleted row). The perspective name is a validated
 * identifier (see `perspectiveRows`), so it is spliced as a literal. With `everyPerspective` (in a fixed order, a
 * superset of the writes' perspectives), every one of them gets both CTEs, empty or not, so every batch has the same
 * statement text (a prepared statement); without it, only the parts the writes need.
 */
export interface ModelWriteParts {
  readonly ctes: ReadonlyArray<string>
  readonly params: ReadonlyArray<unknown>
  readonly versions: string
}

export const modelWriteParts = (
  writes: ReadonlyArray<ModelRowWrite>,
  firstParam: number,
  everyPerspective?: ReadonlyArray<string>
): ModelWriteParts => {
  const byPerspective = new Map<string, Array<ModelRowWrite>>((everyPerspective ?? []).map((name) => [name, []]))
  for (const w of writes) {
    const list = byPerspective.get(w.perspectiveName)
    if (list === undefined) byPerspective.set(w.perspectiveName, [w])
    else list.push(w)
  }
  // With `everyPerspective`, both parts of each of them, empty or not: one statement text for every batch.
  const always = everyPerspective !== undefined
  const ctes: Array<string> = []
  const params: Array<unknown> = []
  const selects: Array<string> = []
  let next = firstParam
  let index = 0
  for (const [name, list] of byPerspective) {
    const upserts = list.filter((w) => w.action === "none")
    const deletes = list.filter((w) => w.action !== "none")
    if (always || upserts.length > 0) {
      const numbered = Rows.upsertRows(name).replace(/\$([1-5])\b/g, (_, n: string) => `$${next + Number(n) - 1}`)
      ctes.push(`model_up_${index} AS (${numbered})`)
      selects.push(`SELECT '${name}'::text AS p, u.id, u.version AS v FROM model_up_${index} u`)
      params.push(
        upserts.map((w) => w.streamId),
        upserts.map((w) => JSON.stringify(w.data)),
        upserts.map((w) => JSON.stringify(w.metadata ?? {})),
        upserts.map((w) => JSON.stringify(w.scope ?? {})),
        upserts.map((w) => w.eventsApplied)
      )
      next += 5
    }
    if (always || deletes.length > 0) {
      ctes.push(`model_del_${index} AS (${Rows.deleteRows(name).replace("$1", () => `$${next}`)} RETURNING id)`)
      // Read like the upserts (so it runs in the same place of the statement); a null version marks a deleted row.
      selects.push(`SELECT '${name}'::text AS p, d.id, NULL::int AS v FROM model_del_${index} d`)
      params.push(deletes.map((w) => w.streamId))
      next += 1
    }
    index++
  }
  const versions =
    selects.length === 0
      ? `'[]'::json`
      : `(SELECT coalesce(json_agg(json_build_object('p', m.p, 'id', m.id, 'v', m.v)), '[]'::json) FROM (${selects.join(" UNION ALL ")}) m)`
  return { ctes, params, versions }
}
