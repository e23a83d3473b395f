/**
 * Stream locks: the `stream_lock_*` columns of `wh_perspective_cursors`. Acquire, renew and release are each one
 * atomic `UPDATE ... WHERE ... RETURNING` (`@whizbang/stream-locker`'s Postgres locker); the fence is the
 * commit-time check of rewinds, bootstraps and purges; `forceRelease` is the operator's (`whizbang locks release`).
 */
import { Schema } from "effect"
import { PerspectiveCursors as c } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/**
 * One (stream, perspective) and the instance acting on its lock.
 *
 * @category models
 * @since 0.5.0
 */
export interface LockKey {
  readonly streamId: string
  readonly perspectiveName: string
  readonly instanceId: string
}

const Expiry = Schema.Struct({ expiresAt: Schema.Date })

const expiryColumns = { expiresAt: c.streamLockExpiry } as const

/**
 * Takes the lock of one cursor when it is unlocked, expired or already ours, in one statement.
 * Returns the new expiry when acquired, none otherwise (held by another, or no cursor row: nothing is inserted).
 *
 * Under READ COMMITTED a concurrent acquirer blocks on the row lock and then re-checks the WHERE clause
 * against the winner's committed values, so two instances can never both get a row back.
 * `statement_timestamp()` is the database clock (instances with skewed clocks agree), and unlike `now()` it
 * is not frozen at the start of an enclosing transaction.
 *
 * @category operations
 * @since 0.5.0
 */
export const tryAcquire = Operation.findOne({
  name: "streamLocks.tryAcquire",
  Row: Expiry,
  columns: expiryColumns,
  params: (r: LockKey & { readonly reason: string; readonly lockTimeoutMillis: number }) => [
    r.streamId,
    r.perspectiveName,
    r.instanceId,
    r.reason,
    r.lockTimeoutMillis
  ],
  sql: `
UPDATE ${c.table}
SET ${c.streamLockInstanceId} = $3::uuid,
    ${c.streamLockExpiry} = statement_timestamp() + $5::double precision * interval '1 millisecond',
    ${c.streamLockReason} = $4::text
WHERE ${c.streamId} = $1::uuid
  AND ${c.perspectiveName} = $2::text
  AND (${c.streamLockInstanceId} IS NULL
    OR ${c.streamLockInstanceId} = $3::uuid
    OR ${c.streamLockExpiry} IS NULL
    OR ${c.streamLockExpiry} <= statement_timestamp())
RETURNING ${c.streamLockExpiry}`
})

/**
 * Restarts the expiry of a lock this instance holds, in one statement. Returns the new expiry when renewed, none
 * when another instance (or nobody) holds the lock.
 *
 * An expired lock still naming us is renewed: nobody took it in between, so nothing else ran under it.
 *
 * @category operations
 * @since 0.5.0
 */
export const renew = Operation.findOne({
  name: "streamLocks.renew",
  Row: Expiry,
  columns: expiryColumns,
  params: (r: LockKey & { readonly lockTimeoutMillis: number }) => [r.streamId, r.perspectiveName, r.instanceId, r.lockTimeoutMillis],
  sql: `
UPDATE ${c.table}
SET ${c.streamLockExpiry} = statement_timestamp() + $4::double precision * interval '1 millisecond'
WHERE ${c.streamId} = $1::uuid
  AND ${c.perspectiveName} = $2::text
  AND ${c.streamLockInstanceId} = $3::uuid
RETURNING ${c.streamLockExpiry}`
})

/**
 * Clears a lock this instance holds, in one statement; a lock held by another instance, or none, is left as is.
 *
 * @category operations
 * @since 0.5.0
 */
export const release = Operation.void({
  name: "streamLocks.release",
  params: (r: LockKey) => [r.streamId, r.perspectiveName, r.instanceId],
  sql: `
UPDATE ${c.table}
SET ${c.streamLockInstanceId} = NULL,
    ${c.streamLockExpiry} = NULL,
    ${c.streamLockReason} = NULL
WHERE ${c.streamId} = $1::uuid
  AND ${c.perspectiveName} = $2::text
  AND ${c.streamLockInstanceId} = $3::uuid
RETURNING ${c.streamId}`
})

/**
 * The commit-time fence: locks the cursor row, and returns its position only while this instance still holds the
 * stream lock (a lock that expired without being taken still names us, so nothing else ran). None: the lock is
 * lost, commit nothing.
 *
 * @category operations
 * @since 0.5.0
 */
export const fence = Operation.findOne({
  name: "streamLocks.fence",
  Row: Schema.Struct({ lastEventId: Schema.NullOr(Schema.String) }),
  columns: { lastEventId: c.lastEventId },
  params: (r: LockKey) => [r.streamId, r.perspectiveName, r.instanceId],
  sql: `
SELECT ${c.lastEventId} FROM ${c.table}
WHERE ${c.streamId} = $1::uuid AND ${c.perspectiveName} = $2::text AND ${c.streamLockInstanceId} = $3::uuid
FOR UPDATE`
})

/**
 * Force-releases stream locks matching the filters (null = any), whoever holds them. Returns the released locks.
 *
 * @category operations
 * @since 0.5.0
 */
export const forceRelease = Operation.findAll({
  name: "streamLocks.forceRelease",
  Row: Schema.Struct({
    streamId: Schema.String,
    perspectiveName: Schema.String,
    heldBy: Schema.String,
    heldFor: Schema.NullOr(Schema.String)
  }),
  columns: { streamId: c.streamId, perspectiveName: c.perspectiveName, heldBy: "held_by", heldFor: "held_for" },
  params: (r: { readonly streamId: string | null; readonly perspectiveName: string | null; readonly instanceId: string | null }) => [
    r.streamId,
    r.perspectiveName,
    r.instanceId
  ],
  sql: `
UPDATE ${c.table} c
SET ${c.streamLockInstanceId} = NULL, ${c.streamLockExpiry} = NULL, ${c.streamLockReason} = NULL
FROM (
  SELECT ${c.streamId}, ${c.perspectiveName}, ${c.streamLockInstanceId} AS held_by, ${c.streamLockReason} AS held_for
  FROM ${c.table}
  WHERE ${c.streamLockInstanceId} IS NOT NULL
    AND ($1::uuid IS NULL OR ${c.streamId} = $1::uuid)
    AND ($2::text IS NULL OR ${c.perspectiveName} = $2::text)
    AND ($3::uuid IS NULL OR ${c.streamLockInstanceId} = $3::uuid)
  FOR UPDATE
) old
WHERE c.${c.streamId} = old.${c.streamId} AND c.${c.perspectiveName} = old.${c.perspectiveName}
RETURNING c.${c.streamId}, c.${c.perspectiveName}, old.held_by, old.held_for`
})
