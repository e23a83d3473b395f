// `migrate`, `status`, `failed`.
import { PgMigrator, PgStatus } from "@whizbang/postgres"
import { Duration, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import * as FailedCursors from "../FailedCursors.js"
import { databaseFailure } from "../OperationError.js"
import { orFailure } from "./database.js"
import { deadInstanceAfterFlag, output, withDatabase } from "./context.js"
import { age, count, short, table, truncate } from "./render.js"
import { renderVersions } from "./versionCommands.js"

const perspectiveFlag = Flag.String("perspective").pipe(Flag.withAlias("p"), Flag.withDescription("only this perspective"), Flag.optional)
const limitFlag = Flag.Int("limit").pipe(Flag.withDescription("at most this many rows"), Flag.withDefault(100))

export const migrate = Command.make("migrate", {}, () =>
  withDatabase(
    Effect.gen(function* () {
      const report = yield* orFailure(PgMigrator.run.pipe(Effect.catchTag("MigrationError", (e) => Effect.fail(databaseFailure(e)))))
      yield* output(report, (r) =>
        r.applied.length === 0
          ? `schema ${r.schema} is up to date (${r.alreadyApplied.length} migrations)`
          : `schema ${r.schema}: applied ${r.applied.join(", ")}`
      )
    })
  )
).pipe(Command.withDescription("Create the service schema and apply pending migrations."))

export const renderStatus = (s: PgStatus.Snapshot): string =>
  [
    `whizbang status — schema ${s.schema} — ${s.takenAt}`,
    "",
    "PERSPECTIVES",
    table(
      ["PERSPECTIVE", "STREAMS", "PENDING", "LAG", "OLDEST PENDING", "FAILED", "DEAD LETTERS", "REWINDING", "RUNNING ON"],
      s.perspectives.map((p) => [
        p.perspective,
        count(p.streams),
        count(p.pending),
        `${count(p.pending)} events`,
        p.pending === 0 ? "-" : age(p.lagSeconds),
        count(p.failed),
        count(p.deadLetters),
        count(p.rewindRequired),
        `${count(p.runningInstances)} instance(s)`
      ])
    ),
    "",
    `LIFECYCLES: ${count(s.lifecycles.pending)} pending (waiting for their last perspective), ${count(s.lifecycles.deadLetteredEvents)} dead-lettered (ended in DeadLettered, never PostAllPerspectives)`,
    "",
    "PERSPECTIVE VERSIONS",
    renderVersions(s.versions),
    ...s.versionFindings.map((f) => `  ${f.reason._tag}: ${f.message}`),
    "",
    "INSTANCES",
    table(
      ["INSTANCE", "SERVICE", "HOST", "PID", "STARTED", "HEARTBEAT AGE", "PERSPECTIVES"],
      s.instances.map((i) => [
        i.instanceId,
        i.serviceName,
        i.hostName,
        String(i.processId),
        i.startedAt,
        age(i.heartbeatAgeSeconds),
        i.perspectives?.join(", ") ?? "all"
      ])
    ),
    "",
    "STREAM LOCKS",
    table(
      ["STREAM", "PERSPECTIVE", "HOLDER", "REASON", "EXPIRES"],
      s.locks.map((l) => [
        l.streamId,
        l.perspective,
        l.instanceId,
        l.reason ?? "-",
        `${l.expiresAt ?? "never"}${l.expired ? " (expired)" : ""}`
      ])
    ),
    "",
    "WAITING (cannot move now)",
    table(
      ["STREAM", "PERSPECTIVE", "PENDING", "REASON", "DETAIL"],
      s.waiting.map((x) => [x.streamId, x.perspective, count(x.pending), x.reason._tag, truncate(x.message, 100)])
    ),
    "",
    "STUCK (pending without progress)",
    table(
      ["STREAM", "PERSPECTIVE", "PENDING", "WAITING", "REASON", "DETAIL"],
      s.stuck.map((x) => [x.streamId, x.perspective, count(x.pending), age(x.waitingSeconds), x.reason._tag, truncate(x.message, 80)])
    ),
    ...orphaned(s)
  ].join("\n")

/**
 * Perspectives whose waiting work no release registered (a misspelled name, one removed from the code): nothing will
 * apply it, and the tables above cut the watchdog's advice off, so it gets lines of its own.
 */
const orphaned = (s: PgStatus.Snapshot): ReadonlyArray<string> => {
  if (s.versions.length === 0) return []
  const names = [...s.waiting, ...s.stuck]
    .filter((x) => x.reason._tag === "NoInstanceRunsPerspective" && !s.versions.some((v) => v.perspectiveName === x.perspective))
    .map((x) => x.perspective)
  return [...new Set(names)].flatMap((name, i) => [
    ...(i === 0 ? ["", "ORPHANED WORK (no release registered these perspectives: nothing will apply their work)"] : []),
    `  ${name}: see it with whizbang work list, remove it with whizbang work remove ${name}`
  ])
}

export const status = Command.make(
  "status",
  {
    stuckAfter: Flag.Int("stuck-after").pipe(
      Flag.withDescription("seconds pending without progress before the watchdog reports a pair"),
      Flag.withDefault(30)
    ),
    deadInstanceAfter: deadInstanceAfterFlag
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        const snapshot = yield* orFailure(
          PgStatus.snapshot({
            watchdog: { stuckAfter: Duration.seconds(flags.stuckAfter), deadInstanceAfter: Duration.seconds(flags.deadInstanceAfter) }
          })
        )
        yield* output(snapshot, renderStatus)
      })
    )
).pipe(
  Command.withDescription(
    "Per perspective: streams, pending work, lag, failures, dead letters; perspective versions; instances; locks; stuck streams."
  )
)

/** The screen's width for wrapped tables: the terminal's columns, 120 when stdout is not a terminal. */
const screenWidth = (): number => process.stdout.columns ?? 120

/** `failed`'s table: the whole error, wrapped under its column to `width`, or on one line without a width. */
export const renderFailed = (rows: ReadonlyArray<FailedCursors.FailedCursor>, width: number | undefined): string =>
  table(
    ["STREAM", "PERSPECTIVE", "STOPPED AT", "ATTEMPTS", "RETRY AFTER", "ERROR"],
    rows.map((c) => [
      c.streamId,
      c.perspective,
      short(c.headEventId),
      c.attempts === null ? "-" : String(c.attempts),
      c.retryAfter ?? "-",
      c.error === null ? "-" : c.error.replaceAll(/\s+/g, " ")
    ]),
    { width }
  )

export const failed = Command.make(
  "failed",
  {
    perspective: perspectiveFlag,
    limit: limitFlag,
    wide: Flag.Boolean("wide").pipe(
      Flag.withDescription("each error on one line, however long (default: wrapped to the screen under its column)"),
      Flag.withDefault(false)
    )
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        const cursors = yield* FailedCursors.list({ perspective: Option.getOrUndefined(flags.perspective), limit: flags.limit })
        yield* output(cursors, (rows) => renderFailed(rows, flags.wide ? undefined : screenWidth()))
      })
    )
).pipe(Command.withDescription("Cursors flagged Failed, with their whole errors (wrapped; --wide: one line each; --json)."))
