// `rewind` and `rebuild` of a stream or a whole perspective, with a progress bar.
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Rewind from "../Rewind.js"
import { confirm, output, root, withDatabase, yesFlag } from "./context.js"
import { count, progress } from "./render.js"

const perspective = Argument.String("perspective").pipe(Argument.withDescription("the perspective's name"))
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

export const rebuild = Command.make(
  "rebuild",
  {
    perspective,
    stream,
    batchSize,
    eventTypes: Flag.String("event-type").pipe(
      Flag.withAlias("t"),
      Flag.withDescription("an event type the perspective handles (repeat for each)"),
      Flag.atLeast(1)
    ),
    partitionCount: Flag.Int("partition-count").pipe(Flag.withDescription("the workers' partitionCount"), Flag.withDefault(10_000)),
    yes: yesFlag
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        const { json } = yield* root
        const streamId = Option.getOrUndefined(args.stream)
        yield* confirm(
          `delete ${args.perspective}'s rows and cursors of ${streamId === undefined ? "EVERY stream" : `stream ${streamId}`} and re-apply its events?`,
          args.yes
        )
        const result = yield* Rewind.rebuild({
          perspective: args.perspective,
          streamId,
          batchSize: args.batchSize,
          eventTypes: args.eventTypes,
          partitionCount: args.partitionCount,
          onProgress: progress("rebuild", json)
        })
        yield* output(
          result,
          (r) => `rebuilding ${r.perspective}: ${count(r.streams)} stream(s) reset, ${count(r.enqueued)} event(s) re-enqueued`
        )
      })
    )
).pipe(Command.withDescription("Delete a perspective's rows and cursors and re-enqueue every event of its types (asks for confirmation)."))
