/**
 * The Postgres `LifecycleStore`: `wh_lifecycle_pending` rows written in the append transaction (see
 * `PgEventStore`'s `lifecycleTypes`), claimed once all of an event's work rows are gone, deleted after the
 * `PostAllPerspectives` / `PostLifecycle` receptors ran — or, when a perspective dead-lettered the event (the
 * claim names them in `deadLetteredBy`), after the `DeadLettered` receptors ran: then the row is parked rather
 * than deleted (not owed, never claimed). A dead-lettered event is thus reported once; retrying its last dead
 * letter (`whizbang dead-letters retry`) releases the parked row, so `PostAllPerspectives` / `PostLifecycle` fire
 * once the retried work is applied, and discarding one of its letters deletes it. Claims are taken over after
 * `reclaimAfterSeconds`, so a crash between claim and completion fires the stages again (at least once; exactly
 * once without crashes).
 *
 * **Gotcha**: a retry committed between the claim of a dead-lettered lifecycle and its completion (while its
 * `DeadLettered` receptors run) finds no parked row to release; that lifecycle then ends without the completion
 * stages.
 *
 * @since 0.1.0
 */
import { LifecycleStore } from "@whizbang/core"
import { Effect, Layer } from "effect"
import { PgClient } from "./PgClient.js"
import type { PostgresError } from "./PostgresError.js"
import { SchemaReady } from "./SchemaReady.js"
import * as Sql from "./sql/lifecycle.js"

const storeError = (operation: string) => (cause: PostgresError) =>
  new LifecycleStore.LifecycleStoreError({ operation, reason: cause.reason, detail: cause.message, cause })

/**
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<LifecycleStore.LifecycleStore["Service"], never, PgClient> = Effect.map(
  Effect.service(PgClient),
  (client) =>
    LifecycleStore.LifecycleStore.of({
      claimCompleted: ({ eventIds, instanceId, reclaimAfterSeconds }) =>
        Sql.claimCompleted(client, { instanceId, eventIds: eventIds ?? null, reclaimAfterSeconds }).pipe(
          Effect.mapError(storeError("claimCompleted"))
        ),
      complete: (eventIds) => Sql.completePending(client, { eventIds }).pipe(Effect.mapError(storeError("complete")))
    })
)

/**
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<LifecycleStore.LifecycleStore, never, PgClient | SchemaReady> = Layer.effect(
  LifecycleStore.LifecycleStore,
  Effect.flatMap(Effect.service(SchemaReady), () => make)
)
