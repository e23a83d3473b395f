/**
 * Append -> read model latency through the in-memory pipeline with DEFAULT worker options (no database, so it
 * isolates the worker's own wake-up and batching from SQL cost). One event per append, round-robin over 200
 * streams, at `--rate` appends/s for `--seconds` s; prints p50/p95/p99 in ms.
 *
 *   node --import tsx bench/src/memoryLatency.ts [--rate 1000] [--seconds 5]
 */
import { EventDefinition, EventId, EventRegistry, EventStore, MemoryPipeline, Perspective } from "@whizbang/core"
import { Duration, Effect, Schema } from "effect"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const rate = arg("rate", 1000)
const seconds = arg("seconds", 5)
// --window N: drainBatcher { slidingWindow: N ms, maxWait: 5 N ms } instead of the defaults.
const window = arg("window", 0)

const Ticked = EventDefinition.make("Ticked", { payload: Schema.Struct({ id: Schema.String }), streamId: (p) => p.id })
const events = EventRegistry.make([Ticked])
const ticks = Perspective.make({
  name: "ticks",
  events: [Ticked],
  model: Schema.Struct({ n: Schema.Number }),
  initial: { n: 0 },
  apply: { Ticked: (m) => ({ n: m.n + 1 }) }
})

const sentAt = new Map<string, number>()
const samples: Array<number> = []
const streams = Array.from({ length: 200 }, () => EventId.unsafeMake())

const main = Effect.gen(function* () {
  const store = yield* EventStore.EventStore
  const total = rate * seconds
  const start = performance.now()
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 0) yield* Effect.sleep(`${wait} millis`)
    const id = streams[i % streams.length]!
    const appended = yield* store.append(id, [Ticked.make({ id })])
    sentAt.set(appended.events[0]!.eventId, performance.now())
  }
  while (samples.length < total * 0.99) yield* Effect.sleep(Duration.millis(50))
  const sorted = samples.slice(Math.floor(samples.length / 10)).sort((a, b) => a - b)
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1)
  console.log(
    `in-memory pipeline, ${window > 0 ? `window ${window} ms` : "default options"}, ${rate}/s for ${seconds} s: p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, p99 ${q(0.99)} ms (${samples.length} events)`
  )
}).pipe(
  Effect.provide(
    MemoryPipeline.layer({
      events,
      perspectives: [ticks],
      ...(window > 0
        ? { options: { drainBatcher: { slidingWindow: Duration.millis(window), maxWait: Duration.millis(5 * window) } } }
        : {}),
      hooks: {
        onPerspectiveEventProcessed: (group) =>
          Effect.sync(() => {
            const now = performance.now()
            for (const id of group.eventIds) {
              const t = sentAt.get(id)
              if (t !== undefined) samples.push(now - t)
            }
          })
      }
    })
  ),
  Effect.scoped
)

Effect.runPromise(main).then(() => process.exit(0))
