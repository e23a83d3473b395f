import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStore, PerspectiveWorker, PerspectiveRewinder } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Layer, Option, Ref } from "effect"
import * as Bank from "./fixtures/bank.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

const pipeline = (config: Partial<PgPerspectivePipeline.Config> = {}) =>
  PgPerspectivePipeline.layer({ events: Bank.events, perspectives: Bank.perspectives, options: fast, ...config }).pipe(
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bank-test" })),
    Layer.provideMerge(PgTestDatabase.layer({ schema: "bank", maxConnections: 12 })),
    Layer.orDie
  )

const deposit = (accountId: string, amount: number) => Bank.Deposited.make({ accountId, amount })
const withdraw = (accountId: string, amount: number) => Bank.Withdrawn.make({ accountId, amount })

const countRows = (sql: string) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<{ n: number }>(`select count(*)::int as n from ${sql}`)).pipe(
    Effect.map(([r]) => r!.n)
  )

// The worker runs on the real clock: each scenario builds its own pipeline (and database) with `it.live`.
const scenario = <A, E>(name: string, layer: Layer.Layer<any, never, never>, body: Effect.Effect<A, E, any>, timeout = 60_000) =>
  it.live(name, () => Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(layer)))) as Effect.Effect<void, E>, timeout)

describe("perspective pipeline on Postgres", () => {
  scenario(
    "materializes 10,000 events over 1,000 streams in 2 perspectives to exactly the fold of each stream",
    pipeline(),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      const streams = Array.from({ length: 1000 }, () => EventId.unsafeMake())
      const expected = new Map<string, { balance: number; order: Array<number> }>()
      for (let round = 0; round < 5; round++) {
        yield* Effect.forEach(
          streams,
          (id, i) => {
            const amounts = [round * 10 + (i % 7), round + 1]
            const e = expected.get(id) ?? { balance: 0, order: [] }
            e.balance += amounts[0]! - amounts[1]!
            e.order.push(amounts[0]!, -amounts[1]!)
            expected.set(id, e)
            return store.append(id, [deposit(id, amounts[0]!), withdraw(id, amounts[1]!)])
          },
          { concurrency: 8, discard: true }
        )
      }
      yield* worker.awaitIdle
      const balances = yield* models.getMany("balance", streams)
      const activities = yield* models.getMany("activity", streams)
      const activityModels = yield* PerspectiveStore.getMany(Bank.activity, streams) // decoded with the perspective's schema
      for (const id of streams) {
        expect(balances.get(id)?.data).toEqual({ balance: expected.get(id)!.balance, audits: 0 })
        expect(activityModels.get(id)?.order).toEqual(expected.get(id)!.order)
        expect(activities.get(id)?.version).toBe(10)
      }
      expect(yield* countRows("wh_perspective_events")).toBe(0)
      expect(yield* countRows("wh_active_streams")).toBe(0)
      expect(yield* countRows("wh_perspective_cursors where status = 2")).toBe(2000)
      expect((yield* worker.stats).eventsApplied).toBe(20_000)
    }),
    180_000
  )

  // (Dedup of re-delivered rows is a unit test of the worker: in Postgres a committed row is gone, or, in debug mode,
  // marked processed and behind the cursor, so the same row cannot come back; new rows for the same events — a
  // rebuild — must be applied, see the CLI's rebuild test.)
  scenario(
    "debug mode keeps the applied work rows, marked processed, and still releases the drained stream",
    pipeline({ options: { ...fast, debugMode: true } }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const client = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      const appended = yield* store.append(id, [deposit(id, 5), deposit(id, 7)])
      yield* worker.awaitIdle
      expect(yield* PerspectiveStore.getById(Bank.balance, id)).toEqual(Option.some({ balance: 12, audits: 0 }))
      const kept = yield* client.query<{ event_id: string; perspective_name: string; processed: boolean; leased: boolean }>(
        `select event_id, perspective_name, processed_at is not null as processed, instance_id is not null as leased
         from wh_perspective_events order by perspective_name, event_id`
      )
      const ids = appended.events.map((e) => e.eventId)
      expect(kept).toEqual(
        ["activity", "balance"].flatMap((perspective_name) =>
          ids.map((event_id) => ({ event_id, perspective_name, processed: true, leased: false }))
        )
      )
      expect(yield* countRows("wh_active_streams")).toBe(0)
      expect(yield* countRows("wh_perspective_cursors where status = 2")).toBe(2)
      expect((yield* worker.stats).eventsApplied).toBe(4)
    })
  )

  const cursorStatuses = Effect.runSync(Ref.make<Array<number>>([]))
  // The hook has no services of its own: the test hands it the pipeline's client.
  const statusClient: { current?: PgClient.PgClient["Service"] } = {}
  scenario(
    "a cursor is Processing | CatchingUp while its pair has more work than one batch, Completed once drained",
    pipeline({
      options: { ...fast, perspectiveBatchSize: 2 },
      hooks: {
        // Runs after each commit, before the worker drains the rest of the stream.
        onPerspectiveEventProcessed: (group) =>
          group.perspectiveName !== "balance" || statusClient.current === undefined
            ? Effect.void
            : Effect.gen(function* () {
                const [row] = yield* statusClient.current!.query<{ status: number }>(
                  `select status from wh_perspective_cursors where stream_id = $1 and perspective_name = 'balance'`,
                  [group.streamId]
                )
                yield* Ref.update(cursorStatuses, (all) => [...all, row!.status])
              }).pipe(Effect.orDie)
      }
    }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      statusClient.current = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      yield* store.append(
        id,
        [1, 2, 3, 4, 5].map((n) => deposit(id, n))
      )
      yield* worker.awaitIdle
      // 5 events in batches of 2: two commits with more pending (1 | 8 = 9), then the last one (2).
      expect(yield* Ref.get(cursorStatuses)).toEqual([9, 9, 2])
      expect(yield* countRows("wh_perspective_cursors where status = 2")).toBe(2)
    })
  )

  const failing = () =>
    pipeline({
      options: { ...fast, maxPerspectiveEventAttempts: 3 },
      failureBackoff: { initial: Duration.millis(10), multiplier: 2, max: Duration.millis(50) }
    })
  const untilDeadLetter = (where: string, params: ReadonlyArray<unknown> = []) =>
    Effect.gen(function* () {
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const client = yield* PgClient.PgClient
      // Each retry waits out a short backoff, during which the worker is idle: go round until the letter is there.
      for (;;) {
        yield* worker.awaitIdle
        const letters = yield* client.query<{
          event_id: string
          error: string
          attempts: number
          payload: unknown
          perspective_name: string
        }>(`select event_id, error, attempts, payload, perspective_name from wh_dead_letters where ${where}`, params)
        if (letters.length > 0) return letters
      }
    })

  const unreadableFailures = Effect.runSync(Ref.make(0))
  const enoughFailures = Effect.runSync(Deferred.make<void>())
  scenario(
    "a stored model that no longer decodes stops the pair without spending attempts: nothing is dead-lettered, and it resumes once fixed",
    pipeline({
      options: { ...fast, maxPerspectiveEventAttempts: 2 },
      failureBackoff: { initial: Duration.millis(10), multiplier: 2, max: Duration.millis(50) },
      hooks: {
        onPerspectiveEventFailed: () =>
          Effect.flatMap(
            Ref.updateAndGet(unreadableFailures, (n) => n + 1),
            (n) => (n >= 5 ? Deferred.succeed(enoughFailures, undefined) : Effect.void)
          )
      }
    }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      const client = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      yield* store.append(id, [deposit(id, 5)])
      yield* worker.awaitIdle
      // The schema changed under the stored row (or it was edited by hand): it no longer decodes.
      yield* client.query(`update wh_per_balance set data = '{"balance":"five"}' where id = $1`, [id])
      yield* store.append(id, [deposit(id, 7), deposit(id, 1)])
      yield* Deferred.await(enoughFailures) // 5 failed tries, more than maxPerspectiveEventAttempts (2)
      const rows = yield* client.query<{ attempts: number; error: string | null }>(
        `select attempts, error from wh_perspective_events where perspective_name = 'balance' order by event_id`
      )
      expect(rows.map((r) => r.attempts)).toEqual([0, 0])
      expect(rows[0]!.error).toMatch(/stored model no longer decodes/)
      expect(yield* countRows("wh_dead_letters")).toBe(0)
      expect(yield* countRows("wh_perspective_cursors where perspective_name = 'balance' and status & 4 = 4")).toBe(1)
      // The other perspective of the stream is not held back.
      expect((Option.getOrThrow(yield* models.getById("activity", id)).data as { order: Array<number> }).order).toEqual([5, 7, 1])
      // Fixed: the pair resumes from the repaired model with every event.
      yield* client.query(`update wh_per_balance set data = '{"balance":5,"audits":0}' where id = $1`, [id])
      for (;;) {
        yield* worker.awaitIdle // each retry first waits out the short backoff
        if ((yield* countRows("wh_perspective_events")) === 0) break
      }
      expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 13, audits: 0 })
      expect(yield* countRows("wh_dead_letters")).toBe(0)
    })
  )

  scenario(
    "stops a stream at a failing event, retries, dead-letters it after N attempts, then continues; other streams finish",
    failing(),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      const bad = EventId.unsafeMake()
      const good = EventId.unsafeMake()
      const appended = yield* store.append(bad, [deposit(bad, 10), Bank.Audited.make({ accountId: bad, fail: true }), deposit(bad, 5)])
      yield* store.append(good, [deposit(good, 1), Bank.Audited.make({ accountId: good, fail: false })])
      const [letter] = yield* untilDeadLetter("true")
      yield* worker.awaitIdle
      expect(letter).toMatchObject({
        event_id: appended.events[1]!.eventId,
        attempts: 3,
        perspective_name: "balance",
        payload: { accountId: bad, fail: true }
      })
      expect(letter!.error).toMatch(/audit rejected/)
      expect(Option.getOrThrow(yield* models.getById("balance", bad)).data).toEqual({ balance: 15, audits: 0 })
      expect(Option.getOrThrow(yield* models.getById("balance", good)).data).toEqual({ balance: 1, audits: 1 })
      expect(yield* countRows("wh_perspective_events")).toBe(0)
      expect((yield* worker.stats).failures).toBe(3)
    })
  )

  scenario(
    "dead-letters an undecodable payload with its decode error",
    failing(),
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      const eventId = EventId.unsafeMake()
      yield* client.withTransaction(
        Effect.gen(function* () {
          yield* client.query(
            `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, metadata) values ($1, $2, 1, 'Deposited', '{"accountId": 1}', '{}')`,
            [eventId, id]
          )
          yield* client.query(
            `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number) values (gen_random_uuid(), $1, 'balance', $2, 0)`,
            [id, eventId]
          )
        })
      )
      const [letter] = yield* untilDeadLetter("event_id = $1", [eventId])
      expect(letter!.error).toMatch(/invalid payload for Deposited/)
      const [cursor] = yield* client.query<{ status: number; error: string }>(
        "select status, error from wh_perspective_cursors where stream_id = $1",
        [id]
      )
      expect(cursor!.status & 4).toBe(4)
      expect(cursor!.error).toMatch(/invalid payload/)
    })
  )

  const processed = Effect.runSync(Deferred.make<string>())
  scenario(
    "wakes on NOTIFY: with a 60 s poll an appended event still materializes at once",
    pipeline({
      options: { ...fast, pollingInterval: Duration.minutes(1), notifyHealthyPollingInterval: Duration.minutes(1) },
      hooks: { onPerspectiveEventProcessed: (group) => Effect.asVoid(Deferred.succeed(processed, group.streamId)) }
    }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      // After the start-up poll the claim loop sleeps 60 s: only a notification can wake it in time.
      yield* worker.awaitPolls(1)
      const id = EventId.unsafeMake()
      yield* store.append(id, [deposit(id, 3)])
      expect(yield* Deferred.await(processed).pipe(Effect.timeout(Duration.seconds(5)))).toBe(id)
      expect(Option.getOrThrow(yield* models.getById("balance", id)).data).toEqual({ balance: 3, audits: 0 })
      expect((yield* worker.stats).polls).toBeGreaterThanOrEqual(2)
    }),
    30_000
  )

  scenario(
    "the instant strategy materializes the same folds",
    pipeline({ completionStrategy: "instant" }),
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const worker = yield* PerspectiveWorker.PerspectiveWorker
      const models = yield* PerspectiveStore.PerspectiveStore
      const streams = Array.from({ length: 50 }, () => EventId.unsafeMake())
      yield* Effect.forEach(streams, (id) => store.append(id, [deposit(id, 10), withdraw(id, 3), deposit(id, 1)]), {
        concurrency: 4,
        discard: true
      })
      yield* worker.awaitIdle
      const rows = yield* models.getMany("balance", streams)
      expect([...rows.values()].map((r) => r.data)).toEqual(streams.map(() => ({ balance: 8, audits: 0 })))
    })
  )
})
