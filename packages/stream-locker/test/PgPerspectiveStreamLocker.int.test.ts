import { describe, layer } from "@effect/vitest"
import { PgClient } from "@whizbang/postgres"
import { type PerspectiveStreamLocker, PgPerspectiveStreamLocker } from "@whizbang/stream-locker"
import { PgTestDatabase } from "@whizbang/testing"
import { Array, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import * as LockerContract from "./contract/lockerContract.js"

interface LockRow {
  readonly instance_id: string | null
  readonly expires_at: number | null
  readonly reason: PerspectiveStreamLocker.LockReason | null
}

// Postgres expiry runs on the database clock, so "waiting" is real time. The TestClock is adjusted too, so
// withStreamLock's keepalive fiber (which sleeps on Effect's Clock) ticks along.
const fixture = Layer.effect(
  LockerContract.LockerFixture,
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    return LockerContract.LockerFixture.of({
      ensureCursor: (streamId, perspectiveName) =>
        client
          .query("insert into wh_perspective_cursors (stream_id, perspective_name) values ($1, $2) on conflict do nothing", [
            streamId,
            perspectiveName
          ])
          .pipe(Effect.asVoid, Effect.orDie),
      lockOf: (streamId, perspectiveName) =>
        client
          .query<LockRow>(
            `select stream_lock_instance_id as instance_id, stream_lock_reason as reason,
             (extract(epoch from stream_lock_expiry) * 1000)::float8 as expires_at
           from wh_perspective_cursors where stream_id = $1 and perspective_name = $2`,
            [streamId, perspectiveName]
          )
          .pipe(
            Effect.map((rows) =>
              Option.map(Array.head(rows), (row) => ({ instanceId: row.instance_id, expiresAt: row.expires_at, reason: row.reason }))
            ),
            Effect.orDie
          ),
      now: client.query<{ now: number }>("select (extract(epoch from statement_timestamp()) * 1000)::float8 as now").pipe(
        Effect.map((rows) => rows[0]!.now),
        Effect.orDie
      ),
      advance: (duration) => Effect.andThen(TestClock.adjust(duration), TestClock.withLive(Effect.sleep(duration)))
    })
  })
)

LockerContract.run("postgres", PgTestDatabase.layer(), (options) => Layer.merge(PgPerspectiveStreamLocker.layer(options), fixture))

describe("PgPerspectiveStreamLocker (Postgres specifics)", () => {
  layer(PgTestDatabase.layer({ maxConnections: 12 }), { timeout: 60_000 })((it) => {
    it.effect("property: concurrent acquirers on separate connections never hold the lock together", () =>
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        const locker = yield* PgPerspectiveStreamLocker.make()
        const perspective = "order_summary"
        const scenario = (input: { readonly instances: number; readonly rounds: number }) =>
          Effect.gen(function* () {
            const streamId = globalThis.crypto.randomUUID()
            yield* client.query("insert into wh_perspective_cursors (stream_id, perspective_name) values ($1, $2)", [streamId, perspective])
            let inside = 0
            let maxInside = 0
            let acquisitions = 0
            const instance = (instanceId: string) =>
              Effect.forEach(
                Array.range(1, input.rounds),
                () =>
                  Effect.gen(function* () {
                    if (!(yield* locker.tryAcquireLock(streamId, perspective, instanceId, "rewind"))) return
                    acquisitions++
                    inside++
                    maxInside = Math.max(maxInside, inside)
                    // While we hold it, the row must name us (a round trip also lets the others race).
                    const rows = yield* client.query<{ holder: string }>(
                      "select stream_lock_instance_id as holder from wh_perspective_cursors where stream_id = $1",
                      [streamId]
                    )
                    if (rows[0]!.holder !== instanceId) maxInside = Infinity
                    inside--
                    yield* locker.releaseLock(streamId, perspective, instanceId)
                  }),
                { discard: true }
              )
            yield* Effect.forEach(
              Array.makeBy(input.instances, () => globalThis.crypto.randomUUID()),
              instance,
              { concurrency: "unbounded", discard: true }
            )
            return maxInside <= 1 && acquisitions >= 1
          })
        const context = yield* Effect.context<never>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.record({ instances: fc.integer({ min: 2, max: 8 }), rounds: fc.integer({ min: 1, max: 4 }) }), (input) =>
              Effect.runPromiseWith(context)(Effect.orDie(scenario(input)))
            ),
            { numRuns: 20 }
          )
        )
      })
    )
  })
})
