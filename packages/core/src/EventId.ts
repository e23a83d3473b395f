/**
 * Event ids are UUIDv7: time-ordered, so a perspective applies a stream's events in event-id order, and monotonic
 * within a process (two ids made in the same millisecond still sort in the order they were made).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { v7, validate } from "uuid"

/**
 * A new UUIDv7, greater than every id this process made before.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<string> = Effect.sync(() => v7())

/**
 * Makes a UUIDv7 outside Effect (same generator as {@link make}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const unsafeMake = (): string => v7()

/**
 * True for a canonical UUID string of any version (stream ids may be any UUID; event ids this library makes are v7).
 *
 * @category guards
 * @since 0.1.0
 */
export const isUuid = (value: unknown): value is string => typeof value === "string" && validate(value)
