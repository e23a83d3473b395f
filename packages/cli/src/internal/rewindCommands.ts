// `rewind` and `rebuild` of a stream or a whole perspective, with a progress bar.
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Rewind from "../Rewind.js"
import { confirm, output, root, withDatabase, yesFlag } from "./context.js"
import { count, progress } from "./render.js"

const perspective = Argument.String("perspective").pipe(
  Argument.withDescription("the perspective: a base name (its live version) or a version's key (<base>__v<N>)")
)
const stream = Flag.String("stream").pipe(
  Flag.withAlias("s"),
  Flag.withDescription("only this stream (default: every stream)"),
  Flag.optional
)
const batchSize = Flag.Int("batch-size").pipe(Flag.withDescription("streams per transaction"), Flag.withDefault(500))

export const rewind = Command.make("rewind", { perspective, stream, batchSize }, (args) =>
  withDatabase(
    Effect.gen(function* () {
      const { json } = yield* root
      const result = yield* Rewind.rewind({
        perspective: args.perspective,
        streamId: Option.getOrUndefined(args.stream),
        batchSize: args.batchSize,
        onProgress: progress("rewind", json)
      })
      yield* output(result, (r) => `flagged ${count(r.streams)} cursor(s) of ${r.perspective} RewindRequired; the workers rewind them`)
    })
  )
).pipe(Command.withDescription("Flag cursors RewindRequired (trigger: each stream's first event)."))

/** What a rebuild will do, in one line (the confirmation question, `--dry-run`, the line printed with `--yes`). */
export const describePlan = (plan: Rewind.RebuildPlan): string =>
  `rebuild ${plan.perspective} in place: empties ${count(plan.rows)} row(s)${plan.table === null ? "" : ` of ${plan.table}`} and resets ` +
  `${count(plan.streams)} stream(s) (cursors, snapshots, ${count(plan.pendingWork)} pending work row(s)), then ` +
  (plan.via === "replay"
    ? `plans ${count(plan.events)} event(s) of ${plan.eventTypes.join(", ")} for the replay of the instances that run it; ` +
      "reads miss the emptied rows until they are replayed"
    : `re-enqueues ${count(plan.events)} event(s) of ${plan.eventTypes.join(", ")}; reads miss the emptied rows until the workers re-apply them`)

export const rebuild = Command.make(
  "rebuild",
  {
    perspective,
    stream,
    batchSize,
    eventTypes: Flag.String("event-type").pipe(
      Flag.withAlias("t"),
      Flag.withDescription("only events of this type, one the perspective handles (repeatable; default: every type it handles)"),
      Flag.atLeast(0)
    ),
    partitionCount: Flag.Int("partition-count").pipe(Flag.withDescription("the workers' partitionCount"), Flag.withDefault(10_000)),
    dryRun: Flag.Boolean("dry-run").pipe(
      Flag.withDescription("print what the rebuild would do and change nothing"),
      Flag.withDefault(false)
    ),
    yes: yesFlag
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        const { json } = yield* root
        const options = {
          perspective: args.perspective,
          streamId: Option.getOrUndefined(args.stream),
          batchSize: args.batchSize,
          eventTypes: args.eventTypes,
          partitionCount: args.partitionCount
        }
        // Checked and counted first: a refusal writes nothing, and the question says what will be emptied.
        const plan = yield* Rewind.planRebuild(options)
        if (args.dryRun) return yield* output(plan, describePlan)
        if (args.yes) {
          if (!json) yield* Console.error(describePlan(plan))
        } else yield* confirm(`${describePlan(plan)}. Continue?`, false)
        const result = yield* Rewind.rebuild({ ...options, onProgress: progress("rebuild", json) })
        yield* output(result, (r) =>
          r.planned === undefined
            ? `rebuilding ${r.perspective}: ${count(r.streams)} stream(s) reset, ${count(r.enqueued)} event(s) re-enqueued`
            : `rebuilding ${r.perspective}: ${count(r.streams)} stream(s) reset, ${count(r.planned)} event(s) planned for replay (whizbang perspectives shows its progress)`
        )
      })
    )
).pipe(
  Command.withDescription(
    "Repair a read model in place: delete a registered perspective's rows, cursors, snapshots and pending work, and replay " +
      "every event of the types it handles (the instances that run it replay the history in bulk; -t: only these types, each " +
      "one it handles, re-enqueued as work rows). A base name means its live version, " +
      "<base>__v<N> that version. Says what it will empty and asks first (--yes without a terminal). Readers see the rows " +
      "missing until re-applied: to change a perspective's logic or shape with no downtime, declare a new version of it " +
      "instead (built beside the live one, switched by cutover, undone by rollback)."
  ),
  Command.withShortDescription(
    "Repair a read model in place from the events of the types it handles (asks first). Zero downtime: a new perspective version instead."
  )
)
