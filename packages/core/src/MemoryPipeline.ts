/**
 * The whole perspective pipeline in memory, for fast unit tests of your own perspectives and receptors: the
 * event store, the work coordinator, the perspective store, a notification listener and the worker — no
 * database. Appending writes one work row per (event, perspective that handles its type) and wakes the worker,
 * like the Postgres event store; completions write the read-model rows.
 *
 * ```ts
 * const test = Effect.gen(function* () {
 *   yield* EventStore.append(id, [Deposited.make({ accountId: id, amount: 5 })])
 *   yield* PerspectiveWorker.awaitIdle
 *   const model = yield* PerspectiveStore.getById(balance, id) // Option.some({ total: 5 })
 * }).pipe(Effect.provide(MemoryPipeline.layer({ events, perspectives: [balance] })))
 * ```
 *
 * **Gotchas**: leases are not fenced and nothing survives the process — the guarantees of the Postgres layers
 * (exactly-once commits, fencing, NOTIFY across processes) are only claimed for them.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import * as EventId from "./EventId.js"
import * as EventStore from "./EventStore.js"
import * as InstanceProvider from "./InstanceProvider.js"
import * as NotificationListener from "./NotificationListener.js"
import * as PerspectiveRewinder from "./PerspectiveRewinder.js"
import * as PerspectiveStore from "./PerspectiveStore.js"
import * as PerspectiveWorker from "./PerspectiveWorker.js"
import * as StorageReason from "./StorageReason.js"
import * as WorkCoordinator from "./WorkCoordinator.js"

const ports = (config: PerspectiveWorker.Config) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const store = yield* PerspectiveStore.makeMemory
      const { coordinator, memory } = yield* WorkCoordinator.makeMemory
      const events = yield* EventStore.makeMemory(config.events)
      const listener = yield* Layer.build(NotificationListener.layerMemory)
      const publisher = Context.get(listener, NotificationListener.Memory)
      const routes = new Map<string, Array<string>>()
      for (const p of config.perspectives) for (const t of p.eventTypes) routes.set(t, [...(routes.get(t) ?? []), p.name])

      // Like the Postgres store: one work row per (event, perspective that handles its type), then a wake-up.
      const eventStore = EventStore.EventStore.of({
        ...events,
        append: (streamId, newEvents, options) =>
          events.append(streamId, newEvents, options).pipe(
            Effect.tap((result) =>
              Effect.forEach(result.events, (e) =>
                // Work carries the stored (encoded) payload, as a database row would.
                Effect.map(Effect.orDie(config.events.encode(e.eventType, e.payload)), (payload) =>
                  (routes.get(e.eventType) ?? []).map((perspectiveName) => ({
                    workId: EventId.unsafeMake(),
                    streamId,
                    perspectiveName,
                    eventId: e.eventId,
                    eventType: e.eventType,
                    payload
                  }))
                )
              ).pipe(Effect.flatMap((work) => memory.enqueue(work.flat())))
            ),
            Effect.tap(() => publisher.notify("perspective"))
          )
      })
      // The read-model rows are written before the work rows go (memory is synchronous: nothing runs in between).
      const workCoordinator = WorkCoordinator.WorkCoordinator.of({
        ...coordinator,
        reportCompletions: (completions) =>
          store
            .writeBatch(
              completions.flatMap((c) =>
                c.model === undefined
                  ? []
                  : [
                      {
                        perspectiveName: c.perspectiveName,
                        streamId: c.streamId,
                        data: c.model.data,
                        action: c.model.action,
                        metadata: c.model.metadata,
                        scope: c.model.scope
                      }
                    ]
              )
            )
            .pipe(
              Effect.mapError(
                (e) =>
                  new WorkCoordinator.WorkCoordinatorError({
                    operation: "reportCompletions",
                    reason: new StorageReason.Unknown({ code: undefined }),
                    detail: e.message,
                    cause: e
                  })
              ),
              Effect.andThen(coordinator.reportCompletions(completions))
            )
      })
      return Context.make(EventStore.EventStore, eventStore).pipe(
        Context.add(WorkCoordinator.WorkCoordinator, workCoordinator),
        Context.add(WorkCoordinator.Memory, memory),
        Context.add(PerspectiveStore.PerspectiveStore, store),
        Context.merge(listener)
      )
    })
  )

/**
 * The in-memory pipeline and worker.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: PerspectiveWorker.Config) =>
  PerspectiveWorker.layer(config).pipe(
    Layer.provideMerge(ports(config)),
    // The memory coordinator mints ids in order and never flags a pair for a rewind.
    Layer.provideMerge(PerspectiveRewinder.layerUnsupported),
    Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "memory" }))
  )
