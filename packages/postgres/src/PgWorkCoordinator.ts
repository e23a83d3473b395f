/**
 * The Postgres `WorkCoordinator`: set-based claiming, fetching and completion of perspective work.
 *
 * - `claimWork` leases whole streams (`wh_active_streams`), so one instance drains a stream at a time; unowned
 *   work is spread over the live instances by partition, and abandoned instances' leases count as free.
 * - `renewStreamLeases` extends the leases of streams still being applied (long applies).
 * - `fetchPendingEvents` returns the events of many streams in one query, in event-id order; `claimAndFetch` claims
 *   and fetches what it claimed in one statement (the worker's claim loop uses it: one round trip less per cycle).
 * - `reportCompletions` commits in ONE statement and transaction (`wh_complete_work`, one round trip): the lease
 *   check (fencing), the stream-lock check on the cursors, the read-model rows, the cursors, the deletion of
 *   exactly the applied work rows (kept, marked processed, in debug mode), the `wh_processed` notifications and
 *   the due snapshots. If any stream's lease was lost, or any pair's cursor is stream-locked or moved since the
 *   fetch (purge, rewind, bootstrap), all of it rolls back and fails: the work is delivered again and applied on
 *   top of what the lock holder left. Called inside a caller's transaction, a refusal aborts that transaction.
 * - `reportFailures` records attempts, backoff and the cursor's Failed flag, and moves rows that reached
 *   `maxPerspectiveEventAttempts` to `wh_dead_letters`, in one transaction, which notifies `wh_processed` with the
 *   bare schema (read-your-writes waits answer `Failing` or `DeadLettered` at once).
 *
 * @since 0.1.0
 */
import { InstanceProvider, WorkCoordinator, WorkerOptions } from "@whizbang/core"
import { type Duration, Effect, Layer } from "effect"
import { PgClient } from "./PgClient.js"
import type * as PgPerspectiveSnapshots from "./PgPerspectiveSnapshots.js"
import * as PgQueueVacuum from "./PgQueueVacuum.js"
import { PgInstanceRegistry } from "./PgInstanceRegistry.js"
import type { PostgresConfigError } from "./PostgresError.js"
import { coordinatorError } from "./internal/coordinatorError.js"
import * as CoordinatorOptions from "./internal/coordinatorOptions.js"
import { toPendingEvents } from "./internal/pendingRows.js"
import * as WorkClaims from "./internal/workClaims.js"
import * as WorkCompletions from "./internal/workCompletions.js"
import * as WorkFailures from "./internal/workFailures.js"
import { SchemaReady } from "./SchemaReady.js"
import * as Claim from "./sql/claimWork.js"
import * as Fetch from "./sql/fetchPendingEvents.js"

/**
 * Coordinator options (the worker's options of the same names; defaults from `WorkerOptions.defaults`). Durations
 * are `Duration.Input`s (`"30 seconds"`, a `Duration`, a number of milliseconds); a bad value fails `make` with a
 * `PostgresConfigError` naming the option.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Stream lease; whole seconds, at least 1 second. Default 5 minutes. */
  readonly lease?: Duration.Input | undefined
  readonly debugMode?: boolean | undefined
  readonly maxPerspectiveEventAttempts?: number | null | undefined
  /**
   * Backoff of a failed apply before its retry: `initial * multiplier ^ (attempts - 1)`, capped at `max`. Default
   * 1 second x2, max 60 seconds (each field defaults on its own). Finite, positive durations, multiplier >= 1,
   * max >= initial.
   */
  readonly failureBackoff?:
    | {
        readonly initial?: Duration.Input | undefined
        readonly multiplier?: number | undefined
        readonly max?: Duration.Input | undefined
      }
    | undefined
  /**
   * An owner silent for longer than this has its leases treated as free by claims. Whole seconds, at least 1
   * second. Default 30 seconds.
   */
  readonly abandonStaleInstanceThreshold?: Duration.Input | undefined
  /**
   * Work waiting longer than this is claimable by any live instance, not only the one its partition maps to
   * (so nothing is stranded behind a slow or stuck owner). Default 3 seconds; a finite duration >= 0.
   */
  readonly affinityGrace?: Duration.Input | undefined
  /** Snapshots written in the completion transaction (every 100 applied events, newest 5 kept, by default). */
  readonly snapshots?: PgPerspectiveSnapshots.Input
  /**
   * Vacuum of the queue tables after every N work rows this coordinator's completions removed (default
   * `{ everyRows: 100_000 }`), or `false`: left to autovacuum. See `PgQueueVacuum`.
   */
  readonly queueVacuum?: PgQueueVacuum.Input
}

