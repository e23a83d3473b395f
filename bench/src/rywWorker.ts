/**
 * The worker process of scenario c (cross-process read-your-writes): the bench domain's perspective worker
 * against the parent's database. Prints `ready` once it polls, then `commit <epoch ms> <event ids>` after each
 * committed `summary` group (the reference point of the resume latency).
 * Usage: tsx src/rywWorker.ts <database url> <schema> <options json>
 */
import { InstanceProvider, PerspectiveRewinder, PerspectiveWorker } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Effect, Layer, References } from "effect"
import * as Domain from "./Domain.js"

const [url, schema, options] = process.argv.slice(2)
const now = () => performance.timeOrigin + performance.now()

const layer = PgPerspectivePipeline.layer({
  events: Domain.registry,
  perspectives: Domain.perspectives,
  options: JSON.parse(options!),
  hooks: {
    onPerspectiveEventProcessed: (group) =>
      Effect.sync(() => {
        if (group.perspectiveName === "summary") process.stdout.write(`commit ${now()} ${group.eventIds.join(",")}\n`)
      })
  }
}).pipe(
  Layer.provide(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bench-ryw-worker" })),
  Layer.provideMerge(SchemaReady.layerVerify),
  Layer.provideMerge(PgClient.layer({ url: url!, schema: schema!, maxConnections: 8, applicationName: "bench-ryw-worker" })),
  Layer.orDie
)

process.stdin.on("end", () => process.exit(0))
process.stdin.resume()
Effect.runFork(
  Effect.scoped(
    Effect.gen(function* () {
      yield* (yield* PerspectiveWorker.PerspectiveWorker).awaitPolls(1)
      process.stdout.write("ready\n")
      return yield* Effect.never
    }).pipe(Effect.provide(layer), Effect.provideService(References.MinimumLogLevel, "Error"))
  )
)
