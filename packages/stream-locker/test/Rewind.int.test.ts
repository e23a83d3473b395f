import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStore, PerspectiveWorker, type PerspectiveRewinder } from "@whizbang/core"
import { PgClient, PgPerspectiveSnapshots, PgPerspectiveStore } from "@whizbang/postgres"
import {
  PerspectiveBootstrap,
  PerspectivePurge,
  PerspectiveStreamLocker,
  PgPerspectiveRewinder,
  PgPerspectiveStreamLocker
} from "@whizbang/stream-locker"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Layer, Option, Ref } from "effect"
import * as Ledger from "./fixtures/ledger.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

type PipelineConfig = Partial<Parameters<typeof PgPerspectiveRewinder.layerPipeline>[0]>

const pipeline = (config: PipelineConfig = {}) =>
  PgPerspectiveRewinder.layerPipeline({
    events: Ledger.events,
    perspectives: [Ledger.ledger],
    options: fast,
    rewind: { debounceWindow: 50, debounceCap: 1000, startupScan: "off" },
    lock: { lockTimeout: 2000, keepAliveInterval: 500 },
    ...config
  }).pipe(
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "ledger-test" })),
    Layer.provideMerge(PgTestDatabase.layer({ schema: "ledger", maxConnections: 12 })),
    Layer.orDie
  )

const scenario = <A, E>(name: string, layer: Layer.Layer<any, never, never>, body: Effect.Effect<A, E, any>, timeout = 60_000) =>
  it.live(name, () => Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(layer)))) as Effect.Effect<void, E>, timeout)

/** Appends one event per amount (one append; ids grow in order) and waits until the worker applied them. */
const appendAll = (streamId: string, amounts: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const store = yield* EventStore.EventStore
    yield* store.append(
      streamId,
      amounts.map((a) => Ledger.note(streamId, a))
    )
    yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
  })

/** Inserts an event whose id was made earlier (so it sorts before events already applied), with its work row. */
const insertLate = (streamId: string, eventId: string, amount: number) =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    yield* client.withTransaction(
      Effect.gen(function* () {
        yield* client.query(
          `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, metadata)
         select $2, $1, coalesce(max(stream_version), 0) + 1, 'Noted', $3::jsonb, '{}' from wh_events where stream_id = $1`,
          [streamId, eventId, JSON.stringify({ accountId: streamId, amount })]
        )
        yield* client.query(
          `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number) values (gen_random_uuid(), $1, 'ledger', $2, 0)`,
          [streamId, eventId]
        )
      })
    )
  }).pipe(Effect.orDie)

/** What the ledger must hold: the stream's amounts in event-id order. */
const foldInIdOrder = (streamId: string) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
    client.query<{ amount: number }>(`select (payload->>'amount')::int as amount from wh_events where stream_id = $1 order by event_id`, [
      streamId
    ])
  ).pipe(
    Effect.map((rows) => rows.map((r) => r.amount)),
    Effect.orDie
  )

const ledgerOf = (streamId: string) =>
  PerspectiveStore.getById(Ledger.ledger, streamId).pipe(
    Effect.map((model) => Option.getOrThrow(model).amounts),
    Effect.orDie
  )

const cursorOf = (streamId: string, perspective = "ledger") =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (client) =>
    client.query<{ status: number; last_event_id: string; rewind_trigger_event_id: string | null; stream_lock_instance_id: string | null }>(
      "select status, last_event_id, rewind_trigger_event_id, stream_lock_instance_id from wh_perspective_cursors where stream_id = $1 and perspective_name = $2",
      [streamId, perspective]
    )
  ).pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )

const pendingWork = Effect.flatMap(Effect.service(PgClient.PgClient), (c) =>
  c.query<{ n: number }>("select count(*)::int as n from wh_perspective_events")
).pipe(
  Effect.map(([r]) => r!.n),
  Effect.orDie
)

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i)

