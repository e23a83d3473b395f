/**
 * Wakes the workers after appends committed outside a caller's transaction: `NOTIFY wh_work` sent after the
 * commit, at most one in flight per process. A wake-up asked for while one is in flight is sent once more after it
 * (a worker woken by the first may have claimed before the later commit), so every commit is followed by a
 * notification. A failed notification (its connection broken) is sent again, up to 5 times over about 3 seconds:
 * a tenant fleet starts an idle tenant's workers on this notification alone (it polls no idle tenant). After the
 * last failure it is logged; a database down that long also drops the fleet's LISTEN connection, whose reconnect
 * checks every tenant, and a single schema's workers poll.
 *
 * Why not in the append's own commit: Postgres takes a database-wide lock for every committing transaction that
 * notified, which queues concurrent appends behind each other's commit (see migration 0006).
 *
 * This process's own listeners are woken at once, without waiting for the notification (see `localWakeUps`): the
 * payload names the process, and they skip it when it arrives.
 *
 * @internal
 */
import { Effect, Schedule } from "effect"
import type { PgClient } from "../PgClient.js"
import * as LocalWakeUps from "./localWakeUps.js"

/** A failed notification's retries: 5, at 100 ms doubling (about 3 s in all). */
const retries = { schedule: Schedule.exponential("100 millis"), times: 5 }

/** Returns `wake`: ask for a notification after a commit (never waits for it). @internal */
export const make = (client: PgClient["Service"]): Effect.Effect<void> => {
  let inFlight = false
  let again = false
  const payload = `${client.schema}\n${LocalWakeUps.processToken}`
  const send: Effect.Effect<void> = Effect.suspend(() => {
    again = false
    return client.query("SELECT pg_notify('wh_work', $1)", [payload]).pipe(
      Effect.retry(retries),
      Effect.catch((error) =>
        Effect.logWarning("waking the workers failed; a fleet's reconnect or the workers' poll finds the work", error)
      ),
      // Checking `again` and clearing `inFlight` is one synchronous step, so no request is left behind.
      Effect.andThen(
        Effect.suspend(() => {
          if (again) return send
          inFlight = false
          return Effect.void
        })
      )
    )
  })
  return Effect.suspend(() => {
    LocalWakeUps.publish(client.schema)
    if (inFlight) {
      again = true
      return Effect.void
    }
    inFlight = true
    return Effect.asVoid(Effect.forkDetach(send))
  })
}
