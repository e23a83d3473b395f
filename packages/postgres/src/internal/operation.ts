/**
 * An operation: one statement paired with its typed request and the schema of its rows (the idea of effect-smol's
 * `SqlSchema.findAll/findOne/single/void`), run on a `PgClient`. The rows that come back are decoded, never
 * asserted: a row of another shape (a column renamed, a type changed, a migration missing) is a `PostgresError`
 * whose reason is `UnexpectedRow`, naming the operation and the mismatch.
 *
 * - The request is a plain typed value: the `params` function is its only reader, so the compiler checks every
 *   call site against it. It is not run through a schema: requests are built by Whizbang's own code from values
 *   validated at the edge (the CLI's `Validate`, `Perspective.validateName`), and an encode per call would check
 *   nothing the compiler does not.
 * - `sql` is the statement, or a function of the request for the few statements that name a perspective's own
 *   table (the name quoted by the operation with `Identifier.quote`; every value stays a bound parameter).
 * - `Row` is a struct of the fields the caller gets; `columns` names the column (from the registry, `./columns.ts`)
 *   or alias each field is read from when it is not the field's own name, so callers never see column names. A hot
 *   statement's row schema may name its fields as its columns instead (`[Events.eventId]: Schema.String`), so its
 *   rows are not copied (see `decoder`), or be a union of such structs (rows of two kinds, told apart by a literal).
 * - `prepared: true` runs a statement of fixed text as a named prepared statement (`PgClient.QueryOptions`).
 * - Statements run on the client given, so inside `withTransaction` on the transaction's connection.
 *
 * Invariants: a statement's rows are decoded all at once, before anything is returned; `count` and `void` read no
 * row (nothing to decode: `count` is how many rows came back, e.g. what a `DELETE .. RETURNING` removed).
 *
 * @internal
 */
import { Effect, Option, Schema, SchemaAST } from "effect"
import { SchemaJITCompiler } from "effect/schema"
import type { QueryOptions, Shape as Client } from "../PgClient.js"
import { PostgresError, UnexpectedRow } from "../PostgresError.js"

/**
 * A statement of Whizbang's tables, called with the client to run it on and its request (none when the request
 * is `undefined`).
 *
 * @internal
 */
export interface Operation<Request, A> {
  (client: Client, ...request: [Request] extends [undefined] ? [] : [request: Request]): Effect.Effect<A, PostgresError>
  /** `family.name`, as named in `UnexpectedRow` errors. */
  readonly operation: string
  /** The statement (a function of the request when it names a perspective's own table): for diagnostics and EXPLAIN. */
  readonly sql: string | ((request: Request) => string)
}

/**
 * A row schema: a struct that needs no services to decode, or a union of structs whose fields are named as their
 * columns. @internal
 */
export type RowSchema = Schema.Top & { readonly DecodingServices: never }

/**
 * The column (or alias) each field of a row schema is read from, when it is not the field's name: a name of the
 * registry (`PerspectiveCursors.streamId`) or an alias of the statement (`"held_by"`). Structs only.
 *
 * @internal
 */
export type Columns<S extends RowSchema> = S extends { readonly fields: Schema.Struct.Fields }
  ? { readonly [K in keyof S["fields"]]?: string }
  : never

interface Definition<Request> {
  readonly name: string
  readonly sql: string | ((request: Request) => string)
  readonly params?: ((request: Request) => ReadonlyArray<unknown>) | undefined
  readonly prepared?: boolean | undefined
}

// Every operation's text names Whizbang's relations only: it runs schema-qualified (`qualifiedStatement.ts`).
const preparedOptions: QueryOptions = { prepared: true, qualified: true }
const queryOptions: QueryOptions = { qualified: true }

const make = <Request, A>(
  definition: Definition<Request>,
  result: (rows: ReadonlyArray<unknown>, unexpected: (issue: string) => PostgresError) => Effect.Effect<A, PostgresError>
): Operation<Request, A> => {
  const { name } = definition
  const unexpected = (issue: string, sql?: string) =>
    new PostgresError({
      reason: new UnexpectedRow({ operation: name, issue }),
      message: `operation ${name}: unexpected row: ${issue}`,
      sql
    })
  const run = (client: Client, ...args: ReadonlyArray<unknown>) => {
    const request = args[0] as Request
    const sql = typeof definition.sql === "string" ? definition.sql : definition.sql(request)
    const params = definition.params?.(request)
    return Effect.flatMap(client.query(sql, params, definition.prepared === true ? preparedOptions : queryOptions), (rows) =>
      result(rows, (issue) => unexpected(issue, sql))
    )
  }
  // The one cast: `run` reads its optional request from `args`; the call signature adds the typing per operation.
  return Object.assign(run, { operation: name, sql: definition.sql }) as unknown as Operation<Request, A>
}

interface Rows<S extends RowSchema> {
  readonly Row: S
  readonly columns?: Columns<S> | undefined
}

