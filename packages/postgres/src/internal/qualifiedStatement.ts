// Whizbang's own statements with their relations and functions named schema-qualified. A view bound to a tenant's
// schema (`PgClient.forSchema`) used to move each connection it checked out to that schema (`SET search_path`),
// and a process's few pooled connections serve its tenants in turn: about half of a tenant worker process's round
// trips were that `SET`. A statement whose every `wh_` name is qualified runs the same on a connection left on any
// schema, so the view runs it where it finds a connection, without the `SET`.
//
// `qualify` rewrites a statement text once (cached): every `wh_` identifier, plain or quoted, outside string literals
// and comments becomes `"__whizbang_schema__".wh_…` and `current_schema()` the literal `'__whizbang_schema__'`; the
// view puts its schema in both. Statements it does not rewrite (`undefined`) keep the `SET`: schema changes (an
// index or constraint name cannot be qualified), text that resolves a relation's name at run time (`to_regclass`),
// and dollar-quoted bodies. Functions called qualified are safe: their bodies name every relation qualified (the
// migrations). What is left unqualified is only what Postgres resolves from `pg_catalog` first (built-in functions,
// types, operators, catalogs), never a tenant's relation: Whizbang's relations are all named `wh_`. So a
// connection's current `search_path` cannot change what a rewritten statement reads or writes.
import * as Identifier from "./identifier.js"
import { SCHEMA_PLACEHOLDER } from "./schemaPlaceholder.js"

const prefix = `"${SCHEMA_PLACEHOLDER}".`
/** `current_schema()`, rewritten: the schema's name as a literal. */
const literal = `'${SCHEMA_PLACEHOLDER}'`
/**
 * Texts kept on the `search_path`: schema changes (an index or constraint name cannot be qualified), and those that
 * resolve a relation's name at run time (`to_regclass`, a `::regclass` cast of a name outside `pg_catalog`).
 */
const pathBound = /\b(CREATE|ALTER|DROP|COMMENT)\b|to_regclass|search_path|'(?!pg_)[^']*'::regclass/i
const wordChar = /[A-Za-z0-9_$]/
const currentSchema = /^current_schema\s*\(\s*\)/i

/** `sql` with its `wh_` names prefixed and `current_schema()` a literal, or `undefined` (a dollar-quoted body). */
const rewrite = (sql: string): string | undefined => {
  let out = ""
  let last = 0
  let i = 0
  const insert = (at: number, text: string, skip = 0) => {
    out += sql.slice(last, at) + text
    last = at + skip
  }
  while (i < sql.length) {
    const c = sql[i]!
    const next = sql[i + 1]
    const startsWord = i === 0 || !(wordChar.test(sql[i - 1]!) || sql[i - 1] === ".")
    if (c === "'") {
      // A string literal ('' inside it is a quote): skipped whole.
      i++
      while (i < sql.length && !(sql[i] === "'" && sql[i + 1] !== "'")) i += sql[i] === "'" ? 2 : 1
      i++
    } else if (c === '"') {
      // A quoted name: a `wh_` one (a perspective's table, `"wh_per_orders__v2"`) is qualified like the others.
      const end = sql.indexOf('"', i + 1)
      if (end < 0) return undefined
      if (sql.startsWith("wh_", i + 1) && (i === 0 || sql[i - 1] !== ".")) insert(i, prefix)
      i = end + 1
    } else if (c === "-" && next === "-") {
      const end = sql.indexOf("\n", i)
      i = end < 0 ? sql.length : end + 1
    } else if (c === "/" && next === "*") {
      const end = sql.indexOf("*/", i + 2)
      if (end < 0) return undefined
      i = end + 2
    } else if (c === "$" && next !== undefined && !/[0-9]/.test(next)) {
      // A dollar-quoted body (a function's, a DO block's): not rewritten.
      return undefined
    } else if (c === "w" && startsWord && sql.startsWith("wh_", i)) {
      let end = i + 3
      while (end < sql.length && wordChar.test(sql[end]!)) end++
      insert(i, prefix)
      i = end
    } else if ((c === "c" || c === "C") && startsWord && currentSchema.test(sql.slice(i, i + 40))) {
      const length = currentSchema.exec(sql.slice(i, i + 40))![0].length
      insert(i, literal, length)
      i += length
    } else i++
  }
  return out + sql.slice(last)
}

const rewritten = new Map<string, string | undefined>()
/** Texts kept rewritten; past this many (statements built from data), the cache starts again. */
const cacheSize = 2_000

/**
 * `sql` with every `wh_` relation and function named `"__whizbang_schema__".wh_…` and `current_schema()` as the
 * literal `'__whizbang_schema__'`, or `undefined` when it is not rewritten (a schema change, a relation's name
 * resolved at run time, a dollar-quoted body): such a statement runs on the view's `search_path`.
 */
export const qualify = (sql: string): string | undefined => {
  if (rewritten.has(sql)) return rewritten.get(sql)
  const text = pathBound.test(sql) ? undefined : rewrite(sql)
  if (rewritten.size >= cacheSize) rewritten.clear()
  rewritten.set(sql, text)
  return text
}

/** A rewritten text (`qualify`) for `schema` (a validated identifier). */
export const forSchema = (qualified: string, schema: string): string =>
  qualified.replaceAll(prefix, `${Identifier.quote(schema)}.`).replaceAll(literal, `'${schema}'`)
