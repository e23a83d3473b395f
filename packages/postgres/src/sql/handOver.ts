/**
 * Statements of a version's hand-over (cutover or rollback, `internal/handOver.ts`): who owns it and until when
 * (migration 0016), the switch and giving up. Every value is a bound parameter.
 */

/**
 * Starts a hand-over: the version becomes `ready`, owned by $2 until $3 seconds from now, remembering the state it
 * leaves (to go back to if the hand-over gives up) and the grace period of the version it will replace.
 * Params: $1 key, $2 owner, $3 lease seconds, $4 grace seconds.
 */
export const begin = `
UPDATE wh_perspective_versions
SET state = 'ready', state_changed_at = now(), retire_after = NULL,
    handover_from = state, handover_owner = $2::uuid,
    handover_until = now() + make_interval(secs => $3::float8), handover_grace_seconds = $4::float8
WHERE perspective_name = $1::text`

/**
 * Takes over a `ready` version's hand-over whose owner's lease ran out (or that has none: left by a release before
 * owners existed). Run under the base's row lock: of two instances trying at once, one gets a row back.
 * Params: $1 key, $2 owner, $3 lease seconds, $4 grace seconds (when the hand-over recorded none).
 */
export const takeOver = `
UPDATE wh_perspective_versions
SET handover_owner = $2::uuid, handover_until = now() + make_interval(secs => $3::float8),
    handover_grace_seconds = coalesce(handover_grace_seconds, $4::float8)
WHERE perspective_name = $1::text AND state = 'ready' AND (handover_until IS NULL OR handover_until <= now())
RETURNING handover_from`

/** The owner's keepalive. Params: $1 key, $2 owner, $3 lease seconds. No row: it is no longer the owner. */
export const renew = `
UPDATE wh_perspective_versions SET handover_until = now() + make_interval(secs => $3::float8)
WHERE perspective_name = $1::text AND state = 'ready' AND handover_owner = $2::uuid
RETURNING 1 AS renewed`

/** A stopping owner lets the hand-over go at once: the next build round of an instance that runs it resumes it. */
export const release = `
UPDATE wh_perspective_versions SET handover_until = now()
WHERE perspective_name = $1::text AND state = 'ready' AND handover_owner = $2::uuid`

/** Params: $1 key. The grace period the hand-over recorded for the version it replaces. */
export const graceOf = `SELECT handover_grace_seconds AS grace FROM wh_perspective_versions WHERE perspective_name = $1::text`

/**
 * Gives a hand-over up: the version returns to the state it had (`retiring` again for the grace period, after a
 * rollback), no owner. Only the owner $2 may, unless $2 is null (the switch refusing a version with dead letters,
 * under the base's lock). Params: $1 key, $2 owner or null, $3 grace seconds (when the hand-over recorded none).
 */
export const giveUp = `
UPDATE wh_perspective_versions
SET state = coalesce(handover_from, 'building'), state_changed_at = now(),
    -- now() + CASE (null unless retiring), not CASE .. now(): Citus refuses now() inside CASE in a modification.
    retire_after = now() + CASE WHEN handover_from = 'retiring'
                                THEN make_interval(secs => coalesce(handover_grace_seconds, $3::float8)) END,
    handover_owner = NULL, handover_until = NULL, handover_from = NULL, handover_grace_seconds = NULL
WHERE perspective_name = $1::text AND state = 'ready' AND ($2::uuid IS NULL OR handover_owner = $2::uuid)`

/** The switch's half for the version handed over. Params: $1 key. */
export const goLive = `
UPDATE wh_perspective_versions
SET state = 'live', state_changed_at = now(), retire_after = NULL,
    handover_owner = NULL, handover_until = NULL, handover_from = NULL, handover_grace_seconds = NULL
WHERE perspective_name = $1::text`
