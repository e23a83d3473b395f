/**
 * The hand-over of reads to one version of a perspective (a cutover, or a rollback to a retiring version), in three
 * steps: (1) the version becomes `ready` (read-your-writes waits include it from this commit on); (2) it applies
 * every event pending at that moment; (3) in one transaction it becomes `live`, `wh_per_<base>` points at its table
 * and the version it replaces becomes `retiring`.
 *
 * A hand-over is owned (migration 0016): whoever starts it holds a lease on it, renewed every third of the lease by
 * a fiber beside the hand-over, and let go when the hand-over stops without finishing (a graceful stop, an error).
 * A `ready` version whose lease ran out — its owner was killed, crashed or lost the database — is taken over by the
 * build loop of an instance that runs it ({@link run} with `"resume"`), under the base's row lock, so one instance
 * takes it; that instance waits again for what is pending (a superset of what was pending at the `ready` commit)
 * and switches. The switch itself is idempotent under the same lock: whoever commits it first makes the version
 * `live`, any other finds it live and switches nothing, so a hand-over is never done twice. Only the owner gives a
 * hand-over up on timeout (back to the state it left), so a stale owner cannot undo its successor's work.
 *
 * @internal
 */
import { Clock, Context, Duration, Effect, Exit, Fiber, Option } from "effect"
import type { PgClient } from "../PgClient.js"
import type { CutoverResult } from "../PgPerspectiveVersions.js"
import type { PostgresError } from "../PostgresError.js"
import * as Sql from "../sql/handOver.js"
import * as VersionSql from "../sql/versions.js"
import { CutoverTimedOut, UnknownPerspectiveVersion, VersionNotReady } from "../VersionError.js"

/** Where a hand-over can be paused by {@link Hooks}. */
export type Step = "locked" | "ready" | "caughtUp"

/** @internal */
export interface HooksShape {
  readonly onStep: (step: Step, key: string) => Effect.Effect<void>
}

/** Test hooks of the hand-over (see `PgPerspectiveVersions.HandOverHooks`). */
export const Hooks = Context.Reference<HooksShape>("@whizbang/postgres/PgPerspectiveVersions/HandOverHooks", {
  defaultValue: () => ({ onStep: () => Effect.void })
})

/** A hand-over's options, checked and defaulted. */
export interface Settings {
  readonly maxLag: number
  readonly timeoutMillis: number
  readonly graceSeconds: number
  readonly leaseSeconds: number
}

/** What a hand-over can fail with, besides the database. */
export type Failure = UnknownPerspectiveVersion | VersionNotReady | CutoverTimedOut

type Progress = typeof VersionSql.Progress.Type

const lockBase = (client: PgClient["Service"], baseName: string) => VersionSql.versionsOfBase(client, { baseName })

const progressOf = (client: PgClient["Service"], key: string) => VersionSql.progressOf(client, { key })

const notReady = (key: string, state: string, progress: Progress, maxLag: number) =>
  new VersionNotReady({
    perspectiveName: key,
    state,
    streamsToReplay: progress.planned,
    pendingEvents: progress.pending,
    deadLetters: progress.deadLetters,
    maxLag
  })

/**
 * Step 1, under the base's row lock: start the hand-over (`owner`), take over an abandoned one (`owner`), join one
 * whose owner is alive (`joined`: wait and switch beside it, never give it up), or nothing (`live`, or `gone` when
 * resuming and there is no abandoned hand-over any more).
 */
const claim = (client: PgClient["Service"], baseName: string, key: string, settings: Settings, owner: string, mode: Mode) =>
  client.withTransaction(
    Effect.gen(function* () {
      const rows = yield* lockBase(client, baseName)
      const row = rows.find((r) => r.key === key)
      if (row === undefined) {
        if (mode === "resume") return "gone" as const
        return yield* new UnknownPerspectiveVersion({ baseName, version: undefined, known: rows.map((r) => r.key) })
      }
      if (row.state === "live") return "live" as const
      const handOver = { key, owner, leaseSeconds: settings.leaseSeconds, graceSeconds: settings.graceSeconds }
      const takeOver = Effect.map(Sql.takeOver(client, handOver), (taken) => taken > 0)
      if (mode === "resume") return row.state === "ready" && (yield* takeOver) ? ("owner" as const) : ("gone" as const)
      yield* (yield* Hooks).onStep("locked", key)
      // Checked when it started; a ready version is joined (or taken over) as it is.
      if (row.state === "ready") return (yield* takeOver) ? ("owner" as const) : ("joined" as const)
      const progress = yield* progressOf(client, key)
      if (row.state === "retired" || progress.planned > 0 || progress.pending > settings.maxLag || progress.deadLetters > 0) {
        return yield* notReady(key, row.state, progress, settings.maxLag)
      }
      yield* Sql.begin(client, handOver)
      yield* VersionSql.notifyVersionsChanged(client, { keys: [key] })
      return "owner" as const
    })
  )

/** Step 2: waits until the version applied everything pending now; the events still pending if it timed out. */
const awaitApplied = (client: PgClient["Service"], key: string, started: number, timeoutMillis: number) =>
  Effect.gen(function* () {
    const ids = (yield* VersionSql.pendingWorkIds(client, { key })).ids ?? []
    let pause = 2
    while (ids.length > 0) {
      const left = (yield* VersionSql.stillPending(client, { workIds: ids })).n
      if (left === 0) return 0
      if ((yield* Clock.currentTimeMillis) - started > timeoutMillis) return left
      yield* Effect.sleep(Duration.millis(pause))
      pause = Math.min(pause * 2, 50)
    }
    return 0
  })

