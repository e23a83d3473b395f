/**
 * The verdicts of a `classify`: the facts the database gathers about each event, per serving key of the perspective,
 * judged by the rule of `PgOperations.SyncInquiry` (see `PgSyncInquiry.ts`) and combined across the keys.
 *
 * @internal
 */
import { EventId, Perspective } from "@whizbang/core"
import type { PostgresError as PgError } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Effect } from "effect"
import type { Classified } from "../PgSyncInquiry.js"
import type { HeldEvent } from "../SyncInquiryPort.js"

const Sql = PgOperations.SyncInquiry
type Verdict = PgOperations.SyncInquiry.Verdict
type Facts = PgOperations.SyncInquiry.EventFacts

type PostgresError = PgError.PostgresError

/** Gathers the facts of a request: one statement, or a batch shared with other waits. @internal */
export type FactsOf = (request: PgOperations.SyncInquiry.FactsRequest) => Effect.Effect<ReadonlyArray<Facts>, PostgresError>

/** The failure a failing verdict's facts name. */
const failureOf = (row: Facts): HeldEvent["failing"] => ({
  eventId: row.failingEventId ?? row.eventId,
  streamId: row.streamId ?? "",
  perspectiveName: row.key,
  error: row.failingError ?? "unknown error",
  attempts: row.failingAttempts ?? 0,
  nextAttemptAt: row.failingNextAttemptAt ?? undefined
})

/**
 * The verdicts of `eventIds`, from the facts `facts` gathers (one statement, or a batch shared with other waits).
 * `handled`: the event types each key handles. `versioned`: the bases seen served by versions, added to here.
 *
 * @internal
 */
export const classifyWith =
  (handled: ReadonlyMap<string, ReadonlySet<string>>, versioned: Set<string>, facts: FactsOf) =>
  (perspectiveName: string, eventIds: ReadonlyArray<string>): Effect.Effect<Classified, PostgresError> =>
    Effect.gen(function* () {
      const ids = [...new Set(eventIds)]
      // A malformed id can name no event: pending forever, and never sent to the database.
      const valid = ids.filter(EventId.isUuid)
      const out: Record<Exclude<Verdict, "failing">, Array<string>> = {
        pending: ids.filter((id) => !EventId.isUuid(id)),
        processed: [],
        deadLettered: []
      }
      const failing: Array<HeldEvent> = []
      if (valid.length === 0) return { ...out, failing }
      const baseName = Perspective.parseKey(perspectiveName).baseName
      const rows = yield* facts({ baseName, key: perspectiveName, eventIds: valid })
      const keys = new Set<string>()
      const verdicts = new Map<string, Array<Verdict>>()
      const failures = new Map<string, HeldEvent["failing"]>()
      for (const row of rows) {
        keys.add(row.key)
        const v = Sql.verdict(row, (eventType) => handled.get(row.key)?.has(eventType) ?? false)
        if (v === "failing" && !failures.has(row.eventId)) failures.set(row.eventId, failureOf(row))
        const list = verdicts.get(row.eventId)
        if (list === undefined) verdicts.set(row.eventId, [v])
        else list.push(v)
      }
      if (keys.size > 1 || [...keys].some((key) => key !== baseName)) versioned.add(baseName)
      for (const id of valid) {
        const v = Sql.combine(verdicts.get(id) ?? ["pending"])
        if (v === "failing") {
          out.pending.push(id)
          failing.push({ eventId: id, failing: failures.get(id)! })
        } else out[v].push(id)
      }
      return { ...out, failing }
    })
