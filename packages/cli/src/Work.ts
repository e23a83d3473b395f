/**
 * Pending work by perspective: find work nothing will ever apply, and remove it. `whizbang work list` and
 * `whizbang work remove` run these.
 *
 * Work is filed under a perspective's key. Work under a key no release runs — enqueued under a misspelled name, or
 * left by a perspective removed from the code — waits forever: no instance claims it, and the watchdog reports its
 * streams as stuck (`NoInstanceRunsPerspective`) every round. {@link list} shows it as `orphaned`; {@link remove}
 * deletes it.
 *
 * **Gotchas**: {@link remove} refuses the work of a perspective that is registered (not retired) or that a live
 * instance runs, unless `force`: that work is applied by the workers (perhaps after a rolling deploy), and removing
 * it leaves the read model without those events until a rebuild. A perspective removed from the code stays
 * registered, and appends keep routing its event types to it; `force` removes the work present now.
 *
 * @since 0.4.0
 */
import { PgClient } from "@whizbang/postgres"
import { PgOperations } from "@whizbang/postgres/internal"
import { Duration, Effect } from "effect"
import { iso, orFailure, run } from "./internal/database.js"
import type { Registered } from "./internal/registry.js"
import * as Validate from "./internal/validate.js"
import { NotFound, OperationError, refused } from "./OperationError.js"

const Sql = PgOperations.Work

/**
 * One perspective's pending work.
 *
 * @category models
 * @since 0.4.0
 */
export interface PerspectiveWork {
  /** The key the work is filed under. */
  readonly perspective: string
  readonly pending: number
  readonly streams: number
  /** When the oldest pending row was enqueued. */
  readonly oldest: string | null
  readonly oldestAgeSeconds: number | null
  /** Its state in the versions registry (`wh_perspective_versions`); null when no release registered it. */
  readonly registered: Registered["state"] | null
  /** Live instances that run it (an instance that records no perspective set runs every one). */
  readonly runners: number
  /** Nothing will apply it: not registered (or retired) and no live instance runs it. */
  readonly orphaned: boolean
}

/**
 * @category models
 * @since 0.4.0
 */
export interface ListOptions {
  /** Only this perspective's work. */
  readonly perspective?: string | undefined
  /** A heartbeat older than this means the instance runs nothing; default 30 seconds (as the watchdog judges). */
  readonly deadInstanceAfter?: Duration.Input | undefined
}

/**
 * What {@link remove} removed.
 *
 * @category models
 * @since 0.4.0
 */
export interface Removed {
  readonly perspective: string
  /** Pending work rows removed. */
  readonly pending: number
  readonly streams: number
  /** History planned for it and not yet enqueued (a version registered, then removed from the code). */
  readonly planned: number
}

const hasRegistry = Effect.map(run(PgOperations.Registry.hasRegistry), (row) => row.present)

const listIn = (registry: boolean, perspective: string | null, deadInstanceAfter: Duration.Input | undefined) =>
  Effect.map(
    run(registry ? Sql.list : Sql.listWithoutRegistry, {
      deadInstanceAfterSeconds: Duration.toSeconds(deadInstanceAfter ?? Duration.seconds(30)),
      perspectiveName: perspective
    }),
    (rows) =>
      rows.map(
        (r): PerspectiveWork => ({
          perspective: r.perspectiveName,
          pending: r.pending,
          streams: r.streams,
          oldest: iso(r.oldest),
          oldestAgeSeconds: r.oldestAgeSeconds,
          registered: r.state,
          runners: r.runners,
          orphaned: (r.state === null || r.state === "retired") && r.runners === 0
        })
      )
  )

/**
 * Every perspective with pending work (or only `perspective`'s), by name.
 *
 * @category constructors
 * @since 0.4.0
 */
export const list = (options: ListOptions = {}): Effect.Effect<ReadonlyArray<PerspectiveWork>, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const perspective = options.perspective === undefined ? null : yield* Validate.perspective(options.perspective)
    return yield* listIn(yield* hasRegistry, perspective, options.deadInstanceAfter)
  })

/**
 * @category models
 * @since 0.4.0
 */
export interface RemoveOptions {
  /** Also the work of a perspective that is registered (not retired) or that a live instance runs. */
  readonly force?: boolean | undefined
  readonly deadInstanceAfter?: Duration.Input | undefined
}

const whoRuns = (work: PerspectiveWork) =>
  [
    work.registered !== null && work.registered !== "retired" ? `is registered (${work.registered})` : undefined,
    work.runners > 0 ? `is run by ${work.runners} live instance(s)` : undefined
  ]
    .filter((part) => part !== undefined)
    .join(" and ")

/**
 * Removes every work row of `perspective` (and the history planned for it), in one transaction. `NotFound` when it
 * has no pending work (the message names the perspectives that have); `Refused`, removing nothing, when it is
 * registered and not retired or a live instance runs it, unless `force`.
 *
 * @category constructors
 * @since 0.4.0
 */
export const remove = (perspective: string, options: RemoveOptions = {}): Effect.Effect<Removed, OperationError, PgClient.PgClient> =>
  Effect.gen(function* () {
    const name = yield* Validate.perspective(perspective)
    const registry = yield* hasRegistry
    return yield* orFailure(
      PgClient.withTransaction(
        Effect.gen(function* () {
          if (registry) yield* run(Sql.lockRegistered, { perspectiveName: name })
          const [work] = yield* listIn(registry, name, options.deadInstanceAfter)
          if (work === undefined) {
            const others = (yield* listIn(registry, null, options.deadInstanceAfter)).map((w) => w.perspective)
            return yield* new OperationError({
              reason: new NotFound({ what: "pending work of perspective", id: name }),
              message: `perspective "${name}" has no pending work; perspectives with pending work: ${others.join(", ") || "none"}`
            })
          }
          if (!work.orphaned && options.force !== true) {
            return yield* refused(
              `perspective "${name}" ${whoRuns(work)}: its ${work.pending} pending work row(s) are applied by the workers, not orphaned; ` +
                "pass --force to remove them anyway (its read model then lacks those events until a rebuild)"
            )
          }
          const removed = yield* run(Sql.remove, { perspectiveName: name })
          const planned = registry ? yield* run(Sql.removePlanned, { perspectiveName: name }) : 0
          return { perspective: name, pending: removed.pending, streams: removed.streams, planned }
        })
      )
    )
  }).pipe(Effect.withSpan("whizbang.work.remove", { attributes: { "whizbang.perspective": perspective } }))
