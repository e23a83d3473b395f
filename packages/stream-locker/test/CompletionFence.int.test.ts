// Stream locks fence completions: a purge, rewind or bootstrap that takes a pair's stream lock after a worker cycle
// fetched the pair's work wins over that cycle's commit. The interleaving is made deterministic by running the
// operation inside the worker's completion call (a wrapped coordinator): after the cycle fetched the rows, read the
// models and applied the events, before the commit.
import { describe, expect, it } from "@effect/vitest"
import {
  EventId,
  EventStore,
  InstanceProvider,
  type Perspective,
  PerspectiveRewinder,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator
} from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgStatus, PgWorkCoordinator } from "@whizbang/postgres"
import { PerspectiveBootstrap, PerspectivePurge, PerspectiveStreamLocker, PgPerspectiveStreamLocker } from "@whizbang/stream-locker"
import { PgTestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Fiber, Layer, Option, Ref } from "effect"
import * as Ledger from "./fixtures/ledger.js"

const fast = {
  pollingInterval: Duration.millis(50),
  notifyHealthyPollingInterval: Duration.millis(50),
  drainBatcher: { slidingWindow: Duration.millis(5), maxWait: Duration.millis(50), maxSize: 1000 }
}

/** Runs once, just before the first completion that commits work of `streamId` for `perspective`. */
interface Armed {
  readonly streamId: string
  readonly perspective: string
  readonly action: Effect.Effect<void>
}

const pipeline = (armed: Ref.Ref<Option.Option<Armed>>, perspectives: ReadonlyArray<Perspective.Any> = [Ledger.ledger]) => {
  const config = { events: Ledger.events, perspectives, options: fast }
  const wrapped = Layer.effect(
    WorkCoordinator.WorkCoordinator,
    Effect.map(
      PgWorkCoordinator.make(),
      (inner): WorkCoordinator.Shape => ({
        ...inner,
        reportCompletions: (completions) =>
          Effect.flatMap(Ref.get(armed), (current) => {
            if (Option.isNone(current)) return inner.reportCompletions(completions)
            const { action, perspective, streamId } = current.value
            if (!completions.some((c) => c.streamId === streamId && c.perspectiveName === perspective))
              return inner.reportCompletions(completions)
            return Ref.set(armed, Option.none()).pipe(Effect.andThen(action), Effect.andThen(inner.reportCompletions(completions)))
          })
      })
    )
  )
  return PerspectiveWorker.layer(config).pipe(
    Layer.provide(wrapped),
    Layer.provide(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(PgPerspectivePipeline.layerPorts(config)),
    Layer.provideMerge(PgPerspectiveStreamLocker.layer({ lockTimeout: 60_000, keepAliveInterval: 1_000 })),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "fence-test" })),
    Layer.provideMerge(PgTestDatabase.layer({ schema: "fence", maxConnections: 12 })),
    Layer.orDie
  )
}

const scenario = <A, E>(name: string, layer: Layer.Layer<any, never, never>, body: Effect.Effect<A, E, any>, timeout = 60_000) =>
  it.live(name, () => Effect.scoped(Effect.asVoid(body.pipe(Effect.provide(layer)))) as Effect.Effect<void, E>, timeout)

const append = (streamId: string, amounts: ReadonlyArray<number>) =>
  Effect.flatMap(Effect.service(EventStore.EventStore), (store) =>
    store.append(
      streamId,
      amounts.map((a) => Ledger.note(streamId, a))
    )
  ).pipe(Effect.orDie)

const idle = Effect.flatMap(Effect.service(PerspectiveWorker.PerspectiveWorker), (w) => w.awaitIdle).pipe(
  Effect.timeout(Duration.seconds(20)),
  Effect.orDie
)

const modelOf = (perspective: string, streamId: string) =>
  Effect.flatMap(Effect.service(PerspectiveStore.PerspectiveStore), (s) => s.getById(perspective, streamId)).pipe(
    Effect.map(Option.map((row) => row.data)),
    Effect.orDie
  )

const pending = (streamId: string) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), (c) =>
    c.query<{ n: number }>("select count(*)::int as n from wh_perspective_events where stream_id = $1", [streamId])
  ).pipe(
    Effect.map(([r]) => r!.n),
    Effect.orDie
  )

/** Another process (its own instance id) running an operation against the same database. */
const asAdmin = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, InstanceProvider.layerMemory({ serviceName: "admin" }))

