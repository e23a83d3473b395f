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
 *   or alias each field is read from when it is not the field's own name, so callers never see column names.
 * - `prepared: true` runs a statement of fixed text as a named prepared statement (`PgClient.QueryOptions`).
 * - Statements run on the client given, so inside `withTransaction` on the transaction's connection.
 *
 * Invariants: a statement's rows are decoded all at once, before anything is returned; `count` and `void` read no
 * row (nothing to decode: `count` is how many rows came back, e.g. what a `DELETE .. RETURNING` removed).
 *
 * @internal
 */
import { Effect, Option, Schema } from "effect"
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

/** A row schema: a struct that needs no services to decode. @internal */
export type RowSchema = Schema.Struct<Schema.Struct.Fields> & { readonly DecodingServices: never }

/**
 * The column (or alias) each field of a row schema is read from, when it is not the field's name: a name of the
 * registry (`PerspectiveCursors.streamId`) or an alias of the statement (`"held_by"`).
 *
 * @internal
 */
export type Columns<S extends RowSchema> = { readonly [K in keyof S["fields"]]?: string }

interface Definition<Request> {
  readonly name: string
  readonly sql: string | ((request: Request) => string)
  readonly params?: ((request: Request) => ReadonlyArray<unknown>) | undefined
  readonly prepared?: boolean | undefined
}

const queryOptions: QueryOptions = { prepared: true }

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
    return Effect.flatMap(client.query(sql, params, definition.prepared === true ? queryOptions : undefined), (rows) =>
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

// The rows are checked by a struct over the column names, then their keys renamed in one loop. (`Schema.encodeKeys`
// does both, but as a transformation per row: 10,000 event rows of a rewind took 45-99 ms to decode that way, 4-18
// ms this way, against 1 ms to copy them unchecked.)
const decoder = <S extends RowSchema>({ Row, columns = {} }: Rows<S>) => {
  const names = Object.keys(Row.fields).map((field) => [columns[field] ?? field, field] as const)
  const Encoded = Schema.Struct(Object.fromEntries(names.map(([column, field]) => [column, Row.fields[field]!])))
  const decode = Schema.decodeUnknownEffect(Schema.Array(Encoded))
  const rename = (row: Record<string, unknown>) => {
    const renamed: Record<string, unknown> = {}
    for (const [column, field] of names) renamed[field] = row[column]
    return renamed as S["Type"]
  }
  return (rows: ReadonlyArray<unknown>, unexpected: (issue: string) => PostgresError) =>
    Effect.mapBoth(decode(rows) as Effect.Effect<ReadonlyArray<Record<string, unknown>>, Schema.SchemaError>, {
      onFailure: (error) => unexpected(error.message),
      onSuccess: (decoded) => decoded.map(rename)
    })
}

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
