// `dead-letters list | show | retry | discard`.
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as DeadLetters from "../DeadLetters.js"
import { confirm, output, withDatabase, yesFlag } from "./context.js"
import { table, truncate } from "./render.js"

const id = Argument.String("id").pipe(Argument.withDescription("the dead letter's id"))

const list = Command.make(
  "list",
  {
    perspective: Flag.String("perspective").pipe(Flag.withAlias("p"), Flag.optional),
    limit: Flag.Int("limit").pipe(Flag.withDefault(100))
  },
  (flags) =>
    withDatabase(
      Effect.gen(function* () {
        const letters = yield* DeadLetters.list({ perspective: Option.getOrUndefined(flags.perspective), limit: flags.limit })
        yield* output(letters, (rows) =>
          table(
            ["ID", "PERSPECTIVE", "STREAM", "EVENT", "TYPE", "ATTEMPTS", "ERROR"],
            rows.map((l) => [l.id, l.perspective, l.streamId, l.eventId, l.eventType, String(l.attempts), truncate(l.error, 50)])
          )
        )
      })
    )
).pipe(Command.withDescription("Dead letters, oldest first."))

const show = Command.make("show", { id }, (args) =>
  withDatabase(
    Effect.gen(function* () {
      const letter = yield* DeadLetters.show(args.id)
      yield* output(letter, (l) =>
        [
          `dead letter ${l.id}`,
          `  perspective  ${l.perspective}`,
          `  stream       ${l.streamId}`,
          `  event        ${l.eventId} (${l.eventType})`,
          `  attempts     ${l.attempts}`,
          `  created      ${l.createdAt ?? "-"}`,
          `  error        ${l.error}`,
          `  payload      ${JSON.stringify(l.payload)}`
        ].join("\n")
      )
    })
  )
).pipe(Command.withDescription("One dead letter with its payload and error."))

const retry = Command.make(
  "retry",
  {
    id,
    partitionCount: Flag.Int("partition-count").pipe(Flag.withDescription("the workers' partitionCount"), Flag.withDefault(10_000))
  },
  (args) =>
    withDatabase(
      Effect.gen(function* () {
        const retried = yield* DeadLetters.retry(args.id, { partitionCount: args.partitionCount })
        yield* output(retried, (r) => `re-enqueued event ${r.eventId} of stream ${r.streamId} for ${r.perspective} as work ${r.workId}`)
      })
    )
).pipe(Command.withDescription("Move a dead letter back into the work queue (attempts 0) and delete the letter, in one transaction."))

const discard = Command.make("discard", { id, yes: yesFlag }, (args) =>
  withDatabase(
    Effect.gen(function* () {
      const letter = yield* DeadLetters.show(args.id)
      yield* confirm(`discard dead letter ${letter.id} (event ${letter.eventId} of ${letter.perspective}) for good?`, args.yes)
      yield* DeadLetters.discard(letter.id)
      yield* output({ discarded: letter.id }, () => `discarded dead letter ${letter.id}`)
    })
  )
).pipe(Command.withDescription("Delete a dead letter for good (asks for confirmation)."))

export const deadLetters = Command.make("dead-letters").pipe(
  Command.withDescription("Events that exhausted their attempts."),
  Command.withSubcommands([list, show, retry, discard])
)