/** Step 3, in one transaction under the base's lock: the view and the states. */
const switchTo = (client: PgClient["Service"], baseName: string, key: string, settings: Settings) =>
  client.withTransaction(
    Effect.gen(function* () {
      const rows = yield* lockBase(client, baseName)
      const state = rows.find((r) => r.key === key)?.state
      // Another instance switched first (automatic cutovers run on every instance), or a rollback intervened.
      if (state === "live") return { switched: false, replaced: undefined }
      if (state !== "ready") {
        return yield* notReady(key, state ?? "unknown", { pending: 0, planned: 0, deadLetters: 0 }, settings.maxLag)
      }
      // What it dead-lettered while catching up: it would serve read models that lack those events.
      const check = yield* progressOf(client, key)
      if (check.deadLetters > 0) {
        // Given up in this transaction, refused after it commits.
        yield* Sql.giveUp(client, { key, owner: null, graceSeconds: settings.graceSeconds })
        yield* VersionSql.notifyVersionsChanged(client, { keys: [key] })
        return { refused: check }
      }
      const recorded = yield* Sql.graceOf(client, { key })
      const grace = Option.getOrUndefined(recorded)?.grace ?? settings.graceSeconds
      const live = rows.find((r) => r.state === "live")
      if (live !== undefined) yield* VersionSql.setRetiring(client, { key: live.key, graceSeconds: grace })
      yield* Sql.goLive(client, { key })
      yield* VersionSql.replaceView(client, { baseName, key })
      yield* VersionSql.notifyVersionsChanged(client, { keys: [key] })
      return { switched: true, replaced: live?.key }
    })
  )

/**
 * Runs `body` as the hand-over's owner: a fiber renews the lease every third of it while `body` runs; if `body`
 * does not succeed (interrupted by a graceful stop, a database error, a typed refusal), the lease is let go at once
 * so another instance resumes the hand-over at its next build round instead of after the lease.
 */
const owning = <A, E, R>(
  client: PgClient["Service"],
  key: string,
  owner: string,
  leaseSeconds: number,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const keepalive = Effect.gen(function* () {
        while (true) {
          yield* Effect.sleep(Duration.millis((leaseSeconds * 1000) / 3))
          const renewed = yield* Sql.renew(client, { key, owner, leaseSeconds }).pipe(
            Effect.map((rows) => rows > 0),
            Effect.catch((error) => Effect.as(Effect.logDebug("renewing the hand-over's lease failed; retrying", error), true))
          )
          // No longer the owner (the lease ran out and another instance took over, or the hand-over ended).
          if (!renewed) return
        }
      })
      const renewing = yield* Effect.forkChild(restore(keepalive))
      const exit = yield* Effect.exit(restore(body))
      yield* Fiber.interrupt(renewing)
      if (Exit.isFailure(exit)) {
        yield* Sql.release(client, { key, owner }).pipe(
          Effect.catch((error) => Effect.logDebug("letting the hand-over go failed; its lease runs out instead", error))
        )
      }
      return yield* exit
    })
  )

/** `start`: a cutover or rollback asked for; `resume`: the build loop finishing an abandoned hand-over, if any. */
export type Mode = "start" | "resume"

/**
 * The hand-over of `baseName`'s reads to `key` (see the module notes). `resume` does nothing (`undefined`) unless
 * `key` is `ready` with its owner's lease run out.
 */
export const run = (
  client: PgClient["Service"],
  baseName: string,
  key: string,
  settings: Settings,
  mode: Mode
): Effect.Effect<CutoverResult | undefined, PostgresError | Failure> =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const owner = globalThis.crypto.randomUUID()
    const role = yield* claim(client, baseName, key, settings, owner, mode)
    if (role === "gone") return undefined
    if (role === "live") return { baseName, live: key, replaced: undefined, millis: 0, switched: false }
    if (mode === "resume") {
      yield* Effect.logInfo(`perspective ${baseName}: resuming the hand-over to ${key} (its owner stopped renewing it)`)
    }
    const hooks = yield* Hooks
    const body = Effect.gen(function* () {
      yield* hooks.onStep("ready", key)
      const left = yield* awaitApplied(client, key, started, settings.timeoutMillis)
      if (left > 0) {
        // A joiner leaves the hand-over to its owner, who gives it up or finishes it.
        if (role === "owner") {
          yield* Sql.giveUp(client, { key, owner, graceSeconds: settings.graceSeconds })
          yield* VersionSql.notifyVersionsChanged(client, { keys: [key] })
        }
        return yield* new CutoverTimedOut({ perspectiveName: key, pendingEvents: left, timeoutMillis: settings.timeoutMillis })
      }
      yield* hooks.onStep("caughtUp", key)
      return yield* switchTo(client, baseName, key, settings)
    })
    const switched = yield* role === "owner" ? owning(client, key, owner, settings.leaseSeconds, body) : body
    const millis = (yield* Clock.currentTimeMillis) - started
    if ("refused" in switched) return yield* notReady(key, "building", switched.refused, settings.maxLag)
    if (!switched.switched) return { baseName, live: key, replaced: undefined, millis, switched: false }
    const replaced = switched.replaced
    yield* Effect.logInfo(
      `perspective ${baseName}: reads now served by ${key}${replaced === undefined ? "" : ` (was ${replaced})`} after ${millis} ms`
    )
    return { baseName, live: key, replaced, millis, switched: true }
  })
