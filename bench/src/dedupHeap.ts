/**
 * Heap of the worker's dedup cache over 1,000,000 processed events (issue 13, "bounded dedup").
 *
 * Drives `ProcessedEventCache` exactly as a worker cycle does (filter, mark in flight, activate retention after the
 * flush, evict expired) with a simulated clock: `--rate` events/s (default 2,000, so the run spans 500 s against the
 * 300 s TTL) in cycles of `--batch` work rows (default 100). Prints the heap (after a full GC) every 100,000 events,
 * with eviction and, for contrast, without it (the behaviour before: nothing ever called `evictExpired`).
 *
 *   node --expose-gc --import tsx bench/src/dedupHeap.ts [--events 1000000] [--rate 2000] [--batch 100]
 */
import { EventId, ProcessedEventCache } from "@whizbang/core"
import { Clock, Duration, Effect } from "effect"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const total = arg("events", 1_000_000)
const rate = arg("rate", 2_000)
const batch = arg("batch", 100)
const ttlSeconds = 300

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with node --expose-gc")
const heapMb = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed / 1024 / 1024
}

let now = 0
const clock: Clock.Clock = {
  currentTimeMillisUnsafe: () => now,
  currentTimeMillis: Effect.sync(() => now),
  monotonicTimeNanosUnsafe: () => BigInt(now) * 1_000_000n,
  monotonicTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
  currentTimeNanosUnsafe: () => BigInt(now) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
  sleep: () => Effect.void
}

const run = (evict: boolean) =>
  Effect.gen(function* () {
    now = 0
    const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(ttlSeconds) })
    const base = heapMb()
    const rows: Array<{ events: number; simulatedSeconds: number; entries: number; heapMb: number }> = []
    for (let done = 0; done < total; done += batch) {
      // Work ids as the worker holds them: UUID strings (crypto.randomUUID's strings weigh ~500 bytes each in V8).
      const ids = Array.from({ length: batch }, () => EventId.unsafeMake())
      const fresh = yield* cache.filterUnprocessed(ids, "p", "s")
      yield* cache.markInFlight(fresh)
      yield* cache.activateRetention
      if (evict) yield* cache.evictExpired
      now += (batch / rate) * 1000
      if ((done + batch) % 100_000 === 0) {
        rows.push({
          events: done + batch,
          simulatedSeconds: now / 1000,
          entries: yield* cache.count,
          heapMb: Math.round((heapMb() - base) * 10) / 10
        })
      }
    }
    return rows
  }).pipe(Effect.provideService(Clock.Clock, clock))

const main = Effect.gen(function* () {
  console.log(`dedup cache heap: ${total.toLocaleString()} events at ${rate}/s (simulated), batches of ${batch}, TTL ${ttlSeconds} s`)
  for (const evict of [true, false]) {
    const rows = yield* run(evict)
    console.log(`\n${evict ? "with eviction every cycle (now)" : "without eviction (before)"}`)
    console.log("| events | simulated s | live entries | heap above start, MB |\n|---:|---:|---:|---:|")
    for (const r of rows)
      console.log(`| ${r.events.toLocaleString()} | ${r.simulatedSeconds} | ${r.entries.toLocaleString()} | ${r.heapMb} |`)
  }
})

Effect.runSync(main)
