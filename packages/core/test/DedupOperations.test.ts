/**
 * Rebuild, rewind, purge and dead-letter retry each put events this worker already applied (within the dedup
 * TTL) back in front of it as NEW work rows. None of them may be taken for a duplicate: the dedup cache is keyed by
 * work row, so only the database re-delivering the same row is one. Each operation is modelled here by what it
 * does to the read model and the work queue (the Postgres statements do the same; see the rebuild int test).
 */
import { describe, expect, it } from "@effect/vitest"
import {
  EventDefinition,
  EventId,
  EventRegistry,
  EventStore,
  MemoryPipeline,
  Perspective,
  PerspectiveStore,
  PerspectiveWorker,
  WorkCoordinator
} from "@whizbang/core"
import { Duration, Effect, Option, Schema } from "effect"

const Noted = EventDefinition.make("Noted", {
  payload: Schema.Struct({ streamId: Schema.String, n: Schema.Number }),
  streamId: (p) => p.streamId
})
const events = EventRegistry.make([Noted])
// The model lists every applied n, so a dropped or doubled event shows.
const log = Perspective.make({
  name: "log",
  events: [Noted],
  model: Schema.Struct({ ns: Schema.Array(Schema.Number) }),
  initial: { ns: [] },
  apply: { Noted: (m, e) => ({ ns: [...m.ns, e.payload.n] }) }
})
const options = { pollingInterval: Duration.millis(20), notifyHealthyPollingInterval: Duration.millis(20), lease: Duration.seconds(300) }

type Operation = (ctx: {
  readonly streamId: string
  readonly store: PerspectiveStore.Shape
  /** Enqueues fresh work rows (new work ids) for these appended events, as the operation's SQL does. */
  readonly requeue: (ns: ReadonlyArray<number>) => Effect.Effect<void>
}) => Effect.Effect<void, unknown>

const setModel = (store: PerspectiveStore.Shape, streamId: string, ns: ReadonlyArray<number> | undefined) =>
  store.writeBatch([{ perspectiveName: "log", streamId, data: { ns: ns ?? [] }, action: ns === undefined ? "delete" : "none" }])

const scenario = (operation: Operation) =>
  Effect.gen(function* () {
    const eventStore = yield* EventStore.EventStore
    const worker = yield* PerspectiveWorker.PerspectiveWorker
    const store = yield* PerspectiveStore.PerspectiveStore
    const memory = yield* WorkCoordinator.Memory
    const streamId = EventId.unsafeMake()
    const appended = yield* eventStore.append(
      streamId,
      [1, 2, 3, 4].map((n) => Noted.make({ streamId, n }))
    )
    yield* worker.awaitIdle
    expect(Option.getOrThrow(yield* store.getById("log", streamId)).data).toEqual({ ns: [1, 2, 3, 4] })
    const requeue = (ns: ReadonlyArray<number>) =>
      Effect.forEach(ns, (n) => {
        const e = appended.events[n - 1]!
        return Effect.map(Effect.orDie(events.encode(e.eventType, e.payload)), (payload) => ({
          workId: EventId.unsafeMake(),
          streamId,
          perspectiveName: "log",
          eventId: e.eventId,
          eventType: e.eventType,
          payload
        }))
      }).pipe(Effect.flatMap((rows) => memory.enqueue(rows)))
    yield* operation({ streamId, store, requeue })
    yield* worker.requestImmediatePoll
    yield* worker.awaitIdle
    expect(Option.getOrThrow(yield* store.getById("log", streamId)).data).toEqual({ ns: [1, 2, 3, 4] })
    expect((yield* worker.stats).deduped).toBe(0)
    expect(yield* memory.workRows).toEqual([])
  }).pipe(Effect.provide(MemoryPipeline.layer({ events, perspectives: [log], options })), Effect.scoped)

describe("dedup never drops the work of an operation (all within the TTL)", () => {
  it.live(
    "rebuild: row deleted, every event enqueued again",
    () => scenario(({ requeue, store, streamId }) => Effect.andThen(setModel(store, streamId, undefined), requeue([1, 2, 3, 4]))),
    20_000
  )

  it.live(
    "rewind: model reset to a snapshot, the events after it replayed",
    () => scenario(({ requeue, store, streamId }) => Effect.andThen(setModel(store, streamId, [1]), requeue([2, 3, 4]))),
    20_000
  )

  it.live(
    "purge then re-delivery: the pair starts over from the initial model",
    () => scenario(({ requeue, store, streamId }) => Effect.andThen(setModel(store, streamId, undefined), requeue([1, 2, 3, 4]))),
    20_000
  )

  it.live(
    "dead-letter retry: the lettered event comes back as a fresh row",
    () => scenario(({ requeue, store, streamId }) => Effect.andThen(setModel(store, streamId, [1, 2, 3]), requeue([4]))),
    20_000
  )

  it.live(
    "the same work row delivered twice is still a duplicate",
    () =>
      Effect.gen(function* () {
        const eventStore = yield* EventStore.EventStore
        const worker = yield* PerspectiveWorker.PerspectiveWorker
        const store = yield* PerspectiveStore.PerspectiveStore
        const memory = yield* WorkCoordinator.Memory
        const streamId = EventId.unsafeMake()
        yield* eventStore.append(streamId, [Noted.make({ streamId, n: 1 })])
        const [row] = yield* memory.workRows
        yield* worker.awaitIdle
        // The database re-delivers the row it already handed out (a completion not yet acknowledged elsewhere).
        yield* memory.enqueue([row!])
        yield* worker.requestImmediatePoll
        yield* worker.awaitIdle
        expect(Option.getOrThrow(yield* store.getById("log", streamId)).data).toEqual({ ns: [1] })
        expect((yield* worker.stats).deduped).toBe(1)
      }).pipe(Effect.provide(MemoryPipeline.layer({ events, perspectives: [log], options })), Effect.scoped),
    20_000
  )
})
