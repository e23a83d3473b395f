/**
 * Input checks shared by every locker layer: a layer supplies the raw storage operations and gets back a
 * service that rejects bad ids, names and reasons with a typed error before touching storage.
 */
import { EventId, Perspective } from "@whizbang/core"
import { Effect } from "effect"
import * as StreamLockError from "../StreamLockError.js"

export const reasons = ["rewind", "bootstrap", "purge"] as const

export type LockReason = (typeof reasons)[number]

export interface Storage<E> {
  readonly acquire: (streamId: string, perspectiveName: string, instanceId: string, reason: LockReason) => Effect.Effect<boolean, E>
  readonly renew: (streamId: string, perspectiveName: string, instanceId: string) => Effect.Effect<boolean, E>
  readonly release: (streamId: string, perspectiveName: string, instanceId: string) => Effect.Effect<void, E>
}

type Operation = StreamLockError.Operation

const fail = (operation: Operation, reason: StreamLockError.Reason) =>
  Effect.fail(new StreamLockError.StreamLockError({ operation, reason }))

const check = (operation: Operation, streamId: string, perspectiveName: string, instanceId: string) =>
  !EventId.isUuid(streamId)
    ? fail(operation, new StreamLockError.InvalidStreamId({ streamId: String(streamId) }))
    : typeof perspectiveName !== "string" || !Perspective.isValidName(perspectiveName)
      ? fail(operation, new StreamLockError.InvalidPerspectiveName({ perspectiveName: String(perspectiveName) }))
      : !EventId.isUuid(instanceId)
        ? fail(operation, new StreamLockError.InvalidInstanceId({ instanceId: String(instanceId) }))
        : Effect.void

const isReason = (value: unknown): value is LockReason => (reasons as ReadonlyArray<unknown>).includes(value)

// Postgres reports uuids in lower case; normalising here makes "held by the same instance" case-insensitive in
// both layers, as the uuid column already is.
const lower = (id: string) => id.toLowerCase()

export const validated = <E>(storage: Storage<E>) => {
  const guard = <A>(
    operation: Operation,
    streamId: string,
    perspectiveName: string,
    instanceId: string,
    run: (streamId: string, instanceId: string) => Effect.Effect<A, E>
  ): Effect.Effect<A, StreamLockError.StreamLockError> =>
    Effect.andThen(
      check(operation, streamId, perspectiveName, instanceId),
      Effect.mapError(
        Effect.suspend(() => run(lower(streamId), lower(instanceId))),
        (cause) => new StreamLockError.StreamLockError({ operation, reason: new StreamLockError.StorageFailure({ cause }) })
      )
    )
  return {
    tryAcquireLock: (streamId: string, perspectiveName: string, instanceId: string, reason: LockReason) =>
      isReason(reason)
        ? guard("tryAcquireLock", streamId, perspectiveName, instanceId, (s, i) => storage.acquire(s, perspectiveName, i, reason))
        : fail("tryAcquireLock", new StreamLockError.InvalidLockReason({ value: String(reason) })),
    renewLock: (streamId: string, perspectiveName: string, instanceId: string) =>
      guard("renewLock", streamId, perspectiveName, instanceId, (s, i) => storage.renew(s, perspectiveName, i)),
    releaseLock: (streamId: string, perspectiveName: string, instanceId: string) =>
      guard("releaseLock", streamId, perspectiveName, instanceId, (s, i) => storage.release(s, perspectiveName, i))
  }
}
