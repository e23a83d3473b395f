/**
 * What the worker's loops share: the cycle's dependencies, the decoded options, the state (see `workerState.ts`),
 * the drain queue the claim loop feeds and the consumers take from, and the wake-up the consumers and
 * `requestImmediatePoll` send the claim loop.
 */
import { Effect, type Queue, type SubscriptionRef } from "effect"
import type { OutageLog } from "./outageLog.js"
import type { CycleSummary, Hooks } from "../PerspectiveWorker.js"
import type { LifecycleDeps } from "./lifecycle.js"
import type { CycleDeps } from "./workerCycle.js"
import type { Progress, Streams } from "./workerState.js"

export interface WorkerContext {
  readonly deps: CycleDeps
  readonly hooks: Hooks
  readonly lifecycle: LifecycleDeps
  /** Fires lifecycles whose stages never ran (a crash, a dead letter); run when the worker turns idle. */
  readonly reconcileLifecycles: Effect.Effect<void>
  readonly progress: SubscriptionRef.SubscriptionRef<Progress>
  readonly streams: Streams
  readonly drain: Queue.Queue<string>
  readonly wake: Queue.Queue<void>
  /** Whether NOTIFY wake-ups are heard (a `NotificationListener`): only then can a worker settle without a claim. */
  readonly notified: boolean
  /** The safety-net poll interval (the longer one when NOTIFY wake-ups are heard). */
  readonly pollMillis: number
  readonly leaseSeconds: number
  /** Each loop logs a run of failures (a database outage) once, and once more when it recovers: see `OutageLog`. */
  readonly logs: {
    readonly claim: OutageLog
    readonly lease: OutageLog
    readonly cycle: OutageLog
    readonly stages: OutageLog
  }
}

/** Runs a hook, if set; a failing hook is logged and never stops the worker. */
export const runHook = <A>(hook: ((a: A) => Effect.Effect<void>) | undefined, a: A) =>
  hook === undefined ? Effect.void : Effect.catchCause(hook(a), (cause) => Effect.logWarning("worker hook failed", cause))

export const emptyTick: CycleSummary = { streams: 0, eventsApplied: 0, failures: 0, deduped: 0 }
