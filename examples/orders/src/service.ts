/** The order service's layers: the whole service, or only its write side (when workers run in other processes). */
import { Effect, Layer } from "effect"
import { PgPerspectivePipeline, PgPerspectiveRewinder, Whizbang, WorkerSignals } from "whizbang"
import { events, perspectives } from "./domain.js"
import { confirmationReceptor, createOutbox } from "./outbox.js"

export interface ServiceConfig {
  readonly databaseUrl: string
  readonly schema?: string
  readonly instanceId?: string
  /** false: this process appends and reads; perspective workers run elsewhere. */
  readonly runWorker?: boolean
  /** Worker options (polling, batching, ...). */
  readonly options?: PgPerspectivePipeline.Config["options"]
}

export const layer = (config: ServiceConfig) => {
  const base = {
    databaseUrl: config.databaseUrl,
    schema: config.schema ?? "orders",
    serviceName: "orders",
    events,
    perspectives,
    ...(config.instanceId ? { instanceId: config.instanceId } : {}),
    ...(config.options ? { options: config.options } : {})
  }
  // The receptor writes with the service's own client, so it is built once the infrastructure exists; the worker's
  // hooks tell the sync tracker about every commit, so read-your-writes waits end at once in this process.
  const pipeline = Layer.unwrap(
    Effect.gen(function* () {
      yield* createOutbox
      const receptors = [yield* confirmationReceptor]
      if (config.runWorker === false) return PgPerspectivePipeline.layerPorts({ ...base, receptors })
      return PgPerspectiveRewinder.layerPipeline({ ...base, receptors, hooks: yield* WorkerSignals.hooks() })
    })
  )
  return pipeline.pipe(Layer.provideMerge(Whizbang.layerSync(base)), Layer.provideMerge(Whizbang.layerInfrastructure(base)))
}
