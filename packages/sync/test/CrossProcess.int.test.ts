// The cross-process truth test: two worker processes apply the events; this process (the third) appends, waits
// and reads. Every wait must end fresh and every read must see the write; a poison event's wait must end with
// DeadLettered, naming it, long before its timeout.
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { PerspectiveStore } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { MultiHostPerspectiveAwaiter, TestDatabase } from "@whizbang/testing"
import { Deferred, Duration, Effect, Layer, Option } from "effect"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncResult from "../src/SyncResult.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Latency from "./fixtures/latency.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

const fixture = fileURLToPath(new URL("./fixtures/worker.ts", import.meta.url))
const root = fileURLToPath(new URL("../../..", import.meta.url))

/** Starts a worker process on the same database; resolves once it polls. Its commit times land in `commits`. */
const startWorker = (url: string, schema: string, commits: Latency.Commits) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const ready = yield* Deferred.make<void, Error>()
      const child = spawn(process.execPath, ["--import", "tsx", fixture, url, schema], { cwd: root, stdio: ["pipe", "pipe", "inherit"] })
      let buffered = ""
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString()
        const lines = buffered.split("\n")
        buffered = lines.pop()!
        for (const line of lines) {
          if (line === "ready") Deferred.doneUnsafe(ready, Effect.void)
          const [tag, at, ids] = line.split(" ")
          if (tag === "commit" && ids !== undefined) for (const id of ids.split(",")) commits.set(id, Number(at))
        }
      })
      child.on("exit", (code) => Deferred.doneUnsafe(ready, Effect.fail(new Error(`worker exited with ${code}`))))
      yield* Deferred.await(ready)
      return child
    }),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )

const requesters = 4
const iterations = 2000

describe("awaiter in process A, workers in processes B and C", () => {
  it.live(
    `${iterations} append -> wait -> read cycles (${requesters} concurrent requesters): 0 stale reads; a poison event's wait ends DeadLettered, naming it`,
    () =>
      Effect.gen(function* () {
        const { url } = yield* Effect.service(TestDatabase.TestDatabase)
        const { schema } = yield* Effect.service(PgClient.PgClient)
        const commits = new Latency.Commits()
        yield* Effect.all([startWorker(url, schema, commits), startWorker(url, schema, commits)], { concurrency: 2 })
        const store = yield* TrackedEventStore.make
        const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
        const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
        const resumed: Array<{ id: string; at: number }> = []
        const outcomes = new Map<string, number>()
        let stale = 0
        // Each requester owns its streams, so it knows what every read must show.
        const requester = (r: number) =>
          Effect.gen(function* () {
            const streams = Array.from({ length: 5 }, () => uuid())
            const totals = new Map<string, number>()
            for (let i = r; i < iterations; i += requesters) {
              const s = streams[i % streams.length]!
              totals.set(s, (totals.get(s) ?? 0) + i)
              const result = yield* ScopedEventTracker.withScope(
                Effect.gen(function* () {
                  const [id] = (yield* store.append(s, [Orders.placed(s, i)])).events.map((e) => e.eventId)
                  const result = yield* awaiter.waitForEvents("order_summary", [id!], { timeout: "10 seconds" })
                  resumed.push({ id: id!, at: Latency.now() })
                  return result
                })
              )
              outcomes.set(result._tag, (outcomes.get(result._tag) ?? 0) + 1)
              const row = yield* models.getById("order_summary", s)
              if (
                !SyncResult.isFresh(result) ||
                Option.match(row, { onNone: () => true, onSome: (m) => (m.data as { total: number }).total !== totals.get(s) })
              )
                stale++
            }
          })
        const started = Latency.now()
        yield* Effect.all(
          Array.from({ length: requesters }, (_, r) => requester(r)),
          { concurrency: requesters, discard: true }
        )
        const seconds = (Latency.now() - started) / 1000
        expect(stale).toBe(0)
        expect([...outcomes.keys()].filter((tag) => tag !== "Synced" && tag !== "NoPendingEvents")).toEqual([])
        const latencies = yield* Effect.forEach(resumed, (r) => Effect.map(commits.at(r.id), (at) => r.at - at))
        expect(latencies).toHaveLength(iterations)
        console.log(
          `${iterations} cycles in ${seconds.toFixed(1)} s; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; stale reads ${stale}`
        )
        console.log(Latency.summary("cross-process (commit in B or C -> waiter resumes in A)", latencies))

        // The poison event: dead-lettered by whichever worker claims it; the wait ends at once, naming it.
        const s = uuid()
        const poison = yield* ScopedEventTracker.withScope(
          Effect.gen(function* () {
            const [id] = (yield* store.append(s, [Orders.rejected(s)])).events.map((e) => e.eventId)
            return { id: id!, result: yield* awaiter.waitForEvents("order_summary", [id!], { timeout: "30 seconds" }) }
          })
        )
        expect(poison.result).toMatchObject({ _tag: "DeadLettered", deadLettered: [poison.id] })
        expect(Duration.toMillis(poison.result.elapsed)).toBeLessThan(10_000)
        // The testing awaiter, which only asks the database, agrees.
        const hosts = yield* Effect.service(MultiHostPerspectiveAwaiter.MultiHostPerspectiveAwaiter)
        expect((yield* hosts.awaitPerspectives({ perspectives: ["order_summary"], eventIds: [poison.id] })).deadLettered).toEqual([
          { perspectiveName: "order_summary", eventId: poison.id }
        ])
      }).pipe(
        Effect.scoped,
        Effect.provide(MultiHostPerspectiveAwaiter.layer.pipe(Layer.provideMerge(Pipeline.layer({ worker: false }))) as Layer.Layer<any>)
      ),
    120_000
  )
})
