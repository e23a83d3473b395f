/**
 * A worker process (started by `main.ts --instances N`): runs the perspective worker until told to stop (SIGTERM or
 * SIGINT), or until main.ts goes away (its IPC channel closes); then the worker's layers are released in order.
 */
import { Effect, Fiber, Layer } from "effect"
import * as Service from "./service.js"

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) {
  console.error("worker: DATABASE_URL is required")
  process.exit(2)
}
const fiber = Effect.runFork(Layer.launch(Service.layer({ databaseUrl })))
const stop = () => void Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0))
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
process.once("disconnect", stop)
