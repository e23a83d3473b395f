// Measures a rewind of a 10,000-event stream with and without snapshots (figures in the package README).
// The events are written by SQL (no worker), then a late event is flagged and rewound twice: first with no
// snapshot (a full replay, which also writes snapshots), then a second late event with snapshots present.
import { describe, expect, it } from "@effect/vitest"
import { EventId, InstanceProvider } from "@whizbang/core"
import { PgClient, PgPerspectiveStore } from "@whizbang/postgres"
import { PgPerspectiveRewinder, PgPerspectiveStreamLocker } from "@whizbang/stream-locker"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer } from "effect"
import * as Ledger from "./fixtures/ledger.js"

const layer = PgPerspectiveStreamLocker.layer().pipe(
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "timing" })),
  Layer.provideMerge(PgTestDatabase.layer({ schema: "timing" })),
  Layer.orDie
)

describe("rewind timing", () => {
  it.live(
    "rewinds a 10,000-event stream with and without snapshots",
    () =>
      Effect.gen(function* () {
        const client = yield* PgClient.PgClient
        yield* PgPerspectiveStore.ensureTables(["tally"])
        const rewinder = yield* PgPerspectiveRewinder.make({
          events: Ledger.events,
          perspectives: [Ledger.tally],
          options: { startupScan: "off", snapshots: { every: 100, keep: 5 } }
        })
        const streamId = EventId.unsafeMake()
        const ids = Array.from({ length: 10_002 }, () => EventId.unsafeMake()).sort()
        const [lateA, lateB] = [ids[5_000]!, ids[9_950]!]
        const onTime = ids.filter((id) => id !== lateA && id !== lateB)
        const insertEvents = (eventIds: ReadonlyArray<string>, firstVersion: number) =>
          client.query(
            `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, metadata)
           select e, $1::uuid, $3::int + n - 1, 'Noted', jsonb_build_object('accountId', $1::uuid::text, 'amount', 1), '{}'
           from unnest($2::uuid[]) with ordinality as t(e, n)`,
            [streamId, eventIds, firstVersion]
          )
        yield* insertEvents(onTime, 1)
        yield* client.query(
          "insert into wh_perspective_cursors (stream_id, perspective_name, last_event_id, status) values ($1, 'tally', $2, 2)",
          [streamId, onTime.at(-1)]
        )
        const arrive = (lateId: string, version: number) =>
          Effect.gen(function* () {
            yield* insertEvents([lateId], version)
            yield* client.query(
              "insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number) values (gen_random_uuid(), $1, 'tally', $2, 0)",
              [streamId, lateId]
            )
            yield* client.query(
              "update wh_perspective_cursors set status = status | 32, rewind_trigger_event_id = $2, rewind_flagged_at = now(), rewind_first_flagged_at = now() where stream_id = $1",
              [streamId, lateId]
            )
          })
        const timed = Effect.gen(function* () {
          const started = performance.now()
          const result = yield* rewinder.rewind({ streamId, perspectiveName: "tally" }, { force: true })
          return { result, millis: performance.now() - started }
        })

        yield* arrive(lateA, 10_001)
        const without = yield* timed
        yield* arrive(lateB, 10_002)
        const withSnapshots = yield* timed

        const [row] = yield* client.query<{ data: { count: number } }>("select data from wh_per_tally where id = $1", [streamId])
        console.log(
          `rewind of a 10,000-event stream: without snapshots ${without.millis.toFixed(0)} ms (${without.result.replayedEventIds.length} events replayed), ` +
            `with snapshots ${withSnapshots.millis.toFixed(0)} ms (${withSnapshots.result.replayedEventIds.length} events replayed)`
        )
        expect(without.result.outcome).toBe("rewound")
        expect(without.result.replayedEventIds).toHaveLength(10_001)
        expect(withSnapshots.result.outcome).toBe("rewound")
        expect(withSnapshots.result.replayedEventIds.length).toBeLessThanOrEqual(2 * 100 + 1)
        expect(row!.data.count).toBe(10_002)
      }).pipe(Effect.scoped, Effect.provide(layer)),
    120_000
  )
})
