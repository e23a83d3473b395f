// Read-your-writes tells the truth about a stream that cannot be brought up to date, on every instance: one process
// appends (the test's, `Whizbang.layerWithoutWorker`), a worker process applies (`Whizbang.layer`), a reader process
// (`Whizbang.layerWithoutWorker`, its tracker never saw the append) reads with `SyncFilter.forStream`. Composed only
// from `whizbang`; `balance` fails every deposit tagged "poison".
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Option } from "effect"
import { EventStore, PgClient, SyncAwareLens, SyncFilter, type SyncResult } from "whizbang"
import * as Domain from "./support/domain.js"
import * as Readers from "./support/readers.js"
import * as Workers from "./support/workers.js"
import * as Writer from "./support/writer.js"

const deposit = (accountId: string, tag: string) => Domain.Deposited.make({ accountId, amount: 1, tag })

/** The appending instance's own read of the stream. */
const readHere = (accountId: string) =>
  Effect.gen(function* () {
    const { balance } = yield* Domain.definitions
    const { row, sync } = yield* SyncAwareLens.getById(
      balance,
      accountId,
      SyncFilter.forStream(accountId).withTimeout(Duration.seconds(20))
    )
    return { sync, version: Option.match(row, { onNone: () => 0, onSome: (r) => r.version }) }
  })

describe("honest read-your-writes waits across processes", () => {
  it.live(
    "(g) a stream whose head is failing (retry backoff): the appending and the reading instance both answer Failing at the first failure, naming the event, its error, attempts and next attempt",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "honest_g"
        yield* Effect.gen(function* () {
          // The defaults' shape: many attempts, a long backoff. Before, every read of the stream waited out its timeout.
          yield* Workers.start({
            url,
            schema,
            options: { maxPerspectiveEventAttempts: 10, failureBackoff: { initial: "60 seconds", multiplier: 2, max: "120 seconds" } }
          })
          const reader = yield* Readers.start({ url, schema })
          const store = yield* EventStore.EventStore
          const [account, healthy] = Writer.streams(2) as [string, string]
          const appended = yield* store.append(account, [deposit(account, Domain.poison), deposit(account, "after")])
          const [poison, after] = appended.events.map((e) => e.eventId) as [string, string]
          const [here, there] = yield* Effect.all([readHere(account), reader.read(account)], { concurrency: 2 })

          const expected = { eventId: poison, streamId: account, perspectiveName: "balance", attempts: 1 }
          expect(here.sync).toMatchObject({ _tag: "Failing", failing: [expected] })
          const failing = (here.sync as SyncResult.SyncResult & { readonly _tag: "Failing" }).failing[0]!
          expect(failing.error).toContain(`poison deposit on ${account}`)
          expect(failing.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now() + 30_000)
          expect(here.sync.pending).toEqual([poison, after])
          expect(there).toMatchObject({ outcome: "Failing", failing: [expected], version: 0 })
          expect(there.failing[0]!.error).toContain(`poison deposit on ${account}`)
          expect(new Date(there.failing[0]!.nextAttemptAt!).getTime()).toBe(failing.nextAttemptAt!.getTime())
          // As soon as it is known, not after the 20 s timeout.
          console.log(`(g) Failing answered after ${Duration.toMillis(here.sync.elapsed)} ms here, ${there.elapsed} ms on the reader`)
          expect(Duration.toMillis(here.sync.elapsed)).toBeLessThan(5_000)
          expect(there.elapsed).toBeLessThan(5_000)
          // Other streams are not held.
          yield* store.append(healthy, [deposit(healthy, "ok")])
          const other = yield* reader.read(healthy)
          expect(["Synced", "NoPendingEvents"]).toContain(other.outcome) // NoPendingEvents: applied before the read's check
          expect(other).toMatchObject({ version: 1, failing: [] })
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )

  it.live(
    "(h) a dead letter: the appending instance and, after it, an instance that did not append both answer DeadLettered naming the event, until it is discarded",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase.TestDatabase
        const schema = "honest_h"
        yield* Effect.gen(function* () {
          yield* Workers.start({ url, schema, options: { maxPerspectiveEventAttempts: 1 } })
          const reader = yield* Readers.start({ url, schema })
          const store = yield* EventStore.EventStore
          const [account] = Writer.streams(1) as [string]
          const [poison] = (yield* store.append(account, [deposit(account, Domain.poison)])).events.map((e) => e.eventId) as [string]
          const here = yield* readHere(account)
          expect(here.sync).toMatchObject({ _tag: "DeadLettered", deadLettered: [poison] })
          // Taken after the dead letter, on an instance that never tracked the event: it used to say NoPendingEvents.
          expect(yield* reader.read(account)).toMatchObject({ outcome: "DeadLettered", deadLettered: [poison], version: 0 })
          // The stream goes on past it; every read of it still says what the row lacks.
          yield* store.append(account, [deposit(account, "later")])
          expect(yield* reader.read(account)).toMatchObject({ outcome: "DeadLettered", deadLettered: [poison], version: 1 })
          // Discarded (`whizbang dead-letters discard`): gone from wh_dead_letters, the stream reads fresh again.
          const sql = yield* PgClient.PgClient
          yield* sql.query("DELETE FROM wh_dead_letters WHERE event_id = $1", [poison])
          const fresh = yield* reader.read(account)
          expect(["Synced", "NoPendingEvents"]).toContain(fresh.outcome)
          expect(fresh).toMatchObject({ deadLettered: [], version: 1 })
        }).pipe(Effect.provide(Writer.layer(url, schema)), Effect.scoped)
      }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped),
    120_000
  )
})
