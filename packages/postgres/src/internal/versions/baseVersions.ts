/**
 * The versions of one base, as the operator's operations (cutover, rollback, retire) read them, and the refusal that
 * names them when the one asked for is not there. Apart because each of those operations starts from it.
 *
 * @internal
 */
import { Effect } from "effect"
import type { PgClient } from "../../PgClient.js"
import type { State } from "../../PgPerspectiveVersions.js"
import * as Sql from "../../sql/versions.js"
import { UnknownPerspectiveVersion } from "../../VersionError.js"

/** A version of a base: its key, number and state. */
export interface BaseRow {
  readonly perspective_name: string
  readonly version: number
  readonly state: State
}

export const versionsOf = (client: PgClient["Service"], baseName: string) =>
  client.query<BaseRow>(
    `SELECT perspective_name, version, state FROM wh_perspective_versions WHERE base_name = $1::text ORDER BY version`,
    [baseName]
  )

/** No version of `baseName` (or not `version`): the refusal names the versions of the base, or every registered one. */
export const unknown = (client: PgClient["Service"], baseName: string, version: number | undefined, rows: ReadonlyArray<BaseRow>) =>
  Effect.gen(function* () {
    const known =
      rows.length > 0
        ? rows.map((r) => r.perspective_name)
        : (yield* client.query<{ perspective_name: string }>(Sql.registeredKeys)).map((r) => r.perspective_name)
    return yield* new UnknownPerspectiveVersion({ baseName, version, known })
  })
