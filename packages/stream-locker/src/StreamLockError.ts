/**
 * Typed errors of stream locking.
 *
 * - {@link StreamLockError}: one lock operation was rejected (bad id, name or reason) or its storage failed;
 *   `reason._tag` says which.
 * - {@link InvalidStreamLockOptions}: `lockTimeout` / `keepAliveInterval` break a rule; raised when the locker
 *   layer is built, so a bad configuration stops start-up.
 * - {@link StreamLockLost}: `withStreamLock`'s keepalive found the lock no longer held; the guarded effect was
 *   interrupted.
 *
 * Not acquiring a lock is not an error: `tryAcquireLock` returns `false` and `withStreamLock` returns
 * `Option.none()`.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * The stream id is not a UUID.
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidStreamId extends Data.TaggedClass("InvalidStreamId")<{ readonly streamId: string }> {}

/**
 * The instance id is not a UUID.
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidInstanceId extends Data.TaggedClass("InvalidInstanceId")<{ readonly instanceId: string }> {}

/**
 * The perspective name does not match `/^[a-z][a-z0-9_]{0,47}$/` (see `Perspective.isValidName`).
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidPerspectiveName extends Data.TaggedClass("InvalidPerspectiveName")<{ readonly perspectiveName: string }> {}

/**
 * The lock reason is not one of `"rewind" | "bootstrap" | "purge"`.
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidLockReason extends Data.TaggedClass("InvalidLockReason")<{ readonly value: string }> {}

/**
 * The lock storage failed (for Postgres: `cause` is the `PostgresError`). The lock state is unknown.
 *
 * @category models
 * @since 0.1.0
 */
export class StorageFailure extends Data.TaggedClass("StorageFailure")<{ readonly cause: unknown }> {}

/**
 * Why a lock operation failed.
 *
 * @category models
 * @since 0.1.0
 */
export type Reason = InvalidStreamId | InvalidInstanceId | InvalidPerspectiveName | InvalidLockReason | StorageFailure

/**
 * The lock operations.
 *
 * @category models
 * @since 0.1.0
 */
export type Operation = "tryAcquireLock" | "renewLock" | "releaseLock"

const describe = (reason: Reason): string => {
  switch (reason._tag) {
    case "InvalidStreamId":
      return `stream id ${JSON.stringify(reason.streamId.slice(0, 100))} is not a UUID`
    case "InvalidInstanceId":
      return `instance id ${JSON.stringify(reason.instanceId.slice(0, 100))} is not a UUID`
    case "InvalidPerspectiveName":
      return `perspective name ${JSON.stringify(reason.perspectiveName.slice(0, 100))} must match /^[a-z][a-z0-9_]{0,47}$/`
    case "InvalidLockReason":
      return `lock reason ${JSON.stringify(reason.value.slice(0, 100))} must be "rewind", "bootstrap" or "purge"`
    case "StorageFailure":
      return `storage failed: ${reason.cause instanceof Error ? reason.cause.message : String(reason.cause)}`
  }
}

/**
 * A lock operation failed; nothing was changed unless `reason` is a `StorageFailure` (then the state is unknown).
 *
 * @category errors
 * @since 0.1.0
 */
export class StreamLockError extends Data.TaggedError("StreamLockError")<{
  readonly operation: Operation
  readonly reason: Reason
}> {
  override get message(): string {
    return `${this.operation}: ${describe(this.reason)}`
  }
}

/**
 * A stream-lock option breaks a rule: `option` names it and `rule` states the rule.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidStreamLockOptions extends Data.TaggedError("InvalidStreamLockOptions")<{
  readonly option: "lockTimeout" | "keepAliveInterval"
  readonly rule: string
  readonly value: string
}> {
  override get message(): string {
    return `${this.option} ${this.rule}, got ${this.value}`
  }
}

/**
 * `withStreamLock`'s keepalive could not renew the lock because this instance no longer holds it (it expired and
 * another instance took it, or it was released). The guarded effect was interrupted.
 *
 * @category errors
 * @since 0.1.0
 */
export class StreamLockLost extends Data.TaggedError("StreamLockLost")<{
  readonly streamId: string
  readonly perspectiveName: string
  readonly instanceId: string
}> {
  override get message(): string {
    return `lost the stream lock on (${this.streamId}, ${this.perspectiveName}) held by instance ${this.instanceId}`
  }
}

/**
 * A rewind, bootstrap or purge of one (stream, perspective) failed: an event did not decode or apply, the stream
 * lock was lost before the commit, or the database failed. Nothing was committed; the operation is retried.
 *
 * @category errors
 * @since 0.1.0
 */
export class RebuildFailed extends Data.TaggedError("RebuildFailed")<{
  readonly operation: "rewind" | "bootstrap" | "purge"
  readonly streamId: string
  readonly perspectiveName: string
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `${this.operation} of (${this.streamId}, ${this.perspectiveName}) failed: ${this.reason}`
  }
}

/**
 * A rewinder, bootstrap or purge option breaks a rule: `option` names it.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidRebuildOptions extends Data.TaggedError("InvalidRebuildOptions")<{
  readonly option: string
  readonly rule: string
  readonly value: string
}> {
  override get message(): string {
    return `${this.option} ${this.rule}, got ${this.value}`
  }
}