describe("late-arrival rewind on Postgres", () => {
  const rewound1 = Effect.runSync(Deferred.make<PerspectiveRewinder.Result>())
  scenario(
    "a late event flags the cursor; the rewind replays from the snapshot before it, and the model is the fold in id order",
    pipeline({ snapshots: { every: 20, keep: 5 }, rewindHooks: { onRewound: (r) => Effect.asVoid(Deferred.succeed(rewound1, r)) } }),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      yield* appendAll(id, range(1, 60))
      const lateId = EventId.unsafeMake() // sorts after the first 60 events and before the next 60
      yield* appendAll(id, range(61, 60))
      expect(yield* ledgerOf(id)).toEqual(range(1, 120))
      yield* insertLate(id, lateId, 1000)
      const result = yield* Deferred.await(rewound1).pipe(Effect.timeout(Duration.seconds(20)))
      expect(result.outcome).toBe("rewound")
      // Started from the newest snapshot before the trigger, not from the stream's start (121 events).
      expect(result.replayedEventIds.length).toBeLessThan(121)
      expect(result.replayedEventIds.length).toBeGreaterThan(60)
      yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
      const expected = yield* foldInIdOrder(id)
      expect(expected).toEqual([...range(1, 60), 1000, ...range(61, 60)])
      expect(yield* ledgerOf(id)).toEqual(expected)
      const cursor = yield* cursorOf(id)
      expect(cursor).toMatchObject({ status: 2, rewind_trigger_event_id: null, stream_lock_instance_id: null })
      expect(yield* pendingWork).toBe(0)
      // Snapshots after the trigger were recomputed: each one holds the fold up to its event.
      const client = yield* PgClient.PgClient
      const snapshots = yield* PgPerspectiveSnapshots.list(client, id, "ledger")
      expect(snapshots.length).toBeGreaterThan(0)
      for (const s of snapshots) {
        const upTo = (yield* client.query<{ amount: number }>(
          "select (payload->>'amount')::int as amount from wh_events where stream_id = $1 and event_id <= $2 order by event_id",
          [id, s.eventId]
        )).map((r) => r.amount)
        expect((s.data as { amounts: Array<number> }).amounts).toEqual(upTo)
      }
      const stats = yield* (yield* PgPerspectiveRewinder.PgPerspectiveRewinder).stats
      expect(stats).toMatchObject({ rewound: 1, failed: 0 })
    })
  )

  const during = Effect.runSync(Ref.make<Effect.Effect<void>>(Effect.void))
  const afterReplay = Effect.runSync(Ref.make<Effect.Effect<void>>(Effect.void))
  const rewound2 = Effect.runSync(Deferred.make<PerspectiveRewinder.Result>())
  scenario(
    "events appended during a rewind are included (before the replay read) or applied after it (after the read)",
    pipeline({
      rewindHooks: {
        onRewindStarted: () => Effect.flatten(Ref.getAndSet(during, Effect.void)),
        onReplayed: () => Effect.flatten(Ref.getAndSet(afterReplay, Effect.void)),
        onRewound: (r) => Effect.asVoid(Deferred.succeed(rewound2, r))
      }
    }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const id = EventId.unsafeMake()
      const lateId = EventId.unsafeMake()
      yield* appendAll(id, [1, 2, 3])
      yield* Ref.set(during, Effect.orDie(Effect.asVoid(store.append(id, [Ledger.note(id, 4), Ledger.note(id, 5)]))))
      yield* Ref.set(afterReplay, Effect.orDie(Effect.asVoid(store.append(id, [Ledger.note(id, 6)]))))
      yield* insertLate(id, lateId, 0)
      const result = yield* Deferred.await(rewound2).pipe(Effect.timeout(Duration.seconds(20)))
      expect(result.replayedEventIds).toHaveLength(6) // 0, 1..5: event 6 came after the read
      yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
      expect(yield* ledgerOf(id)).toEqual([0, 1, 2, 3, 4, 5, 6])
      expect(yield* foldInIdOrder(id)).toEqual([0, 1, 2, 3, 4, 5, 6])
      expect(yield* pendingWork).toBe(0)
    })
  )

  const aStarted = Effect.runSync(Deferred.make<void>())
  const aRelease = Effect.runSync(Deferred.make<void>())
  const aRewound = Effect.runSync(Deferred.make<PerspectiveRewinder.Result>())
  scenario(
    "two instances contend: one rewinds, the other skips (locked), both end consistent",
    pipeline({
      rewindHooks: {
        onRewindStarted: () => Deferred.succeed(aStarted, undefined).pipe(Effect.andThen(Deferred.await(aRelease))),
        onRewound: (r) => Effect.asVoid(Deferred.succeed(aRewound, r))
      }
    }),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      const lateId = EventId.unsafeMake()
      yield* appendAll(id, [1, 2])
      // Instance B: its own id and locker, the same database.
      const b = yield* PgPerspectiveRewinder.make({
        events: Ledger.events,
        perspectives: [Ledger.ledger],
        options: { startupScan: "off" }
      }).pipe(
        Effect.provide(PgPerspectiveStreamLocker.layer({ lockTimeout: 2000, keepAliveInterval: 500 })),
        Effect.provide(InstanceProvider.layerMemory({ serviceName: "ledger-b" }))
      )
      yield* insertLate(id, lateId, 0)
      yield* Deferred.await(aStarted).pipe(Effect.timeout(Duration.seconds(20)))
      const target = { streamId: id, perspectiveName: "ledger" }
      expect((yield* b.rewind(target, { force: true })).outcome).toBe("locked")
      yield* Deferred.succeed(aRelease, undefined)
      expect((yield* Deferred.await(aRewound)).outcome).toBe("rewound")
      expect((yield* b.rewind(target, { force: true })).outcome).toBe("notFlagged")
      yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitIdle
      expect(yield* ledgerOf(id)).toEqual([0, 1, 2])
      expect(yield* b.stats).toMatchObject({ locked: 1, rewound: 0, failed: 0 })
      expect(yield* (yield* PgPerspectiveRewinder.PgPerspectiveRewinder).stats).toMatchObject({ rewound: 1, failed: 0 })
    })
  )

  const killedRewound = Effect.runSync(Deferred.make<PerspectiveRewinder.Result>())
  scenario(
    "a killed holder's lock expires and another instance completes the rewind",
    pipeline({
      lock: { lockTimeout: 600, keepAliveInterval: 200 },
      rewindHooks: { onRewound: (r) => Effect.asVoid(Deferred.succeed(killedRewound, r)) }
    }),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      const lateId = EventId.unsafeMake()
      yield* appendAll(id, [1, 2])
      // A crashed rewinder leaves its lock behind: taken, never renewed, never released.
      const locker = yield* PerspectiveStreamLocker.PerspectiveStreamLocker
      const dead = globalThis.crypto.randomUUID()
      expect(yield* locker.tryAcquireLock(id, "ledger", dead, "rewind")).toBe(true)
      const started = Date.now()
      yield* insertLate(id, lateId, 0)
      expect((yield* Deferred.await(killedRewound).pipe(Effect.timeout(Duration.seconds(20)))).outcome).toBe("rewound")
      expect(Date.now() - started).toBeGreaterThanOrEqual(500)
      const stats = yield* (yield* PgPerspectiveRewinder.PgPerspectiveRewinder).stats
      // Workers do not claim a pair under a live stream lock, so the rewinder never even tried while it was held.
      expect(stats.locked).toBe(0)
      expect(stats.rewound).toBe(1)
      expect(yield* ledgerOf(id)).toEqual([0, 1, 2])
      expect((yield* cursorOf(id))!.stream_lock_instance_id).toBeNull()
    })
  )

  const replayed = Effect.runSync(Deferred.make<void>())
  const release = Effect.runSync(Deferred.make<void>())
  const longRewound = Effect.runSync(Deferred.make<PerspectiveRewinder.Result>())
  scenario(
    "the keepalive holds a rewind that runs longer than lockTimeout",
    pipeline({
      lock: { lockTimeout: 400, keepAliveInterval: 100 },
      rewindHooks: {
        onReplayed: () => Deferred.succeed(replayed, undefined).pipe(Effect.andThen(Deferred.await(release))),
        onRewound: (r) => Effect.asVoid(Deferred.succeed(longRewound, r))
      }
    }),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      const lateId = EventId.unsafeMake()
      yield* appendAll(id, [1, 2])
      yield* insertLate(id, lateId, 0)
      yield* Deferred.await(replayed).pipe(Effect.timeout(Duration.seconds(20)))
      // Real time must pass beyond the lock timeout: this sleep is the thing under test, not synchronisation.
      yield* Effect.sleep(Duration.millis(1200))
      const locker = yield* PerspectiveStreamLocker.PerspectiveStreamLocker
      expect(yield* locker.tryAcquireLock(id, "ledger", globalThis.crypto.randomUUID(), "rewind")).toBe(false)
      yield* Deferred.succeed(release, undefined)
      expect((yield* Deferred.await(longRewound)).outcome).toBe("rewound")
      expect(yield* ledgerOf(id)).toEqual([0, 1, 2])
      expect((yield* (yield* PgPerspectiveRewinder.PgPerspectiveRewinder).stats).failed).toBe(0)
    })
  )

  scenario(
    "snapshots are written every N applied events and pruned to the newest M",
    pipeline({ snapshots: { every: 10, keep: 3 } }),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      for (let batch = 0; batch < 5; batch++) yield* appendAll(id, range(batch * 10 + 1, 10))
      const client = yield* PgClient.PgClient
      const snapshots = yield* PgPerspectiveSnapshots.list(client, id, "ledger")
      const ids = (yield* client.query<{ event_id: string }>("select event_id from wh_events where stream_id = $1 order by event_id", [
        id
      ])).map((r) => r.event_id)
      expect(snapshots.map((s) => s.eventId)).toEqual([ids[29], ids[39], ids[49]])
      expect(snapshots.map((s) => (s.data as { amounts: Array<number> }).amounts.length)).toEqual([30, 40, 50])
    })
  )

  scenario(
    "bootstrap builds a new perspective's models over existing streams, reporting progress; a second run finds nothing",
    pipeline(),
    Effect.gen(function* () {
      const streams = Array.from({ length: 5 }, () => EventId.unsafeMake())
      for (const [i, id] of streams.entries()) yield* appendAll(id, range(1, i + 1))
      yield* PgPerspectiveStore.ensureTables(["tally"])
      const progress = yield* Ref.make<Array<string>>([])
      const summary = yield* PerspectiveBootstrap.bootstrap({
        events: Ledger.events,
        perspective: Ledger.tally,
        snapshots: { every: 2 },
        onProgress: (p) => Ref.update(progress, (all) => [...all, `${p.done}/${p.total} ${p.outcome}`])
      })
      expect(summary).toEqual({ perspectiveName: "tally", total: 5, built: 5, skipped: 0 })
      expect(yield* Ref.get(progress)).toEqual(["1/5 built", "2/5 built", "3/5 built", "4/5 built", "5/5 built"])
      const rows = yield* (yield* PerspectiveStore.PerspectiveStore).getMany("tally", streams)
      streams.forEach((id, i) => {
        expect(rows.get(id)?.data).toEqual({ count: i + 1, sum: ((i + 1) * (i + 2)) / 2 })
        expect(rows.get(id)?.version).toBe(i + 1)
      })
      expect(yield* cursorOf(streams[4]!, "tally")).toMatchObject({ status: 2 })
      const again = yield* PerspectiveBootstrap.bootstrap({ events: Ledger.events, perspective: Ledger.tally })
      expect(again).toEqual({ perspectiveName: "tally", total: 0, built: 0, skipped: 0 })
    })
  )

  scenario(
    "purge deletes the row, cursor and snapshots under the lock; a lock held by another instance makes it skip",
    pipeline({ snapshots: { every: 2, keep: 5 } }),
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const kept = EventId.unsafeMake()
      const purged = EventId.unsafeMake()
      yield* appendAll(kept, [1, 2, 3, 4])
      yield* appendAll(purged, [1, 2, 3, 4])
      const locker = yield* PerspectiveStreamLocker.PerspectiveStreamLocker
      const other = globalThis.crypto.randomUUID()
      expect(yield* locker.tryAcquireLock(purged, "ledger", other, "rewind")).toBe(true)
      expect(yield* PerspectivePurge.purge(purged, "ledger")).toBe("locked")
      yield* locker.releaseLock(purged, "ledger", other)
      expect(yield* PerspectivePurge.purge(purged, "ledger")).toBe("purged")
      expect(yield* (yield* PerspectiveStore.PerspectiveStore).getById("ledger", purged)).toEqual(Option.none())
      expect(yield* cursorOf(purged)).toBeUndefined()
      expect(yield* PgPerspectiveSnapshots.list(client, purged, "ledger")).toEqual([])
      expect(yield* ledgerOf(kept)).toEqual([1, 2, 3, 4])
      expect((yield* PgPerspectiveSnapshots.list(client, kept, "ledger")).length).toBeGreaterThan(0)
    })
  )
})
