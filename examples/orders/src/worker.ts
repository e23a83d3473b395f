/** A worker process (started by `main.ts --instances N`): runs the perspective worker until killed. */
import { Effect, Layer } from "effect"
import * as Service from "./service.js"

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error("DATABASE_URL is required")
await Effect.runPromise(Layer.launch(Service.layer({ databaseUrl })))
