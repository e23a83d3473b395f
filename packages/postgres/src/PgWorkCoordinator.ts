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
import { InstanceProvider, StorageReason, WorkCoordinator, WorkerOptions } from "@whizbang/core"
import { type Duration, Effect, Layer, Metric } from "effect"
import { PgClient } from "./PgClient.js"
import type * as PgPerspectiveSnapshots from "./PgPerspectiveSnapshots.js"
import * as PgQueueVacuum from "./PgQueueVacuum.js"
import { PgInstanceRegistry } from "./PgInstanceRegistry.js"
import type { PostgresConfigError, PostgresError } from "./PostgresError.js"
import * as CoordinatorOptions from "./internal/coordinatorOptions.js"
import { toPendingEvents } from "./internal/pendingRows.js"
import { SchemaReady } from "./SchemaReady.js"
import * as Claim from "./sql/claimWork.js"
import * as Complete from "./sql/completeWork.js"
import * as Fetch from "./sql/fetchPendingEvents.js"
import * as Fail from "./sql/reportFailures.js"

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

// Telemetry: dead letters counted here, where they are written (names listed in Telemetry.ts).
const deadLettersMetric = Metric.counter("whizbang_dead_letters", { description: "work rows moved to wh_dead_letters" })

const coordinatorError = (operation: string) => (cause: PostgresError) =>
  new WorkCoordinator.WorkCoordinatorError({ operation, reason: cause.reason, detail: cause.message, cause })

