/**
 * The reads of a worker cycle, the only part of it that may be interrupted where its caller runs it uninterruptibly:
 * the fetch of the claimed streams' pending events, and the load of the models the fetch did not carry.
 */
import { Effect } from "effect"
import { ownRowsName } from "../Perspective.js"
import type * as WorkCoordinator from "../WorkCoordinator.js"
import type { CycleDeps, Restore } from "./workerCycle.js"

/**
 * A cycle applies at most this many `perspectiveBatchSize`s of background work (a perspective version's history):
 * 2,000 events per cycle by default. Measured (bench scenario v, 200,000 events): 500 kept the live version's lag
 * lowest but rebuilt at a third of the speed, 5,000 rebuilt faster with a longer lag; 2,000 trades between them.
 */
const backgroundBatches = 20

/** The fetch options of every cycle (and of a claim that fetches what it claims: `WorkCoordinator.claimAndFetch`). */
export const fetchOptions = (deps: Pick<CycleDeps, "options" | "perspectives">) => ({
  limit: deps.options.perspectiveBatchSize,
  backgroundLimit: deps.options.perspectiveBatchSize * backgroundBatches,
  perspectiveNames: deps.perspectives.names,
  withModels: true
})

/** A cycle's pending events by (stream, perspective) pair, each group in fetch order. */
export type Groups = Map<string, Array<WorkCoordinator.PendingEvent>>

/** Stored models by perspective, then stream. */
export type Models = Map<string, Map<string, unknown>>

const groupKey = (e: WorkCoordinator.PendingEvent) => `${e.streamId}|${e.perspectiveName}`

/**
 * The pending events of `streamIds`: those `prefetched` (as their claim fetched them) first, then the others',
 * fetched in one call. Only the fetch itself runs `interruptible`.
 */
export const fetchPending = (
  deps: CycleDeps,
  streamIds: ReadonlyArray<string>,
  prefetched: ReadonlyMap<string, ReadonlyArray<WorkCoordinator.PendingEvent>> | undefined,
  interruptible: Restore
): Effect.Effect<ReadonlyArray<WorkCoordinator.PendingEvent>, WorkCoordinator.WorkCoordinatorError> => {
  const toFetch = prefetched === undefined ? streamIds : streamIds.filter((id) => !prefetched.has(id))
  // The span covers the events' arrival either way (`whizbang.prefetched`: streams whose claim fetched them).
  return interruptible(
    toFetch.length === 0
      ? Effect.succeed<ReadonlyArray<WorkCoordinator.PendingEvent>>([])
      : deps.coordinator.fetchPendingEvents({ instanceId: deps.instanceId, streamIds: toFetch, ...fetchOptions(deps) })
  ).pipe(
    Effect.map((fetched) =>
      prefetched === undefined || toFetch.length === streamIds.length
        ? fetched
        : [...streamIds.flatMap((id) => prefetched.get(id) ?? []), ...fetched]
    ),
    Effect.withSpan(
      "whizbang.fetch",
      { attributes: { "whizbang.streams": streamIds.length, "whizbang.prefetched": streamIds.length - toFetch.length } },
      { captureStackTrace: false }
    )
  )
}

/** Groups `pending` by (stream, perspective) pair. */
export const groupByPair = (pending: ReadonlyArray<WorkCoordinator.PendingEvent>): Groups => {
  const groups: Groups = new Map()
  for (const row of pending) {
    const key = groupKey(row)
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [row])
    else group.push(row)
  }
  return groups
}

/** The stored models of the groups' pairs. Only the store's calls run `interruptible`. */
export const loadModels = Effect.fnUntraced(function* (deps: CycleDeps, groups: Groups, interruptible: Restore) {
  // Models: the fetch carries them when the coordinator loads them with it (one round trip); the pairs it did not
  // load are read from the store, one call per perspective.
  const models: Models = new Map()
  const wanted = new Map<string, Set<string>>()
  for (const [, rows] of groups) {
    const { perspectiveName, storedModel, streamId } = rows[0]!
    if (storedModel !== undefined) {
      if (storedModel !== null) {
        const byStream = models.get(perspectiveName) ?? new Map<string, unknown>()
        models.set(perspectiveName, byStream.set(streamId, storedModel.data))
      }
      continue
    }
    const ids = wanted.get(perspectiveName) ?? new Set<string>()
    wanted.set(perspectiveName, ids.add(streamId))
  }
  // Applies are synchronous folds, so what runs concurrently per perspective is the model load (one call each).
  if (wanted.size > 0) {
    yield* interruptible(
      Effect.forEach(
        wanted,
        ([name, ids]) =>
          // This version's own rows (in Postgres not the view of the live version).
          Effect.map(deps.store.getMany(ownRowsName(name), [...ids]), (rows) => {
            const byStream = models.get(name) ?? new Map<string, unknown>()
            for (const [id, row] of rows) byStream.set(id, row.data)
            models.set(name, byStream)
          }),
        { concurrency: deps.options.maxConcurrentPerspectives, discard: true }
      ).pipe(Effect.withSpan("whizbang.load", { attributes: { "whizbang.perspectives": wanted.size } }, { captureStackTrace: false }))
    )
  }
  return models
})
