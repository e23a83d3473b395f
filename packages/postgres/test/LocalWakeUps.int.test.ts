// Appends wake the work listeners of their own process directly, and their NOTIFY names the process so those
// listeners skip it (a worker in the appending process starts its claim right after the commit instead of a NOTIFY
// round trip later); every other process's listeners act on it.
import { describe, expect, it } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, NotificationListener } from "@whizbang/core"
import { PgClient, PgNotificationListener, PgPerspectivePipeline } from "@whizbang/postgres"
import { PgTestDatabase } from "@whizbang/testing"
import { Effect, Layer, Queue, Schedule, Stream } from "effect"
import * as LocalWakeUps from "../src/internal/localWakeUps.js"
import * as Bank from "./fixtures/bank.js"

const config = { events: Bank.events, perspectives: Bank.perspectives, options: {} }

describe("work wake-ups inside one process", () => {
  it.live("an append wakes this process at once, never before its commit, and its NOTIFY names the process", () =>
    Effect.gen(function* () {
      const store = yield* EventStore.EventStore
      const client = yield* PgClient.PgClient
      const published: Array<string> = []
      yield* Effect.acquireRelease(
        Effect.sync(() => LocalWakeUps.subscribe((schema) => void published.push(schema))),
        (unsubscribe) => Effect.sync(unsubscribe)
      )
      const session = yield* Effect.acquireRelease(client.connect, (c) => Effect.promise(() => c.end()))
      const payloads = yield* Queue.unbounded<string>()
      session.on("notification", (n) => void (n.channel === "wh_work" && Queue.offerUnsafe(payloads, n.payload ?? "")))
      yield* Effect.promise(() => session.query("LISTEN wh_work"))

      const stream = EventId.unsafeMake()
      const deposit = Bank.Deposited.make({ accountId: stream, amount: 1 })
      // Inside a caller's transaction the work is not visible before its commit: no local wake-up (the commit's
      // own NOTIFY, the bare schema, wakes everyone).
      yield* client.withTransaction(store.append(stream, [deposit]))
      expect(published).toEqual([])
      expect(yield* Queue.take(payloads)).toBe(client.schema)
      // On its own: woken by the time the append returns; the NOTIFY after it names this process.
      yield* store.append(stream, [deposit])
      expect(published).toEqual([client.schema])
      expect(yield* Queue.take(payloads)).toBe(`${client.schema}\n${LocalWakeUps.processToken}`)
    }).pipe(
      // The session's and the listener's scope closes before the database is dropped.
      Effect.scoped,
      Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
      Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
      Effect.scoped
    )
  )

  it.live("the work listener wakes on a local publish of its schema and on other processes' notifications", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const listener = yield* NotificationListener.NotificationListener
      const wakeUps = yield* Queue.unbounded<void>()
      yield* Effect.forkScoped(Stream.runForEach(listener.wakeUps, () => Queue.offer(wakeUps, undefined)))
      // Until the subscription and the LISTEN are both up: a notification of another process gets through.
      yield* Effect.repeat(
        Effect.andThen(
          client.query("SELECT pg_notify('wh_work', $1)", [`${client.schema}\nanother-process`]),
          Effect.timeoutOption(Queue.take(wakeUps), "200 millis")
        ),
        { until: (woke) => woke._tag === "Some", schedule: Schedule.spaced("10 millis") }
      )
      LocalWakeUps.publish(client.schema)
      yield* Queue.take(wakeUps)
    }).pipe(Effect.provide(PgNotificationListener.layer), Effect.provide(PgTestDatabase.layer({ schema: "bank" })), Effect.scoped)
  )

  it.live("a process without a subscriber (no worker) holds no LISTEN connection; the first subscriber opens one, a second shares it", () =>
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const store = yield* EventStore.EventStore
      const listener = yield* NotificationListener.NotificationListener
      const listening = Effect.map(
        client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN wh_work'"
        ),
        (rows) => rows[0]!.n
      )
      const stream = EventId.unsafeMake()
      yield* store.append(stream, [Bank.Deposited.make({ accountId: stream, amount: 1 })])
      expect(yield* listening).toBe(0)

      const wakeUps = yield* Queue.unbounded<string>()
      yield* Effect.forkScoped(Stream.runForEach(listener.wakeUps, () => Queue.offer(wakeUps, "first")))
      yield* Effect.forkScoped(Stream.runForEach(listener.wakeUps, () => Queue.offer(wakeUps, "second")))
      // The wake-up that follows the LISTEN reaches both subscribers (subscribed before the connection opened).
      expect(new Set([yield* Queue.take(wakeUps), yield* Queue.take(wakeUps)])).toEqual(new Set(["first", "second"]))
      expect(yield* listening).toBe(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(PgPerspectivePipeline.layerPorts(config).pipe(Layer.provide(InstanceProvider.layerMemory()), Layer.orDie)),
      Effect.provide(PgTestDatabase.layer({ schema: "bank" })),
      Effect.scoped
    )
  )
})
