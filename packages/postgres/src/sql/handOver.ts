/**
 * Statements of a version's hand-over (cutover or rollback, `internal/handOver.ts`): who owns it and until when
 * (migration 0016), the switch and giving up. Every value is a bound parameter.
 */
import { Schema } from "effect"
import { PerspectiveVersions as v } from "../internal/columns.js"
import * as Operation from "../internal/operation.js"

/** A hand-over: the version's key, its owner (a random id per hand-over) and the lease and grace settings. */
interface HandOver {
  readonly key: string
  readonly owner: string
  readonly leaseSeconds: number
  readonly graceSeconds: number
}

/**
 * Starts a hand-over: the version becomes `ready`, owned by $2 until $3 seconds from now, remembering the state it
 * leaves (to go back to if the hand-over gives up) and the grace period of the version it will replace.
 * Params: $1 key, $2 owner, $3 lease seconds, $4 grace seconds.
 *
 * @category operations
 * @since 0.5.0
 */
export const begin = Operation.void({
  name: "handOver.begin",
  params: (r: HandOver) => [r.key, r.owner, r.leaseSeconds, r.graceSeconds],
  sql: `
UPDATE ${v.table}
SET ${v.state} = 'ready', ${v.stateChangedAt} = now(), ${v.retireAfter} = NULL,
    ${v.handoverFrom} = ${v.state}, ${v.handoverOwner} = $2::uuid,
    ${v.handoverUntil} = now() + make_interval(secs => $3::float8), ${v.handoverGraceSeconds} = $4::float8
WHERE ${v.perspectiveName} = $1::text`
})

/**
 * Takes over a `ready` version's hand-over whose owner's lease ran out (or that has none: left by a release before
 * owners existed). Run under the base's row lock: of two instances trying at once, one gets a row back.
 * Params: $1 key, $2 owner, $3 lease seconds, $4 grace seconds (when the hand-over recorded none). Returns 1 when
 * taken over, else 0.
 *
 * @category operations
 * @since 0.5.0
 */
export const takeOver = Operation.count({
  name: "handOver.takeOver",
  params: (r: HandOver) => [r.key, r.owner, r.leaseSeconds, r.graceSeconds],
  sql: `
UPDATE ${v.table}
SET ${v.handoverOwner} = $2::uuid, ${v.handoverUntil} = now() + make_interval(secs => $3::float8),
    ${v.handoverGraceSeconds} = coalesce(${v.handoverGraceSeconds}, $4::float8)
WHERE ${v.perspectiveName} = $1::text AND ${v.state} = 'ready' AND (${v.handoverUntil} IS NULL OR ${v.handoverUntil} <= now())
RETURNING ${v.handoverFrom}`
})

/**
 * The owner's keepalive. Params: $1 key, $2 owner, $3 lease seconds. 0: it is no longer the owner.
 *
 * @category operations
 * @since 0.5.0
 */
export const renew = Operation.count({
  name: "handOver.renew",
  params: (r: Pick<HandOver, "key" | "owner" | "leaseSeconds">) => [r.key, r.owner, r.leaseSeconds],
  sql: `
UPDATE ${v.table} SET ${v.handoverUntil} = now() + make_interval(secs => $3::float8)
WHERE ${v.perspectiveName} = $1::text AND ${v.state} = 'ready' AND ${v.handoverOwner} = $2::uuid
RETURNING 1 AS renewed`
})

/**
 * A stopping owner lets the hand-over go at once: the next build round of an instance that runs it resumes it.
 *
 * @category operations
 * @since 0.5.0
 */
export const release = Operation.void({
  name: "handOver.release",
  params: (r: Pick<HandOver, "key" | "owner">) => [r.key, r.owner],
  sql: `
UPDATE ${v.table} SET ${v.handoverUntil} = now()
WHERE ${v.perspectiveName} = $1::text AND ${v.state} = 'ready' AND ${v.handoverOwner} = $2::uuid`
})

/**
 * The grace period the hand-over recorded for the version it replaces (none: the version is not registered).
 *
 * @category operations
 * @since 0.5.0
 */
export const graceOf = Operation.findOne({
  name: "handOver.graceOf",
  Row: Schema.Struct({ grace: Schema.NullOr(Schema.Number) }),
  params: (r: { readonly key: string }) => [r.key],
  sql: `SELECT ${v.handoverGraceSeconds} AS grace FROM ${v.table} WHERE ${v.perspectiveName} = $1::text`
})

/**
 * Gives a hand-over up: the version returns to the state it had (`retiring` again for the grace period, after a
 * rollback), no owner. Only the owner $2 may, unless $2 is null (the switch refusing a version with dead letters,
 * under the base's lock). Params: $1 key, $2 owner or null, $3 grace seconds (when the hand-over recorded none).
 *
 * @category operations
 * @since 0.5.0
 */
export const giveUp = Operation.void({
  name: "handOver.giveUp",
  params: (r: { readonly key: string; readonly owner: string | null; readonly graceSeconds: number }) => [r.key, r.owner, r.graceSeconds],
  sql: `
UPDATE ${v.table}
SET ${v.state} = coalesce(${v.handoverFrom}, 'building'), ${v.stateChangedAt} = now(),
    -- now() + CASE (null unless retiring), not CASE .. now(): Citus refuses now() inside CASE in a modification.
    ${v.retireAfter} = now() + CASE WHEN ${v.handoverFrom} = 'retiring'
                                THEN make_interval(secs => coalesce(${v.handoverGraceSeconds}, $3::float8)) END,
    ${v.handoverOwner} = NULL, ${v.handoverUntil} = NULL, ${v.handoverFrom} = NULL, ${v.handoverGraceSeconds} = NULL
WHERE ${v.perspectiveName} = $1::text AND ${v.state} = 'ready' AND ($2::uuid IS NULL OR ${v.handoverOwner} = $2::uuid)`
})

/**
 * The switch's half for the version handed over. Params: $1 key.
 *
 * @category operations
 * @since 0.5.0
 */
export const goLive = Operation.void({
  name: "handOver.goLive",
  params: (r: { readonly key: string }) => [r.key],
  sql: `
UPDATE ${v.table}
SET ${v.state} = 'live', ${v.stateChangedAt} = now(), ${v.retireAfter} = NULL,
    ${v.handoverOwner} = NULL, ${v.handoverUntil} = NULL, ${v.handoverFrom} = NULL, ${v.handoverGraceSeconds} = NULL
WHERE ${v.perspectiveName} = $1::text`
})
