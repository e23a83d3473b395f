// `work list | remove`: pending work by perspective, and the removal of work nothing will apply.
import { Duration, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Work from "../Work.js"
import { confirm, deadInstanceAfterFlag, output, withDatabase, yesFlag } from "./context.js"
import { age, count, table } from "./render.js"

const runsIt = (w: Work.PerspectiveWork): string =>
  w.orphaned
    ? "nothing (orphaned)"
    : [
        w.registered === null ? undefined : `registered (${w.registered})`,
        w.runners > 0 ? `${count(w.runners)} live instance(s)` : undefined
      ]
        .filter((part) => part !== undefined)
        .join(", ")

const list = Command.make(
  "list",
  {
    perspective: Flag.String("perspective").pipe(Flag.withAlias("p"), Flag.withDescription("only this perspective"), Flag.optional),
    deadInstanceAfter: deadInstanceAfterFlag
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        const work = yield* Work.list({
          perspective: Option.getOrUndefined(flags.perspective),
          deadInstanceAfter: Duration.seconds(flags.deadInstanceAfter)
        })
        yield* output(work, (rows) => {
          const orphans = rows.filter((w) => w.orphaned)
          return [
            table(
              ["PERSPECTIVE", "PENDING", "STREAMS", "OLDEST", "RUN BY"],
              rows.map((w) => [w.perspective, count(w.pending), count(w.streams), age(w.oldestAgeSeconds), runsIt(w)])
            ),
            ...orphans.map(
              (w) =>
                `\n${w.perspective}: ${w.registered === "retired" ? "retired" : "not registered"} and no live instance runs it; remove its work: whizbang work remove ${w.perspective}`
            )
          ].join("")
        })
      })
    )
).pipe(
  Command.withDescription(
    "Pending work by perspective: rows, streams, the oldest, and what runs it (registered, live instances) — or nothing (orphaned)."
  )
)

const remove = Command.make(
  "remove",
  {
    perspective: Argument.String("perspective").pipe(Argument.withDescription("the key its work is filed under (as work list shows it)")),
    force: Flag.Boolean("force").pipe(
      Flag.withDescription("also the work of a perspective that is registered (not retired) or that a live instance runs"),
      Flag.withDefault(false)
    ),
    deadInstanceAfter: deadInstanceAfterFlag,
    yes: yesFlag
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        const options = { force: args.force, deadInstanceAfter: Duration.seconds(args.deadInstanceAfter) }
        // The checks run first (a refusal asks nothing); remove checks again in its transaction.
        const [work] = yield* Work.list({ perspective: args.perspective, deadInstanceAfter: options.deadInstanceAfter })
        if (work !== undefined && (work.orphaned || args.force)) {
          yield* confirm(
            `remove ${count(work.pending)} pending work row(s) of "${work.perspective}" on ${count(work.streams)} stream(s)` +
              `${work.orphaned ? " (orphaned: nothing runs it)" : ` (${runsIt(work)}: its read model will lack these events)`}?`,
            args.yes
          )
        }
        const removed = yield* Work.remove(args.perspective, options)
        yield* output(
          removed,
          (r) =>
            `removed ${count(r.pending)} pending work row(s) of "${r.perspective}" on ${count(r.streams)} stream(s)` +
            (r.planned === 0 ? "" : `, and ${count(r.planned)} stream(s) of planned history`)
        )
      })
    )
).pipe(
  Command.withDescription(
    "Remove the work of a perspective nothing runs (misspelled, or removed from the code). Refuses a registered or running one unless --force; asks first (--yes without a terminal)."
  )
)

export const work = Command.make("work").pipe(
  Command.withDescription("Pending work by perspective; remove work nothing will apply."),
  Command.withSubcommands([list, remove])
)
