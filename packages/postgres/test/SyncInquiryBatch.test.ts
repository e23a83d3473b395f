// `PgOperations.SyncInquiry.batchedEventFacts`: the first checks of many waits share statements. A question that finds
// none running runs at once; the ones that arrive meanwhile go together after it, one statement per (base, key) for
// the union of their ids, each answered with its own ids' rows. Rows that do not decode fail every question they
// answer with `UnexpectedRow`.
import { describe, expect, it } from "@effect/vitest"
import type { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Deferred, Effect, Fiber } from "effect"

const row = (key: string, eventId: string) => ({
  key,
  event_types: null,
  retired: false,
  event_id: eventId,
  event_type: "OrderPlaced",
  committed: true,
  has_work: false,
  work_processed: false,
  dead_lettered: false,
  cursor_past: true,
  stream_id: "s",
  failing_event_id: null,
  failing_error: null,
  failing_attempts: null,
  failing_next_attempt_at: null
})

/** A client whose `wh_event_facts` answers one row per asked id; the first statement waits for `release`. */
const fakeClient = (release: Deferred.Deferred<void>, malformed = false) => {
  const statements: Array<{ readonly key: string; readonly ids: ReadonlyArray<string>; readonly prepared: boolean }> = []
  const client = {
    query: (_sql: string, params: ReadonlyArray<unknown>, options?: PgClient.QueryOptions) =>
      Effect.gen(function* () {
        const [, key, ids] = params as [string, string, ReadonlyArray<string>]
        statements.push({ key, ids: [...ids].sort(), prepared: options?.prepared === true })
        if (statements.length === 1) yield* Deferred.await(release)
        return ids.map((id) => (malformed ? { ...row(key, id), committed: "yes" } : row(key, id)))
      })
  } as unknown as PgClient.Shape
  return { client, statements }
}

describe("PgOperations.SyncInquiry.batchedEventFacts", () => {
  it.effect("questions asked while a statement runs go together: one prepared statement per key, each answered with its own ids", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { client, statements } = fakeClient(release)
      const facts = PgOperations.SyncInquiry.batchedEventFacts(client)
      const ask = (key: string, eventIds: ReadonlyArray<string>) =>
        Effect.forkChild(facts({ baseName: "orders", key, eventIds }), { startImmediately: true })
      const first = yield* ask("orders", ["a"])
      const second = yield* ask("orders", ["b", "c"])
      const third = yield* ask("orders", ["c", "d"])
      const other = yield* ask("orders__v2", ["e"])
      // Only the first runs until it is answered.
      expect(statements).toHaveLength(1)
      yield* Deferred.succeed(release, undefined)
      const ids = (rows: ReadonlyArray<PgOperations.SyncInquiry.EventFacts>) => rows.map((r) => `${r.key}:${r.eventId}`)
      expect(ids(yield* Fiber.join(first))).toEqual(["orders:a"])
      expect(ids(yield* Fiber.join(second))).toEqual(["orders:b", "orders:c"])
      expect(ids(yield* Fiber.join(third))).toEqual(["orders:c", "orders:d"])
      expect(ids(yield* Fiber.join(other))).toEqual(["orders__v2:e"])
      expect(statements).toEqual([
        { key: "orders", ids: ["a"], prepared: true },
        { key: "orders", ids: ["b", "c", "d"], prepared: true },
        { key: "orders__v2", ids: ["e"], prepared: true }
      ])
      // The rows are decoded: camelCase fields, booleans and nulls as the database gave them.
      const [decoded] = yield* Fiber.join(first)
      expect(decoded).toMatchObject({ eventId: "a", committed: true, cursorPast: true, failingNextAttemptAt: null })
    })
  )

  it.effect("a row that does not decode fails the questions it answers with UnexpectedRow, naming the operation", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      yield* Deferred.succeed(release, undefined)
      const { client } = fakeClient(release, true)
      const error = yield* Effect.flip(
        PgOperations.SyncInquiry.batchedEventFacts(client)({ baseName: "orders", key: "orders", eventIds: ["a"] })
      )
      expect(error.reason._tag).toBe("UnexpectedRow")
      expect(error.message).toContain("syncInquiry.eventFacts")
    })
  )
})
