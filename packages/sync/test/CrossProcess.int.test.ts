import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { PerspectiveStore } from "@whizbang/core"
import { PgClient } from "@whizbang/postgres"
import { TestDatabase } from "@whizbang/testing"
import { Deferred, Effect, Layer, Option } from "effect"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as TrackedEventStore from "../src/TrackedEventStore.js"
import * as Latency from "./fixtures/latency.js"
import * as Orders from "./fixtures/orders.js"
import * as Pipeline from "./fixtures/pipeline.js"
import { uuid } from "./support.js"

const fixture = fileURLToPath(new URL("./fixtures/worker.ts", import.meta.url))
const root = fileURLToPath(new URL("../../..", import.meta.url))

/** Starts the worker process on the same database; resolves once it polls. Its commit times land in `commits`. */
const startWorker = (url: string, schema: string, commits: Latency.Commits) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
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

describe("awaiter in process A, worker in process B", () => {
  it.live("appends here, the other process applies, NOTIFY wakes the wait: Synced and the row visible (prints resume latency)", () =>
    Effect.gen(function*() {
      const { url } = yield* Effect.service(TestDatabase.TestDatabase)
      const { schema } = yield* Effect.service(PgClient.PgClient)
      const commits = new Latency.Commits()
      yield* startWorker(url, schema, commits)
      const store = yield* TrackedEventStore.make
      const awaiter = yield* Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
      const models = yield* Effect.service(PerspectiveStore.PerspectiveStore)
      const resumed: Array<{ id: string; at: number }> = []
      const streams = Array.from({ length: 20 }, () => uuid())
      const totals = new Map<string, number>()
      let visible = 0
      for (let i = 0; i < 200; i++) {
        const s = streams[i % streams.length]!
        totals.set(s, (totals.get(s) ?? 0) + i)
        const result = yield* ScopedEventTracker.withScope(Effect.gen(function*() {
          const [id] = (yield* store.append(s, [Orders.placed(s, i)])).events.map((e) => e.eventId)
          const result = yield* awaiter.waitForEvents("order_summary", [id!], { timeout: "10 seconds" })
          resumed.push({ id: id!, at: Latency.now() })
          return result
        }))
        expect(result).toMatchObject({ _tag: "Synced", eventsAwaited: 1 })
        const row = yield* models.getById("order_summary", s)
        if ((Option.getOrThrow(row).data as { total: number }).total === totals.get(s)) visible++
      }
      expect(visible).toBe(200)
      // A commit line may trail the wake-up through the pipe: each is awaited.
      const latencies = yield* Effect.forEach(resumed, (r) => Effect.map(commits.at(r.id), (at) => r.at - at))
      expect(latencies).toHaveLength(200)
      console.log(Latency.summary("cross-process (commit in B -> waiter resumes in A)", latencies))
    }).pipe(Effect.scoped, Effect.provide(Pipeline.layer({ worker: false }) as Layer.Layer<any>)), 120_000)
})