describe("stream locks fence completions", () => {
  const purgeArmed = Effect.runSync(Ref.make(Option.none<Armed>()))
  const purged = Effect.runSync(Deferred.make<PerspectivePurge.Outcome>())
  scenario(
    "a purge that ran between a cycle's fetch and its commit wins: the pending events start a new model",
    pipeline(purgeArmed),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      yield* append(id, [1, 2])
      yield* idle
      expect(yield* modelOf("ledger", id)).toEqual(Option.some({ amounts: [1, 2] }))
      const context = yield* Effect.context<PgClient.PgClient | PerspectiveStreamLocker.PerspectiveStreamLocker>()
      yield* Ref.set(
        purgeArmed,
        Option.some({
          streamId: id,
          perspective: "ledger",
          action: asAdmin(PerspectivePurge.purge(id, "ledger")).pipe(
            Effect.provide(context),
            Effect.flatMap((outcome) => Deferred.succeed(purged, outcome)),
            Effect.orDie,
            Effect.asVoid
          )
        })
      )
      yield* append(id, [3, 4])
      expect(yield* Deferred.await(purged).pipe(Effect.timeout(Duration.seconds(20)), Effect.orDie)).toBe("purged")
      yield* idle
      // Without the fence the fetched cycle would have committed [1, 2, 3, 4] over the purge.
      expect(yield* modelOf("ledger", id)).toEqual(Option.some({ amounts: [3, 4] }))
      expect(yield* pending(id)).toBe(0)
    })
  )

  const lockArmed = Effect.runSync(Ref.make(Option.none<Armed>()))
  scenario(
    "a stream lock taken after the fetch stops the commit; the pair waits, status names the holder, and it applies after the release",
    pipeline(lockArmed),
    Effect.gen(function* () {
      const id = EventId.unsafeMake()
      const holder = globalThis.crypto.randomUUID()
      const locker = yield* PerspectiveStreamLocker.PerspectiveStreamLocker
      yield* append(id, [1, 2])
      yield* idle
      const took = yield* Deferred.make<boolean>()
      yield* Ref.set(
        lockArmed,
        Option.some({
          streamId: id,
          perspective: "ledger",
          action: locker.tryAcquireLock(id, "ledger", holder, "rewind").pipe(
            Effect.flatMap((ok) => Deferred.succeed(took, ok)),
            Effect.orDie,
            Effect.asVoid
          )
        })
      )
      yield* append(id, [3, 4])
      expect(yield* Deferred.await(took).pipe(Effect.timeout(Duration.seconds(20)), Effect.orDie)).toBe(true)
      yield* idle
      expect(yield* modelOf("ledger", id)).toEqual(Option.some({ amounts: [1, 2] }))
      expect(yield* pending(id)).toBe(2)
      const waiting = (yield* PgStatus.snapshot().pipe(Effect.orDie)).waiting
      expect(waiting.map((w) => [w.streamId, w.reason])).toEqual([
        [id, { _tag: "StreamLocked", instanceId: holder, lockReason: "rewind", until: expect.any(String) }]
      ])
      yield* locker.releaseLock(id, "ledger", holder).pipe(Effect.orDie)
      yield* idle
      expect(yield* modelOf("ledger", id)).toEqual(Option.some({ amounts: [1, 2, 3, 4] }))
      expect(yield* pending(id)).toBe(0)
    })
  )

  const bootstrapArmed = Effect.runSync(Ref.make(Option.none<Armed>()))
  scenario(
    'bootstrap rebuilds under the stream lock with reason "bootstrap", and a completion fetched before it does not overwrite it',
    pipeline(bootstrapArmed, [Ledger.ledger, Ledger.tally]),
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const id = EventId.unsafeMake()
      yield* append(
        id,
        Array.from({ length: 3000 }, (_, i) => i + 1)
      )
      yield* idle
      // The tally perspective is "new": forget what the worker did for it, keeping its pending work for the last event.
      yield* client.query("delete from wh_perspective_cursors where perspective_name = 'tally'").pipe(Effect.orDie)
      yield* client.query("delete from wh_per_tally").pipe(Effect.orDie)
      const context = yield* Effect.context<PgClient.PgClient | PerspectiveStreamLocker.PerspectiveStreamLocker>()
      const reasons = yield* Ref.make<Array<string>>([])
      const done = yield* Deferred.make<PerspectiveBootstrap.Summary>()
      // Watches the lock while the rebuild runs (no hook exists inside a bootstrap): what reason does it carry?
      const watch = client
        .query<{ reason: string }>(
          "select stream_lock_reason as reason from wh_perspective_cursors where stream_id = $1 and perspective_name = 'tally' and stream_lock_reason is not null",
          [id]
        )
        .pipe(
          Effect.flatMap((rows) => Ref.update(reasons, (all) => [...all, ...rows.map((r) => r.reason)])),
          Effect.orDie,
          Effect.forever
        )
      yield* Ref.set(
        bootstrapArmed,
        Option.some({
          streamId: id,
          perspective: "tally",
          action: Effect.gen(function* () {
            const watcher = yield* Effect.forkChild(watch)
            const summary = yield* asAdmin(PerspectiveBootstrap.bootstrap({ events: Ledger.events, perspective: Ledger.tally })).pipe(
              Effect.provide(context),
              Effect.orDie
            )
            yield* Fiber.interrupt(watcher)
            yield* Deferred.succeed(done, summary)
          })
        })
      )
      yield* append(id, [3001])
      expect(yield* Deferred.await(done).pipe(Effect.timeout(Duration.seconds(30)), Effect.orDie)).toMatchObject({ built: 1 })
      yield* idle
      expect(yield* Ref.get(reasons)).toContain("bootstrap")
      const sum = (3001 * 3002) / 2
      expect(yield* modelOf("tally", id)).toEqual(Option.some({ count: 3001, sum }))
      expect(yield* pending(id)).toBe(0)
    }),
    90_000
  )
})