const unique = <A>(items: Iterable<A>) => [...new Set(items)]

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
    const leaseSeconds = valid.leaseSeconds
    const staleSeconds = valid.abandonStaleInstanceThresholdSeconds
    const graceMilliseconds = valid.affinityGraceMillis
    // With a registry, completions are also fenced against a successor process that took over this instance id.
    const registry = yield* Effect.serviceOption(PgInstanceRegistry)
    const bootToken = registry._tag === "Some" ? registry.value.bootToken : null
    const debugMode = valid.debugMode
    const snapshots = valid.snapshots
    const maxAttempts = valid.maxPerspectiveEventAttempts
    const backoff = valid.failureBackoff
    const queueVacuum = PgQueueVacuum.make(client, valid.queueVacuumEveryRows)

    const fence = (streamIds: ReadonlyArray<string>) =>
      Effect.map(
        Complete.fenceStreams(client, { instanceId, streamIds, leaseSeconds, bootToken }),
        (rows) => new Set(rows.map((r) => r.streamId))
      )

    const reportCompletions: WorkCoordinator.WorkCoordinator["Service"]["reportCompletions"] = (completions) => {
      if (completions.length === 0) return Effect.void
      // Fences, model rows, cursors, work rows, lease release, notifications and snapshots: one round trip, one
      // transaction (the statement's own). A refusal raises `refusedState` and rolls all of it back.
      return Complete.completeWork(client, { instanceId, leaseSeconds, bootToken, completions, debugMode, snapshots }).pipe(
        // The completion removed exactly these work rows (else it was refused).
        Effect.andThen(queueVacuum.removed(completions.reduce((n, c) => n + c.workIds.length, 0))),
        Effect.catchTag("PostgresError", (e) =>
          Effect.fail(
            e.reason._tag === "Unknown" && e.reason.code === Complete.refusedState
              ? new WorkCoordinator.WorkCoordinatorError({
                  operation: "reportCompletions",
                  reason: new StorageReason.Refused(),
                  detail: e.message,
                  cause: e
                })
              : coordinatorError("reportCompletions")(e)
          )
        )
      )
    }

    const reportFailures: WorkCoordinator.WorkCoordinator["Service"]["reportFailures"] = (failures) => {
      if (failures.length === 0) return Effect.void
      const record = Effect.gen(function* () {
        const owned = yield* fence(unique(failures.map((f) => f.streamId)))
        const mine = failures.filter((f) => owned.has(f.streamId))
        if (mine.length === 0) return
        const updated = yield* Fail.recordFailures(client, { failures: mine, backoff, maxAttempts })
        yield* Fail.flagFailedCursors(client, { failures: mine })
        const exhausted = updated.filter((r) => r.exhausted).map((r) => r.workId)
        // A failure ends the read-your-writes waits it holds (they answer `Failing`) and a dead letter those of its
        // event: both wake @whizbang/sync's listeners (PgSyncInquiry LISTENs) with the bare schema, "look again".
        yield* client.query("SELECT pg_notify('wh_processed', current_schema())")
        if (exhausted.length > 0) {
          yield* Fail.deadLetter(client, { workIds: exhausted })
          yield* Metric.update(deadLettersMetric, exhausted.length)
          yield* Effect.logWarning(`moved ${exhausted.length} work row(s) to wh_dead_letters after ${maxAttempts} attempts`).pipe(
            Effect.annotateLogs({ "whizbang.instance_id": instanceId, "whizbang.work_ids": exhausted.join(",") })
          )
        }
      })
      return client.withTransaction(record).pipe(Effect.mapError(coordinatorError("reportFailures")))
    }

    type ClaimRequest = Parameters<WorkCoordinator.WorkCoordinator["Service"]["claimWork"]>[0]
    /**
     * Whether this instance may hold a lease on a stream without work. Leases come only from claims, and a claim
     * returns a row for every stream it leased, so only a claim that returned rows since the last release can have
     * left one; the first empty claim after it releases, the next ones do not (an idle poll is one statement, not
     * two). Cleared before the release is sent: a claim that committed before it is seen by it, one whose rows come
     * back after sets it again. True at start: a predecessor with this instance id may have left some.
     */
    let mayHoldIdleLeases = true
    const releaseIdle = Effect.suspend(() => {
      if (!mayHoldIdleLeases) return Effect.void
      mayHoldIdleLeases = false
      return Effect.tapError(Claim.releaseIdleStreams(client, { instanceId }), () =>
        Effect.sync(() => {
          mayHoldIdleLeases = true
        })
      )
    })
    /**
     * Runs a claim statement: an empty claim also drops this instance's leases on streams with no work left (a claim
     * that raced the stream's last completion can leave one behind). `streams`: how many streams the rows claimed. A
     * claim that took as many as it asked for has a backlog behind it, the one case where the queue's statistics can
     * be far behind (a replay, a rebuild's history): only then does the queue's upkeep look for stale statistics (one
     * statement on `pg_stat_user_tables`, which every tenant's first claim used to pay: bench t, 1,000 tenants of 10
     * streams each).
     */
    const claim = <Row>(
      statement: Effect.Effect<ReadonlyArray<Row>, PostgresError>,
      request: ClaimRequest,
      operation: string,
      streams: (rows: ReadonlyArray<Row>) => number
    ) =>
      statement.pipe(
        Effect.tap((rows) => {
          if (rows.length === 0) return releaseIdle
          mayHoldIdleLeases = true
          return streams(rows) >= request.maxStreams ? queueVacuum.claimed : Effect.void
        }),
        Effect.mapError(coordinatorError(operation)),
        Effect.withSpan(
          "whizbang.claim",
          { attributes: { "whizbang.instance_id": instanceId, "whizbang.max_streams": request.maxStreams } },
          { captureStackTrace: false }
        ),
        Effect.annotateLogs({ "whizbang.instance_id": instanceId })
      )
    const claimRequest = (request: ClaimRequest): Claim.ClaimRequest => ({
      instanceId,
      maxStreams: request.maxStreams,
      leaseSeconds: request.leaseSeconds,
      staleSeconds,
      graceMillis: graceMilliseconds,
      exclude: request.exclude ?? [],
      perspectiveNames: request.perspectiveNames === undefined ? null : request.perspectiveNames,
      heads: request.perspectiveNames?.length ?? 4
    })

    return WorkCoordinator.WorkCoordinator.of({
      claimWork: (request) =>
        Effect.map(
          claim(Claim.claimWork(client, claimRequest(request)), request, "claimWork", (rows) => rows.length),
          (rows) => rows.map((r) => r.streamId)
        ),
      claimAndFetch: ({ backgroundLimit, limit, withModels, ...request }) =>
        Effect.map(
          claim(
            Claim.claimAndFetch(client, {
              ...claimRequest(request),
              limit: limit ?? 2_147_483_647,
              backgroundLimit: backgroundLimit ?? 2_147_483_647,
              modelsOf: withModels === true ? request.perspectiveNames : undefined
            }),
            request,
            "claimAndFetch",
            (rows) => rows.reduce((n, r) => (r.part === 0 ? n + 1 : n), 0)
          ),
          (rows) => {
            // The statement's rows are unordered (see `internal/pendingRows.ts`): the claimed streams in claim order.
            const claimed: Array<Claim.ClaimedRow> = []
            const fetched: Array<Fetch.PendingRow> = []
            for (const r of rows) {
              if (r.part === 0) claimed.push(r)
              else fetched.push(r)
            }
            return {
              streams: claimed.sort((a, b) => a.claim_order - b.claim_order).map((r) => r.stream_id),
              pending: toPendingEvents(fetched, withModels === true && request.perspectiveNames !== undefined)
            }
          }
        ),
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
      reportCompletions,
      reportFailures
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
