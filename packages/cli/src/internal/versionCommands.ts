// `perspectives [--watch]`, `cutover`, `rollback`: perspective versions.
import type { PgPerspectiveVersions } from "@whizbang/postgres"
import { Console, Duration, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Versions from "../Versions.js"
import { confirm, deadInstanceAfterFlag, output, root, withDatabase, yesFlag } from "./context.js"
import { age, bar, count, table } from "./render.js"

const stateText = (v: PgPerspectiveVersions.VersionInfo): string => {
  switch (v.state) {
    case "building":
      return v.caughtUp ? "caught up" : `building ${Math.floor(v.progress * 100)}%`
    case "ready":
      return v.handOverAbandoned ? "ready, resuming" : "ready, handing over"
    default:
      return v.state
  }
}

/** Under the table: what a caught-up version waits for, and who finishes an abandoned hand-over. */
const notes = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>): ReadonlyArray<string> =>
  versions.flatMap((v) =>
    v.caughtUp
      ? [
          `${v.perspectiveName} is caught up, waiting for a cutover: automatic unless its instances run with versions.autoCutover: false, then \`whizbang cutover ${v.baseName}\``
        ]
      : v.state === "ready" && v.handOverAbandoned
        ? [`${v.perspectiveName}: its hand-over's owner stopped; the next build round of an instance that runs it finishes the hand-over`]
        : []
  )

/** The replay of planned history: its average rate since it started and the time left at that rate. */
const replayText = (v: PgPerspectiveVersions.VersionInfo): string =>
  v.streamsToReplay === 0
    ? "-"
    : v.replayEventsPerSecond === undefined
      ? "waiting"
      : `${count(Math.round(v.replayEventsPerSecond))} events/s, ETA ${v.replayEtaSeconds === undefined ? "-" : age(v.replayEtaSeconds)}`

/** The versions table of `perspectives` and of `status`. */
export const renderVersions = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>): string =>
  [
    table(
      ["PERSPECTIVE", "BASE", "VERSION", "STATE", "PROGRESS", "STREAMS REPLAYED", "REPLAY", "PENDING", "LAG", "DEAD LETTERS", "RUNNER"],
      versions.map((v) => [
        v.perspectiveName,
        v.baseName,
        `v${v.version}`,
        stateText(v),
        v.state === "retired" ? "-" : bar(v.progress),
        `${count(v.historyStreams - v.streamsToReplay)}/${count(v.historyStreams)}`,
        replayText(v),
        `${count(v.pendingEvents)} events`,
        v.pendingEvents === 0 ? "-" : age(v.lagSeconds),
        count(v.deadLetters),
        v.state === "retired" ? "-" : v.hasRunner ? "running" : "no instance runs it"
      ])
    ),
    ...notes(versions)
  ].join("\n")

const frame = (versions: ReadonlyArray<PgPerspectiveVersions.VersionInfo>) =>
  `perspective versions — ${new Date().toISOString()}\n${renderVersions(versions)}`

const duration = (name: string, description: string) => Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

const optionalDuration = (name: string, value: Option.Option<string>) =>
  Option.match(value, { onNone: () => Effect.succeed(undefined), onSome: (text) => Versions.parseDuration(name, text) })

export const perspectives = Command.make(
  "perspectives",
  {
    watch: Flag.Boolean("watch").pipe(
      Flag.withDescription("redraw every --interval until Ctrl-C; without a terminal, print a frame each time and stop once settled"),
      Flag.withDefault(false)
    ),
    interval: duration("interval", "time between frames with --watch (500ms, 2s, 1m; default 2s)"),
    deadInstanceAfter: deadInstanceAfterFlag
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        const { json } = yield* root
        const list = Versions.list({ deadInstanceAfter: Duration.seconds(flags.deadInstanceAfter) })
        if (!flags.watch) return yield* output(yield* list, frame)
        const interval = (yield* optionalDuration("interval", flags.interval)) ?? Duration.seconds(2)
        const terminal = process.stdout.isTTY === true
        for (;;) {
          const versions = yield* list
          // One compact JSON document per line with --json, so a script can read frames as they come.
          if (json) yield* Console.log(JSON.stringify(versions))
          else yield* Console.log(`${terminal ? "\x1b[2J\x1b[H" : ""}${frame(versions)}${terminal ? "\n\n(Ctrl-C to stop)" : ""}`)
          if (!terminal && Versions.settled(versions)) return
          yield* Effect.sleep(interval)
        }
      })
    )
).pipe(
  Command.withDescription(
    "Every perspective version: state, build progress, streams replayed, the replay's rate and ETA, pending events and lag, dead letters, whether a live instance runs it."
  )
)

