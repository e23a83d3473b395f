/**
 * An append as the statement that writes it: alone (`wh_append_events`) or together with the appends that waited
 * for a slot (`wh_append_batch`), each answered with its own outcome row. What `PgEventStore` sends, not when: its
 * slots and the order of attempts are the store's.
 *
 * @internal
 */
import { type AppendRequest, EventStoreError } from "@whizbang/core"
import { Effect, Exit, Metric } from "effect"
import type { PgClient } from "../PgClient.js"
import type { PostgresError } from "../PostgresError.js"
import * as AppendSql from "../sql/appendEvents.js"

/** The store's error for a statement that failed. */
export const unavailable = (cause: PostgresError) => new EventStoreError.EventStoreUnavailable({ cause })

export type AppendFailure = EventStoreError.EventStoreUnavailable | EventStoreError.DuplicateEventId

// Telemetry (name listed in Telemetry.metrics): how many appends each append statement answered (refusals included).
const appendsPerStatementMetric = Metric.histogram("whizbang_appends_per_statement", {
  description: "appends one append statement answered (1: alone; more: appends that waited for a slot, together)",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 2, count: 7 })
})

export type OutcomeRow = AppendSql.Outcome

/** One validated append with what its statement needs besides the events. */
export interface Request {
  readonly prepared: AppendRequest.PreparedAppend
  /** (event type, perspective) pairs of the caller's routing. */
  readonly routed: ReadonlyArray<readonly [string, string]>
  readonly supplied: ReadonlyArray<string>
  readonly lifecycle: ReadonlyArray<string>
}

/** The answer that sends an append back to its caller, to run alone (`wh_append_batch`'s 'busy'). */
const runAlone: OutcomeRow = { outcome: "busy", version: "0", ids: null }

/** The server answered with an error: the statement rolled back, nothing of it was written. */
const serverRefused = (error: PostgresError): boolean =>
  error.reason._tag !== "ConnectionError" && !(error.reason._tag === "Unknown" && error.reason.code === undefined)

/** The statements of one store. */
export interface EventAppends {
  readonly requestOf: (prepared: AppendRequest.PreparedAppend) => Request
  readonly appendOne: (request: Request, notify: boolean, waitForLock: boolean) => Effect.Effect<OutcomeRow, AppendFailure>
  readonly appendMany: (requests: ReadonlyArray<Request>) => Effect.Effect<ReadonlyArray<Exit.Exit<OutcomeRow, AppendFailure>>>
}

/** The statements of a store on `client` (the options as `PgEventStore.make` filled them). */
export const make = (
  client: PgClient["Service"],
  options: {
    readonly routing: (eventType: string) => ReadonlyArray<string>
    readonly partitionCount: number
    readonly lifecycleTypes: (eventType: string) => boolean
  }
): EventAppends => {
  const { routing, partitionCount, lifecycleTypes } = options

  const requestOf = (prepared: AppendRequest.PreparedAppend): Request => {
    const batchTypes = [...new Set(prepared.events.map((e) => e.eventType))]
    const routed = batchTypes.flatMap((type) => routing(type).map((perspective) => [type, perspective] as const))
    return {
      prepared,
      routed,
      supplied: prepared.events.filter((e) => e.supplied).map((e) => e.eventId),
      lifecycle: batchTypes.filter(lifecycleTypes)
    }
  }

  // A supplied id stored by a concurrent append to another stream since the function's check.
  const duplicateOrUnavailable = (request: Request) => (error: PostgresError) =>
    error.reason._tag === "UniqueViolation" && error.reason.constraint === "wh_events_pkey" && request.supplied.length > 0
      ? new EventStoreError.DuplicateEventId({ eventIds: request.supplied })
      : unavailable(error)

  // `waitForLock` false: a stream locked by another transaction answers 'busy', with nothing written.
  const appendOne = (request: Request, notify: boolean, waitForLock: boolean): Effect.Effect<OutcomeRow, AppendFailure> => {
    return AppendSql.appendEvents(client, {
      append: request.prepared,
      routed: request.routed,
      lifecycle: request.lifecycle,
      partitionCount,
      notify,
      waitForLock
    }).pipe(
      Effect.mapError(duplicateOrUnavailable(request)),
      Effect.tap(() => Metric.update(appendsPerStatementMetric, 1))
    )
  }

  // Appends that waited for a slot, in one `wh_append_batch` call. When the server refused the call (a supplied
  // id given to two of them, a statement timeout), nothing was written: each is answered 'busy', so its caller
  // runs it alone and gets its own answer. A connection lost mid-call leaves the commit in doubt: each gets the
  // error.
  const appendMany = (requests: ReadonlyArray<Request>): Effect.Effect<ReadonlyArray<Exit.Exit<OutcomeRow, AppendFailure>>> => {
    const routed = new Map(requests.flatMap((r) => r.routed.map((pair) => [pair.join("\n"), pair] as const)))
    return AppendSql.appendBatch(client, {
      appends: requests.map((r) => r.prepared),
      routed: [...routed.values()],
      lifecycle: [...new Set(requests.flatMap((r) => r.lifecycle))],
      partitionCount
    }).pipe(
      Effect.tap((rows) => Metric.update(appendsPerStatementMetric, rows.filter((row) => row.outcome !== "busy").length)),
      Effect.map((rows) => {
        const byPosition = new Map(rows.map((row) => [row.n, row]))
        return requests.map((_, i) => {
          const row = byPosition.get(i + 1)
          return row === undefined ? Exit.die(new Error(`wh_append_batch returned no row for append ${i + 1}`)) : Exit.succeed(row)
        })
      }),
      Effect.catch((error) =>
        serverRefused(error)
          ? Effect.succeed(requests.map((): Exit.Exit<OutcomeRow, AppendFailure> => Exit.succeed(runAlone)))
          : Effect.succeed(
              requests.map((request): Exit.Exit<OutcomeRow, AppendFailure> => Exit.fail(duplicateOrUnavailable(request)(error)))
            )
      )
    )
  }

  return { requestOf, appendOne, appendMany }
}
