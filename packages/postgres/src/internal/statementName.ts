/**
 * Names of prepared statements: one per statement text, the same in every process and on every connection (a hash of
 * the text), so pg prepares a text once per connection and then sends only its name and values.
 *
 * @internal
 */
import { createHash } from "node:crypto"

const names = new Map<string, string>()

/** `wh_` and 24 hex digits of the text's SHA-1 (well under Postgres' 63-byte identifier limit). @internal */
export const of = (sql: string): string => {
  const known = names.get(sql)
  if (known !== undefined) return known
  const name = `wh_${createHash("sha1").update(sql).digest("hex").slice(0, 24)}`
  names.set(sql, name)
  return name
}
