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
  Receptor
} from "@whizbang/core"
import { Duration, Effect, Option, Ref, Schema } from "effect"

const Deposited = EventDefinition.make("Deposited", {
  payload: Schema.Struct({ accountId: Schema.String, amount: Schema.Number, at: Schema.DateTimeUtcFromString }),
  streamId: (p) => p.accountId
})
const events = EventRegistry.make([Deposited])
const balance = Perspective.make({
  name: "balance",
  events: [Deposited],
  model: Schema.Struct({ total: Schema.Number }),
  initial: { total: 0 },
  apply: { Deposited: (m, e) => ({ total: m.total + e.payload.amount }) }
})
const options = {
  pollingInterval: Duration.millis(20),
  notifyHealthyPollingInterval: Duration.millis(20),
  drainBatcher: { slidingWindow: Duration.millis(1), maxWait: Duration.millis(5), maxSize: 100 }
}

describe("MemoryPipeline", () => {
  it.live(
    "materializes read models in memory: append, worker applies, store reads",
    () =>
      Effect.gen(function* () {
        const seen = yield* Ref.make<Array<string>>([])
        const receptor = Receptor.make({
          name: "audit",
          handles: [Deposited],
          stage: "PostPerspective",
          handle: (e) => Ref.update(seen, (all) => [...all, e.eventId])
        })
        yield* Effect.gen(function* () {
          const worker = yield* PerspectiveWorker.PerspectiveWorker
          const at = yield* Schema.decodeUnknownEffect(Schema.DateTimeUtcFromString)("2026-01-01T00:00:00.000Z")
          const a = EventId.unsafeMake()
          const b = EventId.unsafeMake()
          const appended = yield* EventStore.append(a, [
            Deposited.make({ accountId: a, amount: 5, at }),
            Deposited.make({ accountId: a, amount: 7, at })
          ])
          yield* EventStore.append(b, [Deposited.make({ accountId: b, amount: 1, at })])
          yield* PerspectiveWorker.awaitIdle
          expect(Option.getOrThrow(yield* PerspectiveStore.getById(balance, a))).toEqual({ total: 12 })
          expect(Option.getOrThrow(yield* PerspectiveStore.getById(balance, b))).toEqual({ total: 1 })
          expect(yield* Ref.get(seen)).toEqual(expect.arrayContaining(appended.events.map((e) => e.eventId)))
          expect((yield* worker.stats).eventsApplied).toBe(3)
        }).pipe(Effect.provide(MemoryPipeline.layer({ events, perspectives: [balance], receptors: [receptor], options })), Effect.scoped)
      }),
    20_000
  )
})
