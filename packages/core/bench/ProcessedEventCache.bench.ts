/**
 * ProcessedEventCache throughput and memory: `pnpm --filter @whizbang/core bench`.
 *
 * Each phase runs 1M work ids through one cache operation in batches of 1000 (the shape the worker uses:
 * one call per fetched batch), reporting operations per second. Memory is the heap growth for 1M in-flight
 * entries (the id strings are allocated beforehand and not counted), measured after a forced GC.
 * Whole-cache operations (count, activateRetention, evictExpired) are one call each: their figure is
 * entries handled per second.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as ProcessedEventCache from "../src/ProcessedEventCache.js"

const N = 1_000_000
const BATCH = 1_000
const ids = Array.from({ length: N }, (_, i) => `018f${i.toString(16).padStart(8, "0")}-0000-7000-8000-000000000000`)
const batches = Array.from({ length: N / BATCH }, (_, b) => ids.slice(b * BATCH, (b + 1) * BATCH))
// Expose the collector without a node flag, so the heap figure is taken after a full GC.
setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const time = (label: string, operations: number, run: Effect.Effect<unknown>) =>
  Effect.gen(function* () {
    const start = performance.now()
    yield* run
    const seconds = (performance.now() - start) / 1000
    console.log(
      `${label.padEnd(44)} ${Math.round(operations / seconds)
        .toLocaleString("en-US")
        .padStart(14)} ops/s`
    )
  })

const program = Effect.gen(function* () {
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  const cache = yield* ProcessedEventCache.make({ retention: Duration.seconds(300) })
  yield* time("markInFlight (1M ids, batches of 1000)", N, Effect.forEach(batches, cache.markInFlight, { discard: true }))
  gc()
  const heapAfter = process.memoryUsage().heapUsed
  yield* time(
    "filterUnprocessed, all duplicates",
    N,
    Effect.forEach(batches, (b) => cache.filterUnprocessed(b, "p", "s"), { discard: true })
  )
  yield* time("contains (single id per call)", N, Effect.forEach(ids, cache.contains, { discard: true }))
  yield* time("activateRetention (1 call, 1M in-flight)", N, cache.activateRetention)
  yield* time("count (1 call, scans 1M retained)", N, cache.count)
  yield* time(
    "filterUnprocessed, retained within TTL",
    N,
    Effect.forEach(batches, (b) => cache.filterUnprocessed(b, "p", "s"), { discard: true })
  )
  yield* TestClock.adjust(Duration.seconds(301))
  yield* time("evictExpired (1 call, 1M expired)", N, cache.evictExpired)
  const mib = (heapAfter - heapBefore) / 1024 / 1024
  console.log(`memory per 1M in-flight entries: ${mib.toFixed(1)} MiB heap (after GC), id strings excluded (allocated before)`)
})

Effect.runPromise(program.pipe(Effect.provide(TestClock.layer()))).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
