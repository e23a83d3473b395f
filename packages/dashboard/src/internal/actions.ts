// The four actions, each through the CLI's own operation: what it will do (in words, for the confirmation), and
// running it. Ids and names come from the URL: the operations validate them (a bad one is NotFound / InvalidInput).
import { DeadLetters, OperationError, Versions } from "@whizbang/cli"
import type { PgClient } from "@whizbang/postgres"
import { Effect } from "effect"

export type Action =
  | { readonly _tag: "Retry"; readonly id: string }
  | { readonly _tag: "Discard"; readonly id: string }
  | { readonly _tag: "Cutover"; readonly key: string }
  | { readonly _tag: "Rollback"; readonly base: string }

export interface Described {
  /** A short name for the action list: "retry dead letter 0193…". */
  readonly what: string
  /** What it will do, in full, for the confirmation. */
  readonly explanation: string
  readonly button: string
}

type Op<A> = Effect.Effect<A, OperationError.OperationError, PgClient.PgClient>

const notFound = (what: string, id: string, message: string) =>
  new OperationError.OperationError({ reason: new OperationError.NotFound({ what, id }), message })

const version = (key: string) =>
  Effect.flatMap(Versions.list(), (all) => {
    const v = all.find((o) => o.perspectiveName === key)
    return v === undefined ? Effect.fail(notFound("perspective version", key, `no perspective version ${key}`)) : Effect.succeed({ v, all })
  })

export const describe = (action: Action): Op<Described> => {
  switch (action._tag) {
    case "Retry":
    case "Discard":
      return Effect.map(
        DeadLetters.show(action.id).pipe(
          Effect.catchIf(
            (e) => e.reason._tag === "InvalidInput" || e.reason._tag === "NotFound",
            () =>
              Effect.fail(notFound("dead letter", action.id, `no dead letter ${action.id} (it may have been retried or discarded already)`))
          )
        ),
        (d) =>
          action._tag === "Retry"
            ? {
                what: `retry dead letter ${d.id} (event ${d.eventId} of ${d.perspective})`,
                explanation: `Puts event ${d.eventId} (${d.eventType}) of stream ${d.streamId} back into the work queue of perspective ${d.perspective} with 0 attempts, and deletes dead letter ${d.id}, in one transaction. A worker then applies the event again; if it fails ${d.attempts} more times it becomes a dead letter again.`,
                button: "Retry"
              }
            : {
                what: `discard dead letter ${d.id} (event ${d.eventId} of ${d.perspective})`,
                explanation: `Deletes dead letter ${d.id} for good: perspective ${d.perspective} never applies event ${d.eventId} (${d.eventType}) of stream ${d.streamId}, and the event's lifecycle ends in DeadLettered. This cannot be undone.`,
                button: "Discard"
              }
      )
    case "Cutover":
      return Effect.map(version(action.key), ({ v, all }) => {
        const live = all.find((o) => o.baseName === v.baseName && o.state === "live")
        return {
          what: `cut over ${v.baseName} to v${v.version}`,
          explanation: `Waits until ${v.perspectiveName} (state ${v.state}, ${Math.floor(v.progress * 100)}% built, ${v.pendingEvents} events pending) has applied the events pending now — at most 30 seconds, else nothing switches — then switches reads of ${v.baseName} to it in one transaction. ${
            live === undefined
              ? "No version serves now."
              : `${live.perspectiveName} stops serving and is kept up to date for 10 minutes, during which a rollback switches back.`
          }`,
          button: `Cut over to v${v.version}`
        }
      })
    case "Rollback":
      return Effect.flatMap(Versions.list(), (all) => {
        const retiring = all.find((o) => o.baseName === action.base && o.state === "retiring")
        const live = all.find((o) => o.baseName === action.base && o.state === "live")
        if (retiring === undefined) {
          return Effect.fail(notFound("retiring version of", action.base, `nothing to roll back: ${action.base} has no retiring version`))
        }
        return Effect.succeed({
          what: `roll back ${action.base} to v${retiring.version}`,
          explanation: `Switches reads of ${action.base} back to ${retiring.perspectiveName} (retiring, kept up to date since the last cutover) in one transaction, once it has applied the events pending now (at most 30 seconds). ${
            live === undefined ? "" : `${live.perspectiveName} stops serving and becomes retiring.`
          }`,
          button: `Roll back to v${retiring.version}`
        })
      })
  }
}

export const run = (action: Action): Op<string> => {
  switch (action._tag) {
    case "Retry":
      return Effect.map(
        DeadLetters.retry(action.id),
        (r) => `event ${r.eventId} is back in ${r.perspective}'s work queue as work ${r.workId}`
      )
    case "Discard":
      return Effect.as(DeadLetters.discard(action.id), `dead letter ${action.id} discarded`)
    case "Cutover":
      return Effect.map(Versions.cutover({ perspective: action.key }), (r) =>
        r.switched
          ? `${r.live} serves ${r.baseName} now (switched in ${r.millis} ms)${r.replaced === undefined ? "" : `; ${r.replaced} is retiring`}`
          : `${r.live} already served ${r.baseName}; nothing switched`
      )
    case "Rollback":
      return Effect.map(Versions.rollback({ perspective: action.base }), (r) =>
        r.switched
          ? `${r.live} serves ${r.baseName} again (switched in ${r.millis} ms)`
          : `nothing switched: ${r.live} serves ${r.baseName}`
      )
  }
}
