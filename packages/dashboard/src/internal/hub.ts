// One snapshot computation shared by every open page. The hub LISTENs on `wh_work` (appends) and `wh_processed`
// (completions, version switches) and recomputes when told, at most once per `refreshInterval`, and at least once per
// `slowRefreshInterval` (lag in seconds and heartbeat ages move without notifications). Every open page receives the
// same rendered body through one SubscriptionRef. A failed computation marks the database unavailable since then
// (the page keeps the last snapshot under a banner); the next good one clears it.
import { PgClient } from "@whizbang/postgres"
import { Cause, Duration, Effect, Queue, Ref, type Scope, Stream, SubscriptionRef } from "effect"
import * as DashboardSnapshot from "../DashboardSnapshot.js"
import * as ActionLog from "./actionLog.js"
import * as History from "./history.js"
import type { Decoded } from "./options.js"

export interface State {
  readonly snapshot: DashboardSnapshot.Snapshot | undefined
  readonly takenAt: Date | undefined
  readonly unavailableSince: Date | undefined
  readonly error: string | undefined
  readonly history: History.History
  readonly actions: ReadonlyArray<ActionLog.Entry>
  readonly computations: number
}

export interface Published {
  readonly revision: number
  readonly body: string
}

export interface Hub {
  readonly state: Effect.Effect<State>
  readonly published: SubscriptionRef.SubscriptionRef<Published>
  /** Records an action (page and log) and recomputes soon. */
  readonly record: (entry: ActionLog.Entry) => Effect.Effect<void>
  /** Asks for a recomputation (still at most once per refresh interval). */
  readonly wake: Effect.Effect<void>
}

/** A completion's notification detail: `<perspective>\t<id>,<id>,...` (see the completion function's step 7). */
const appliedIn = (detail: string): readonly [string, number] | undefined => {
  const tab = detail.indexOf("\t")
  if (tab <= 0 || detail.startsWith("@")) return undefined
  return [detail.slice(0, tab), detail.slice(tab + 1).split(",").length]
}

export const make = (options: Decoded, render: (state: State) => string): Effect.Effect<Hub, never, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const history = History.make(options.historyPoints)
    const initial: State = {
      snapshot: undefined,
      takenAt: undefined,
      unavailableSince: undefined,
      error: undefined,
      history: History.empty,
      actions: [],
      computations: 0
    }
    const state = yield* Ref.make(initial)
    const published = yield* SubscriptionRef.make<Published>({ revision: 0, body: render(initial) })
    const wakeUps = yield* Queue.sliding<void>(1)
    const wake = () => Queue.offerUnsafe(wakeUps, undefined)

    const publish = Effect.flatMap(Ref.get(state), (s) =>
      SubscriptionRef.update(published, (p) => ({ revision: p.revision + 1, body: render(s) }))
    )

    const refresh = DashboardSnapshot.compute({
      deadInstanceAfter: options.deadInstanceAfter,
      stuckAfter: options.stuckAfter
    }).pipe(
      Effect.timeout(Duration.seconds(20)),
      Effect.provideService(PgClient.PgClient, client),
      Effect.matchCauseEffect({
        onSuccess: (snapshot) =>
          Effect.gen(function* () {
            const before = yield* Ref.get(state)
            if (before.unavailableSince !== undefined) yield* Effect.logInfo("dashboard: the database is available again")
            yield* Ref.update(state, (s) => ({
              ...s,
              snapshot,
              takenAt: new Date(),
              unavailableSince: undefined,
              error: undefined,
              history: history.next(snapshot, Date.now()),
              computations: s.computations + 1
            }))
          }),
        onFailure: (cause) =>
          Effect.gen(function* () {
            const before = yield* Ref.get(state)
            const error = Cause.squash(cause)
            const message = error instanceof Error ? error.message : String(error)
            if (before.unavailableSince === undefined) yield* Effect.logWarning(`dashboard: the database is unavailable: ${message}`)
            yield* Ref.update(state, (s) => ({
              ...s,
              unavailableSince: s.unavailableSince ?? new Date(),
              error: message,
              computations: s.computations + 1
            }))
          })
      }),
      Effect.andThen(publish)
    )

    const loop = Effect.gen(function* () {
      while (true) {
        yield* refresh
        // At most one computation per refresh interval, however many notifications arrive.
        yield* Effect.sleep(options.refreshInterval)
        const down = (yield* Ref.get(state)).unavailableSince !== undefined
        yield* Queue.take(wakeUps).pipe(Effect.timeoutOption(down ? options.refreshInterval : options.slowRefreshInterval))
      }
    })

    const countApplied = (detail: string | undefined) => {
      for (const line of detail?.split("\n") ?? []) {
        const applied = appliedIn(line)
        if (applied !== undefined) history.countApplied(applied[0], applied[1])
      }
    }
    const notifications = Stream.merge(
      client.listen("wh_work"),
      Stream.tap(client.listen("wh_processed"), (d) => Effect.sync(() => countApplied(d)))
    )
    yield* Effect.forkScoped(Stream.runForEach(notifications, () => Effect.sync(wake)))
    yield* Effect.forkScoped(loop)

    return {
      state: Ref.get(state),
      published,
      wake: Effect.sync(() => wake()),
      record: (entry) =>
        Effect.gen(function* () {
          yield* ActionLog.log(entry)
          yield* Ref.update(state, (s) => ({ ...s, actions: [entry, ...s.actions].slice(0, ActionLog.keep) }))
          yield* publish
          wake()
        })
    }
  })
