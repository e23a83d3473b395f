/**
 * One worker process: the whole perspective pipeline for the `chaos` schema, registered under `INSTANCE_ID`.
 * Started by the chaos command (`child_process.fork`), which SIGKILLs it at random; SIGTERM stops it gracefully
 * (the worker stops, then the instance deregisters). Sends `{ type: "ready" }` to the parent once running.
 *
 * Environment: DATABASE_URL, INSTANCE_ID, ABANDON_SECONDS (default 2), POLL_MS (default 250).
 */
import { Cause, Duration, Effect, Fiber, Layer, References } from "effect"
import { Whizbang } from "whizbang"
import * as Domain from "./domain.js"

const env = (name: string, fallback?: string) => {
  const value = process.env[name] ?? fallback
  if (value === undefined) throw new Error(`${name} is required`)
  return value
}

const poll = Number(env("POLL_MS", "250"))
// The front door, as the README composes a service: the worker with its rewinder (late arrivals), stream locks,
// health and watchdog. The chaos command appends through its own process, so this one only runs the worker.
const app = Whizbang.layer({
  databaseUrl: env("DATABASE_URL"),
  schema: Domain.schema,
  serviceName: "chaos",
  instanceId: env("INSTANCE_ID"),
  applicationName: "whizbang-chaos-worker",
  maxConnections: 4,
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
})

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
