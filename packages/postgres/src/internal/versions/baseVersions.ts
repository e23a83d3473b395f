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
  readonly key: string
  readonly version: number
  readonly state: State
}

export const versionsOf = (client: PgClient["Service"], baseName: string) => Sql.versionsOfBaseUnlocked(client, { baseName })

/** No version of `baseName` (or not `version`): the refusal names the versions of the base, or every registered one. */
export const unknown = (client: PgClient["Service"], baseName: string, version: number | undefined, rows: ReadonlyArray<BaseRow>) =>
  Effect.gen(function* () {
    const known = rows.length > 0 ? rows.map((r) => r.key) : (yield* Sql.registeredKeys(client)).map((r) => r.key)
    return yield* new UnknownPerspectiveVersion({ baseName, version, known })
  })
