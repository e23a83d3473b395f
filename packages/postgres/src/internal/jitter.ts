// Periodic loops of many instances started together — a process serving many tenants starts each tenant's services
// at about the same moment — would otherwise run their rounds together, forever: a burst of statements every period
// that the requests of that moment queue behind. A round's pause is drawn around its period instead.
import { Duration, Effect, Random } from "effect"

/** Sleeps for `period` give or take a fifth, drawn afresh each time (Effect's `Random`). @internal */
export const sleep = (period: Duration.Duration): Effect.Effect<void> =>
  Effect.flatMap(Random.next, (r) => Effect.sleep(Duration.millis(Duration.toMillis(period) * (0.8 + 0.4 * r))))
