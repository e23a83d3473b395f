/**
 * One worker process: the whole perspective pipeline for the `chaos` schema, registered under `INSTANCE_ID`.
 * Started by the chaos command (`child_process.fork`), which SIGKILLs it at random; SIGTERM stops it gracefully
 * (the worker stops, then the instance deregisters). Sends `{ type: "ready" }` to the parent once running.
 *
 * Environment: DATABASE_URL, INSTANCE_ID, ABANDON_SECONDS (default 2), POLL_MS (default 250).
 */
import { hostname } from "node:os"
import { InstanceProvider, PerspectiveRewinder } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, SchemaReady } from "@whizbang/postgres"
import { Cause, Duration, Effect, Fiber, Layer, References } from "effect"
import * as Domain from "./domain.js"

const env = (name: string, fallback?: string) => {
  const value = process.env[name] ?? fallback
  if (value === undefined) throw new Error(`${name} is required`)
  return value
}

const poll = Number(env("POLL_MS", "250"))
const app = PgPerspectivePipeline.layer({
  events: Domain.events,
  perspectives: Domain.perspectives,
  options: {
    pollingInterval: Duration.millis(poll),
    notifyHealthyPollingInterval: Duration.millis(poll),
    abandonStaleInstanceThreshold: Duration.seconds(Number(env("ABANDON_SECONDS", "2"))),
    lease: Duration.seconds(30),
    maxStreamsPerBatch: 100,
    drainBatcher: { slidingWindow: Duration.millis(10), maxWait: Duration.millis(100), maxSize: 1000 }
  },
  affinityGrace: Duration.seconds(1)
}).pipe(
  Layer.provide(PerspectiveRewinder.layerUnsupported),
  Layer.provideMerge(SchemaReady.layerVerify),
  Layer.provideMerge(
    PgClient.layer({ url: env("DATABASE_URL"), schema: Domain.schema, maxConnections: 4, applicationName: "whizbang-chaos-worker" })
  ),
  Layer.provideMerge(
    InstanceProvider.layer({ instanceId: env("INSTANCE_ID"), serviceName: "chaos", hostName: hostname(), processId: process.pid })
  )
)

const main = Effect.scoped(
  Effect.gen(function* () {
    yield* Layer.build(app)
    process.send?.({ type: "ready" })
    return yield* Effect.never
  })
).pipe(Effect.provideService(References.MinimumLogLevel, process.env.VERBOSE ? "Info" : "Warn"))

const fiber = Effect.runFork(main)
process.on("SIGTERM", () => void Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0)))
fiber.addObserver((exit) => {
  if (exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)) {
    console.error(`worker ${process.env.INSTANCE_ID} failed:`, exit.cause)
    process.exit(1)
  }
})
