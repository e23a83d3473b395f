// Tracing through the front door: a tracer provided to `Whizbang.layer` (as the cli README composes
// `Telemetry.layerConfig`) sees one `whizbang.apply` span per applied (stream, perspective), under concurrent
// writers. The worker builds those spans only while a tracer other than Effect's native one is installed.
import { describe, expect, it } from "@effect/vitest"
import { TestDatabase } from "@whizbang/testing"
import { Duration, Effect, Layer, Option, Tracer } from "effect"
import { EventId, EventStore, SyncAwareLens, SyncFilter, Whizbang } from "whizbang"
import * as Fixtures from "./fixtures.js"

describe("tracing through Whizbang.layer", () => {
  it.live("4 concurrent writers on 8 streams: every applied event is under a whizbang.apply span naming its stream", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase.TestDatabase
      const applies: Array<{ streamId: unknown; events: unknown }> = []
      const recording = Tracer.make({
        span: (options) => {
          const span = Tracer.nativeTracer.span(options)
          if (options.name !== "whizbang.apply") return span
          const entry: { streamId: unknown; events: unknown } = { streamId: undefined, events: undefined }
          applies.push(entry)
          const attribute = span.attribute.bind(span)
          span.attribute = (key, value) => {
            if (key === "whizbang.stream_id") entry.streamId = value
            if (key === "whizbang.events") entry.events = value
            attribute(key, value)
          }
          return span
        }
      })
      const { events, perspectives } = yield* Fixtures.definitions
      const app = Whizbang.layer({
        databaseUrl: url,
        schema: "tracing",
        events,
        perspectives,
        options: Fixtures.fast,
        watchdog: { interval: null }
      }).pipe(Layer.provide(Layer.succeed(Tracer.Tracer, recording)))
      const streams = Array.from({ length: 8 }, () => EventId.unsafeMake())
      const totals = yield* Effect.gen(function* () {
        const store = yield* EventStore.EventStore
        // Writer w appends one deposit of w + 1 to every stream: 4 writers racing on the same 8 streams.
        yield* Effect.forEach(
          [0, 1, 2, 3],
          (w) =>
            Effect.forEach(streams, (id) => store.append(id, [Fixtures.Deposited.make({ accountId: id, amount: w + 1 })]), {
              discard: true
            }),
          { concurrency: 4, discard: true }
        )
        return yield* Effect.forEach(streams, (id) =>
          Effect.map(SyncAwareLens.getById(Fixtures.balance, id, SyncFilter.forStream(id).withTimeout(Duration.seconds(10))), ({ row }) =>
            Option.map(row, (r) => r.data.total)
          )
        )
      }).pipe(Effect.provide(app))
      expect(totals).toEqual(streams.map(() => Option.some(10)))
      expect(new Set(applies.map((a) => a.streamId))).toEqual(new Set(streams))
      expect(applies.reduce((n, a) => n + Number(a.events), 0)).toBeGreaterThanOrEqual(32)
    }).pipe(Effect.provide(TestDatabase.layer), Effect.scoped)
  )
})
