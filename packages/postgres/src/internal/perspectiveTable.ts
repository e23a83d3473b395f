/**
 * Where a perspective's rows live in Postgres. Each version has its own table, `wh_per_<base>__v<N>` (version 1
 * included); `wh_per_<base>` is a view of the live version's table, the name users read through. A cutover or a
 * rollback replaces the view in the same transaction that changes which version is live, so a read sees one
 * version, never a mix.
 *
 * Names are perspective keys or base names (`Perspective.name` / `Perspective.baseName`), validated before any SQL
 * names a table; the results are unquoted identifiers ({@link quoted} quotes).
 *
 * @since 0.3.0
 */
import { Perspective } from "@whizbang/core"
import * as Identifier from "./identifier.js"

/**
 * The table of one version's rows: `wh_per_<base>__v<N>` for the key `<base>` (version 1) or `<base>__v<N>`.
 *
 * @category names
 * @since 0.3.0
 */
export const ofVersion = (key: string): string => `wh_per_${Perspective.ownRowsName(key)}`

/**
 * The view that serves reads: `wh_per_<base>`.
 *
 * @category names
 * @since 0.3.0
 */
export const served = (baseName: string): string => `wh_per_${baseName}`

/**
 * What a read of `name` reads: a base name reads the view of the live version; a name with an explicit version
 * (`balance__v1`, `balance__v2`) reads that version's own table.
 *
 * @category names
 * @since 0.3.0
 */
export const forRead = (name: string): string => {
  const { baseName } = Perspective.parseKey(name)
  return baseName === name ? served(name) : ofVersion(name)
}

/**
 * Quotes an identifier for SQL.
 *
 * @category names
 * @since 0.3.0
 */
export const quoted = (identifier: string): string => Identifier.quote(identifier)
