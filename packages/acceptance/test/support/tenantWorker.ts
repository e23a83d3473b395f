// A worker process of many tenants: `Whizbang.layerTenants` as the README composes it, started by the tests with
// `--import tsx`. Environment: DATABASE_URL, ACCEPTANCE_SCHEMA (the service schema: the default tenant),
// ACCEPTANCE_VERSION2 ("1": also run version 2 of balance, so every tenant builds it). Prints "ready" once the
// fleet runs; answers each "idle" line on stdin, after the worker of every tenant active here is idle, with one JSON
// line `{ "active": [...] }`. Stops gracefully when stdin ends.
import { createInterface } from "node:readline"
import { Duration, Effect, Layer } from "effect"
import { PerspectiveWorker, Tenants, Whizbang } from "whizbang"
import * as Domain from "./domain.js"
import * as RunScript from "./runScript.js"

const app = Layer.unwrap(
  Effect.gen(function* () {
    const { events, perspectives, balanceV2 } = yield* Domain.definitions
    return Whizbang.layerTenants({
      databaseUrl: process.env.DATABASE_URL,
      schema: process.env.ACCEPTANCE_SCHEMA ?? "whizbang",
      serviceName: "acceptance-tenant-worker",
      events,
      perspectives: process.env.ACCEPTANCE_VERSION2 === "1" ? [...perspectives, balanceV2] : perspectives,
      // Woken by notifications; the safety-net poll of each active tenant need not be the suite's 50 ms.
      options: { ...Domain.options, pollingInterval: Duration.millis(500), notifyHealthyPollingInterval: Duration.millis(500) },
      rewind: Domain.rewind,
      watchdog: { interval: null },
      // A small pool for every tenant together: the fleet shares it (and one worker pool) across tenants.
      maxConnections: 4,
      tenants: { idleCheck: Duration.millis(200), idleTimeToLive: Duration.seconds(1) }
    })
  })
)

const main = Effect.gen(function* () {
  const tenants = yield* Tenants.Tenants
  const answer = Effect.gen(function* () {
    const active = yield* tenants.active
    // Each active tenant's worker, through the tenant's own services (the serving stack has the worker).
    yield* Effect.forEach(
      active,
      (id) =>
        Effect.ignore(
          Effect.scoped(
            tenants.run(
              id,
              Effect.flatMap(Effect.serviceOption(PerspectiveWorker.PerspectiveWorker), (worker) =>
                worker._tag === "Some" ? worker.value.awaitIdle : Effect.void
              )
            )
          )
        ),
      { concurrency: 8, discard: true }
    )
    process.stdout.write(`${JSON.stringify({ type: "idle", active })}\n`)
  })
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "idle") Effect.runFork(answer)
  })
  process.stdout.write("ready\n")
  return yield* Effect.never
}).pipe(Effect.provide(app), Effect.scoped)

RunScript.run("acceptance tenant worker", main)
