/**
 * A timestamptz expression as microseconds since the epoch, as text: exact (a float loses the last digits) and the
 * same whatever a session's `TimeZone` or `DateStyle`, so two sessions' readings of one instant compare equal.
 *
 * @internal
 */
export const epochMicros = (expression: string): string => `(extract(epoch FROM ${expression}) * 1000000)::bigint::text`