// How rows are decoded. The rows are checked by a struct over the column names, then their keys renamed in one loop.
// (`Schema.encodeKeys` does both, but as a transformation per row: 10,000 event rows of a rewind took 45-99 ms to
// decode that way, 4-18 ms this way, against 1 ms to copy them unchecked.)
//
// The common case costs little, as the hot statements need (a claim's fetch: 19 columns, thousands of rows a cycle):
// - A row schema without transformations (strings, numbers, dates, literals, `Unknown` payloads: every one here)
//   decodes a row to an equal row, so checking the rows is the whole decode: a type guard, `Schema.is`, compiled by
//   Effect's JIT compiler (`SchemaJITCompiler.enable`, generated on first use; where code generation is blocked, it
//   stays interpreted). Rows that fail it are decoded again, for the message of `UnexpectedRow`.
// - A row schema whose fields are named as its columns is not copied: the rows are returned as they came (columns
//   the schema does not name stay on the objects, unread: its type does not name them).
// Measured with tsx on Node 20 (a shared 2-core machine; medians, 100 and 1,000 rows a statement): the fetch's rows
// (19 columns; payload, metadata and scope jsonb objects) took 2.2 and 3.6 us a row decoded by the interpreter and
// renamed, 0.11 and 0.12 checked by the compiled guard and not copied (a claim's, claimed and fetched rows in one
// union: 0.25 and 0.13); readStream's (7 columns, renamed) 0.9 and 1.2 us before, 0.23 and 0.22 after; a read
// model's (7 columns with two dates, renamed) 1.2 and 0.8 before, 0.39 and 0.35 after. Renaming 19 columns alone
// costs about 0.65 us a row, which is why the fetch's rows keep their column names.
// The compiler is enabled per row schema through Effect's own registry (keyed by AST); it also switches SchemaParser
// to its compiler adapters in the process, which decode every other schema with its interpreted parser as before.
const decoder = <S extends RowSchema>({ Row, columns }: Rows<S>) => {
  const fields: Schema.Struct.Fields | undefined = "fields" in Row ? (Row.fields as Schema.Struct.Fields) : undefined
  const names =
    fields === undefined
      ? []
      : Object.keys(fields).map((field) => [(columns as Record<string, string> | undefined)?.[field] ?? field, field] as const)
  const renamed = names.some(([column, field]) => column !== field)
  const Encoded = Schema.Array(
    renamed ? (Schema.Struct(Object.fromEntries(names.map(([column, field]) => [column, fields![field]!]))) as unknown as RowSchema) : Row
  )
  const plain = SchemaAST.toType(Encoded.ast) === Encoded.ast
  if (plain) SchemaJITCompiler.enable(Encoded.ast)
  const check = Schema.is(Encoded)
  const decode = Schema.decodeUnknownEffect(Encoded)
  const rename = (row: unknown) => {
    if (!renamed) return row as S["Type"]
    const out: Record<string, unknown> = {}
    for (const [column, field] of names) out[field] = (row as Record<string, unknown>)[column]
    return out as S["Type"]
  }
  return (
    rows: ReadonlyArray<unknown>,
    unexpected: (issue: string) => PostgresError
  ): Effect.Effect<ReadonlyArray<S["Type"]>, PostgresError> =>
    plain && check(rows)
      ? Effect.succeed(renamed ? rows.map(rename) : (rows as ReadonlyArray<S["Type"]>))
      : Effect.mapBoth(decode(rows), {
          onFailure: (error) => unexpected(error.message),
          onSuccess: (decoded) => decoded.map(rename)
        })
}

/**
 * A `bigint` column: text as pg returns it, or a number or a `bigint` where something in the process set a type
 * parser for int8 (`pg.types.setTypeParser(20, ..)` is process-wide: Emmett's dumbo, for one, sets `BigInt`).
 * Read it with `Number(..)`.
 *
 * @internal
 */
export const Int8 = Schema.Union([Schema.String, Schema.Number, Schema.BigInt])

/**
 * Every row, decoded.
 *
 * @internal
 */
export const findAll = <S extends RowSchema, Request = undefined>(
  definition: Definition<Request> & Rows<S>
): Operation<Request, ReadonlyArray<S["Type"]>> => make(definition, decoder(definition))

/**
 * The first row, decoded, if any.
 *
 * @internal
 */
export const findOne = <S extends RowSchema, Request = undefined>(
  definition: Definition<Request> & Rows<S>
): Operation<Request, Option.Option<S["Type"]>> => {
  const decode = decoder(definition)
  return make(definition, (rows, unexpected) =>
    Effect.map(decode(rows.slice(0, 1), unexpected), (decoded) => Option.fromNullishOr(decoded[0]))
  )
}

/**
 * The one row a statement always returns (an aggregate), decoded; none is `UnexpectedRow`.
 *
 * @internal
 */
export const single = <S extends RowSchema, Request = undefined>(
  definition: Definition<Request> & Rows<S>
): Operation<Request, S["Type"]> => {
  const decode = decoder(definition)
  return make(definition, (rows, unexpected) =>
    rows.length === 0
      ? Effect.fail(unexpected("expected one row, got none"))
      : Effect.map(decode(rows.slice(0, 1), unexpected), (decoded) => decoded[0] as S["Type"])
  )
}

/**
 * How many rows came back (rows affected, with `RETURNING`); the rows are not read.
 *
 * @internal
 */
export const count = <Request = undefined>(definition: Definition<Request>): Operation<Request, number> =>
  make(definition, (rows) => Effect.succeed(rows.length))

/**
 * Runs the statement; whatever it returns is not read.
 *
 * @internal
 */
const void_ = <Request = undefined>(definition: Definition<Request>): Operation<Request, void> => make(definition, () => Effect.void)

export {
  /** @internal */
  void_ as void
}
