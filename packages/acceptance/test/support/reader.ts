// A read-side process of the acceptance suite: `Whizbang.layerWithoutWorker` as the README composes it for processes
// whose workers run elsewhere, standing for the instance a load balancer sends a read to (it did not append, so its
// tracker never saw the write). Started by the tests with `--import tsx`. Environment: DATABASE_URL,
// ACCEPTANCE_SCHEMA. Prints "ready"; then answers each "<request id> <stream id>" line on stdin with
// `SyncAwareLens.getById(balance, stream, SyncFilter.forStream(stream))` as one JSON line
// `{ id, outcome, version, elapsed, deadLettered, failing }` (version 0: no row; elapsed in ms; failing: the
// `Failing` outcome's events). Stops when stdin ends.
import { createInterface } from "node:readline"
import { Duration, Effect, Layer, Option } from "effect"
import { SyncAwareLens, SyncFilter, Whizbang } from "whizbang"
import * as Domain from "./domain.js"
import * as RunScript from "./runScript.js"

const app = Layer.unwrap(
  Effect.map(Domain.definitions, ({ events, perspectives }) =>
    Whizbang.layerWithoutWorker({
      databaseUrl: process.env.DATABASE_URL,
      schema: process.env.ACCEPTANCE_SCHEMA ?? "whizbang",
      serviceName: "acceptance-reader",
      events,
      perspectives,
      options: Domain.options,
      watchdog: { interval: null }
    })
  )
)

const main = Effect.gen(function* () {
  const { balance } = yield* Domain.definitions
  const services = yield* Effect.context<Layer.Success<typeof app>>()
  const read = (id: string, streamId: string) =>
    Effect.gen(function* () {
      const { row, sync } = yield* SyncAwareLens.getById(
        balance,
        streamId,
        SyncFilter.forStream(streamId).withTimeout(Duration.seconds(20))
      )
      const version = Option.match(row, { onNone: () => 0, onSome: (r) => r.version })
      const failing = sync._tag === "Failing" ? sync.failing : []
      const elapsed = Duration.toMillis(sync.elapsed)
      process.stdout.write(`${JSON.stringify({ id, outcome: sync._tag, version, elapsed, deadLettered: sync.deadLettered, failing })}\n`)
    }).pipe(Effect.provide(services))
  createInterface({ input: process.stdin }).on("line", (line) => {
    const [id, streamId] = line.split(" ")
    if (id !== undefined && streamId !== undefined) Effect.runFork(read(id, streamId))
  })
  process.stdout.write("ready\n")
  return yield* Effect.never
}).pipe(Effect.provide(app), Effect.scoped)

RunScript.run("acceptance reader", main)
