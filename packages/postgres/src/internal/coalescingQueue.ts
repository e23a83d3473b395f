/**
 * At most `maxInFlight` statements at once; requests that arrive while all are busy wait and then go together.
 *
 * A request that finds a free slot runs at once, alone, in the caller's fiber: a lone caller pays nothing. Only
 * when every slot is busy does a request wait; when a slot frees, every waiting request (up to `maxBatch` requests
 * and `maxWeight` in all, at most one per `key`) goes in one call of `many`. So the batches grow exactly as fast as
 * the callers outpace the database, with no timer and no window.
 *
 * A request whose key is already in the batch being formed, or that would take the batch past `maxWeight`, stays
 * queued for the next one, in order (the first request of a batch always goes, whatever its weight). A waiting
 * request whose caller is interrupted leaves the queue; once sent, its statement runs to its end (as any statement
 * already sent does).
 *
 * @internal
 */
import { Deferred, Effect, Exit } from "effect"

/** @internal */
export interface Options<A, B, E> {
  readonly maxInFlight: number
  readonly maxBatch: number
  /** The most `weight` one call of `many` carries (its first request goes whatever its weight). Default: no limit. */
  readonly maxWeight?: number | undefined
  /** A request's share of `maxWeight`. Default 1. */
  readonly weight?: ((request: A) => number) | undefined
  /** Requests with the same key never share a call of `many`. Default: no key (any requests may share one). */
  readonly key?: ((request: A) => string) | undefined
  /** One request, alone. */
  readonly one: (request: A) => Effect.Effect<B, E>
  /** Several requests (distinct keys) together: one exit per request, in order. */
  readonly many: (requests: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<Exit.Exit<B, E>>>
}

interface Waiting<A, B, E> {
  readonly request: A
  readonly deferred: Deferred.Deferred<B, E>
}

/** Returns `submit`: runs the request now when a slot is free, else with the next batch. @internal */
export const make = <A, B, E>(options: Options<A, B, E>): ((request: A) => Effect.Effect<B, E>) => {
  const { maxInFlight, maxBatch } = options
  const key = options.key ?? (() => undefined)
  const maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY
  const weight = options.weight ?? (() => 1)
  let inFlight = 0
  let queue: Array<Waiting<A, B, E>> = []

  const take = (): Array<Waiting<A, B, E>> => {
    const keys = new Set<string | undefined>()
    const batch: Array<Waiting<A, B, E>> = []
    const rest: Array<Waiting<A, B, E>> = []
    let carried = 0
    for (const waiting of queue) {
      const k = key(waiting.request)
      const w = weight(waiting.request)
      if (batch.length < maxBatch && (k === undefined || !keys.has(k)) && (batch.length === 0 || carried + w <= maxWeight)) {
        keys.add(k)
        carried += w
        batch.push(waiting)
      } else {
        rest.push(waiting)
      }
    }
    queue = rest
    return batch
  }

  // Every waiter is answered however the call ends: its own exit, or the call's failure or interruption.
  const run = (batch: ReadonlyArray<Waiting<A, B, E>>): Effect.Effect<void> => {
    const exits =
      batch.length === 1
        ? Effect.map(Effect.exit(options.one(batch[0]!.request)), (exit) => [exit])
        : options.many(batch.map((w) => w.request))
    return exits.pipe(
      Effect.onExit((outcome) =>
        Effect.forEach(
          batch,
          (waiting, i) =>
            Deferred.done(
              waiting.deferred,
              outcome._tag === "Failure"
                ? Exit.failCause(outcome.cause)
                : (outcome.value[i] ?? Exit.die(new Error(`a batch of ${batch.length} answered ${outcome.value.length}`)))
            ),
          { discard: true }
        )
      ),
      Effect.asVoid,
      Effect.ensuring(release)
    )
  }

  // Taking the queue and counting the slot is one synchronous step, so no request is left waiting with a slot free.
  const release: Effect.Effect<void> = Effect.suspend(() => {
    inFlight--
    const started: Array<Effect.Effect<unknown>> = []
    while (queue.length > 0 && inFlight < maxInFlight) {
      inFlight++
      started.push(Effect.forkDetach(run(take())))
    }
    return Effect.all(started, { discard: true })
  })

  return (request) =>
    Effect.suspend(() => {
      if (inFlight < maxInFlight && queue.length === 0) {
        inFlight++
        return Effect.ensuring(options.one(request), release)
      }
      return Effect.flatMap(Deferred.make<B, E>(), (deferred) => {
        const waiting = { request, deferred }
        queue.push(waiting)
        return Effect.onInterrupt(Deferred.await(deferred), () =>
          Effect.sync(() => {
            queue = queue.filter((w) => w !== waiting)
          })
        )
      })
    })
}