/**
 * The options as {@link decodeOptions} leaves them: the numbers the SQL takes.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded extends CoordinatorOptions.Validated {}

/**
 * Checks every option, filling defaults (`WorkerOptions.defaults` for the worker's options of the same names); a
 * bad value is a `PostgresConfigError` naming the first bad option.
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (options: Options = {}): Effect.Effect<Decoded, PostgresConfigError> =>
  CoordinatorOptions.decode(options, WorkerOptions.defaults)

/**
 * Builds the coordinator for the instance in context; the options are checked first ({@link decodeOptions}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<WorkCoordinator.WorkCoordinator["Service"], PostgresConfigError, PgClient | InstanceProvider.InstanceProvider> =>
  Effect.flatMap(decodeOptions(options), makeDecoded)

/**
 * {@link make} for options {@link decodeOptions} checked already.
 *
 * @category constructors
 * @since 0.5.0
 */
export const makeDecoded = (
  valid: Decoded
): Effect.Effect<WorkCoordinator.WorkCoordinator["Service"], never, PgClient | InstanceProvider.InstanceProvider> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const { instanceId } = yield* InstanceProvider.InstanceProvider
    // With a registry, completions are also fenced against a successor process that took over this instance id.
    const registry = yield* Effect.serviceOption(PgInstanceRegistry)
    const bootToken = registry._tag === "Some" ? registry.value.bootToken : null
    const leaseSeconds = valid.leaseSeconds
    const queueVacuum = PgQueueVacuum.make(client, valid.queueVacuumEveryRows)
    const claims = WorkClaims.make(client, {
      instanceId,
      staleSeconds: valid.abandonStaleInstanceThresholdSeconds,
      graceMillis: valid.affinityGraceMillis,
      queueVacuum
    })

    return WorkCoordinator.WorkCoordinator.of({
      claimWork: claims.claimWork,
      claimAndFetch: claims.claimAndFetch,
      fetchPendingEvents: ({ backgroundLimit, limit, perspectiveNames, streamIds, withModels }) =>
        streamIds.length === 0 || perspectiveNames?.length === 0
          ? Effect.succeed([])
          : Fetch.fetchPendingEvents(client, {
              instanceId,
              streamIds,
              limit: limit ?? 2_147_483_647,
              perspectiveNames: perspectiveNames ?? null,
              backgroundLimit: backgroundLimit ?? 2_147_483_647,
              modelsOf: withModels === true ? perspectiveNames : undefined
            }).pipe(
              Effect.map((rows) => toPendingEvents(rows, withModels === true && perspectiveNames !== undefined)),
              Effect.mapError(coordinatorError("fetchPendingEvents"))
            ),
      renewLeases: ({ leaseSeconds: lease, workIds }) =>
        Claim.renewLeasesOfWork(client, { instanceId, workIds, leaseSeconds: lease }).pipe(
          Effect.mapError(coordinatorError("renewLeases"))
        ),
      renewStreamLeases: ({ leaseSeconds: lease, streamIds }) =>
        streamIds.length === 0
          ? Effect.succeed([])
          : Claim.renewStreamLeases(client, { instanceId, streamIds, leaseSeconds: lease }).pipe(
              Effect.map((rows) => rows.map((r) => r.streamId)),
              Effect.mapError(coordinatorError("renewStreamLeases"))
            ),
      reportCompletions: WorkCompletions.make(client, {
        instanceId,
        leaseSeconds,
        bootToken,
        debugMode: valid.debugMode,
        snapshots: valid.snapshots,
        queueVacuum
      }),
      reportFailures: WorkFailures.make(client, {
        instanceId,
        leaseSeconds,
        bootToken,
        maxAttempts: valid.maxPerspectiveEventAttempts,
        backoff: valid.failureBackoff
      })
    })
  })

/**
 * The coordinator as a layer (after the schema is migrated).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<WorkCoordinator.WorkCoordinator, PostgresConfigError, PgClient | InstanceProvider.InstanceProvider | SchemaReady> =>
  Layer.effect(
    WorkCoordinator.WorkCoordinator,
    Effect.flatMap(Effect.service(SchemaReady), () => make(options))
  )

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (
  options: Decoded
): Layer.Layer<WorkCoordinator.WorkCoordinator, never, PgClient | InstanceProvider.InstanceProvider | SchemaReady> =>
  Layer.effect(
    WorkCoordinator.WorkCoordinator,
    Effect.flatMap(Effect.service(SchemaReady), () => makeDecoded(options))
  )
