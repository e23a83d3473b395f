// Who did what, when, and how it ended: kept for the page (the last 50) and written to the log.
import { Effect } from "effect"

export interface Entry {
  readonly at: Date
  /** The client's address and user agent. */
  readonly who: string
  /** What was asked, in words ("retry dead letter 0193…"). */
  readonly what: string
  readonly outcome: "done" | "refused" | "failed"
  /** The result or the refusal, in words. */
  readonly detail: string
}

export const keep = 50

export const log = (entry: Entry): Effect.Effect<void> => {
  const message = `dashboard action ${entry.outcome}: ${entry.what}`
  const annotated = (effect: Effect.Effect<void>) =>
    Effect.annotateLogs(effect, {
      "whizbang.dashboard.who": entry.who,
      "whizbang.dashboard.what": entry.what,
      "whizbang.dashboard.outcome": entry.outcome,
      "whizbang.dashboard.detail": entry.detail,
      "whizbang.dashboard.at": entry.at.toISOString()
    })
  return annotated(entry.outcome === "done" ? Effect.logInfo(message) : Effect.logWarning(message))
}
