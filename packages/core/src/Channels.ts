/**
 * The in-process channels between the claim loop, the perspective workers and the flush workers.
 *
 * | channel | carries | from -> to |
 * |---|---|---|
 * | drain | stream ids with claimed work | ClaimWorker -> PerspectiveWorker consumers |
 * | work | single perspective work items | ClaimWorker -> PerspectiveWorker |
 * | completions | {@link CompletionStrategy.PerspectiveCompletion} | PerspectiveWorker -> completion flusher |
 * | failures | {@link CompletionStrategy.PerspectiveFailure} | PerspectiveWorker -> failure flusher |
 * | leaseRenewals | work ids whose lease must be extended | long applies -> lease renewal worker |
 *
 * Every channel is a bounded queue: when a consumer falls behind, `offer` waits instead of growing memory
 * without limit, and the slowdown travels back to the claim loop (which then claims less).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Queue } from "effect"
import type * as CompletionStrategy from "./CompletionStrategy.js"

/**
 * One claimed (stream, perspective, event) work row.
 *
 * @category models
 * @since 0.1.0
 */
export interface PerspectiveWork {
  readonly workId: string
  readonly streamId: string
  readonly perspectiveName: string
  readonly eventId: string
}

/**
 * A request to extend the leases of work rows still being applied.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseRenewal {
  readonly workIds: ReadonlyArray<string>
}

/**
 * The channels.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly drain: Queue.Queue<string>
  readonly work: Queue.Queue<PerspectiveWork>
  readonly completions: Queue.Queue<CompletionStrategy.PerspectiveCompletion>
  readonly failures: Queue.Queue<CompletionStrategy.PerspectiveFailure>
  readonly leaseRenewals: Queue.Queue<LeaseRenewal>
}

/**
 * Capacity of each channel.
 *
 * @category models
 * @since 0.1.0
 */
export interface Capacities {
  readonly drain: number
  readonly work: number
  readonly completions: number
  readonly failures: number
  readonly leaseRenewals: number
}

/**
 * Default capacities: the drain channel holds three claim batches (`maxStreamsPerBatch` 300), the flush
 * channels a few flushes' worth.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultCapacities: Capacities = {
  drain: 1000,
  work: 1000,
  completions: 5000,
  failures: 1000,
  leaseRenewals: 100
}

/**
 * The channels as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class Channels extends Context.Service<Channels, Shape>()("@whizbang/core/Channels") {}

/**
 * Creates the channels; missing capacities take their default. A capacity that is not a positive integer is a
 * programming error (a defect), never silently replaced.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (capacities: Partial<Capacities> = {}): Effect.Effect<Shape> =>
  Effect.gen(function*() {
    const c = { ...defaultCapacities, ...capacities }
    for (const [name, n] of Object.entries(c)) {
      if (!(Number.isSafeInteger(n) && n > 0)) {
        return yield* Effect.die(new RangeError(`channel capacity ${name} must be a positive integer, got ${n}`))
      }
    }
    return Channels.of({
      drain: yield* Queue.bounded<string>(c.drain),
      work: yield* Queue.bounded<PerspectiveWork>(c.work),
      completions: yield* Queue.bounded<CompletionStrategy.PerspectiveCompletion>(c.completions),
      failures: yield* Queue.bounded<CompletionStrategy.PerspectiveFailure>(c.failures),
      leaseRenewals: yield* Queue.bounded<LeaseRenewal>(c.leaseRenewals)
    })
  })

/**
 * Provides fresh channels.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (capacities: Partial<Capacities> = {}): Layer.Layer<Channels> => Layer.effect(Channels, make(capacities))