const perspective = Argument.String("perspective").pipe(Argument.withDescription("the perspective's base name, or a version's key"))
const switchFlags = {
  timeout: duration("timeout", "how long to wait for the events pending at the start (default 30s)"),
  grace: duration("grace", "how long the replaced version is kept up to date for a rollback (default 10m)")
}

const switched = (verb: string) => (r: PgPerspectiveVersions.CutoverResult) =>
  r.switched
    ? `${r.baseName}: ${verb} ${r.live}${r.replaced === undefined ? "" : ` (${r.replaced} now retiring)`} in ${r.millis} ms`
    : `${r.baseName}: nothing to do, ${r.live} is live (no newer version to go to)`

export const cutover = Command.make(
  "cutover",
  {
    perspective,
    version: Flag.Int("version").pipe(Flag.withDescription("the version to serve (default: the newest newer one)"), Flag.optional),
    maxLag: Flag.Int("max-lag").pipe(Flag.withDescription("at most this many pending events to start (default 1000)"), Flag.optional),
    ...switchFlags
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        const result = yield* Versions.cutover({
          perspective: args.perspective,
          version: Option.getOrUndefined(args.version),
          maxLag: Option.getOrUndefined(args.maxLag),
          timeout: yield* optionalDuration("timeout", args.timeout),
          grace: yield* optionalDuration("grace", args.grace)
        })
        yield* output(result, switched("reads now served by"))
      })
    )
).pipe(Command.withDescription("Switch reads of a perspective to a new version once it is caught up; the old one is kept for a rollback."))

export const rollback = Command.make("rollback", { perspective, ...switchFlags }, (args) =>
  withDatabase(
    Effect.gen(function* () {
      const result = yield* Versions.rollback({
        perspective: args.perspective,
        timeout: yield* optionalDuration("timeout", args.timeout),
        grace: yield* optionalDuration("grace", args.grace)
      })
      yield* output(result, switched("rolled back to"))
    })
  )
).pipe(
  Command.withDescription(
    "Switch reads back to the older version the last cutover replaced, while it is retiring. Never forward: after a rollback, `cutover` goes back to the newer version."
  )
)

export const retire = Command.make(
  "retire",
  {
    perspective,
    force: Flag.Boolean("force").pipe(Flag.withDescription("retire it even while live instances run it"), Flag.withDefault(false)),
    deadInstanceAfter: deadInstanceAfterFlag,
    yes: yesFlag
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        yield* confirm(
          `retire ${args.perspective}: appends stop routing its events to it and its pending work is dropped (its table and view stay)?`,
          args.yes
        )
        const retired = yield* Versions.retire({
          perspective: args.perspective,
          force: args.force,
          deadInstanceAfter: Duration.seconds(args.deadInstanceAfter)
        })
        yield* output(retired, (rs) =>
          rs.length === 0
            ? `${args.perspective}: already retired, nothing to do`
            : rs.map((r) => `retired ${r.perspectiveName} (${count(r.dropped)} pending work row(s) dropped)`).join("\n")
        )
      })
    )
).pipe(
  Command.withDescription(
    "Retire a perspective removed from the code (a version's key, or a base name for all its versions): appends stop routing to it and its pending work is dropped; asks for confirmation."
  )
)
