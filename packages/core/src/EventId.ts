/**
 * Event ids are UUIDv7: time-ordered, so a perspective applies a stream's events in event-id order, and monotonic
 * within a process (two ids made in the same millisecond still sort in the order they were made).
 *
 * The event stores take an append's ids from {@link Generator} and then, under the stream's lock, raise any id that is
 * not above the stream's highest id to {@link successor} of it, so within a stream event-id order is version order.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect } from "effect"
import { validate } from "uuid"
import * as MonotonicV7 from "./internal/monotonicV7.js"

/**
 * A new UUIDv7, greater than every id this process made before.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<string> = Effect.sync(MonotonicV7.next)

/**
 * Makes a UUIDv7 outside Effect (same generator as {@link make}).
 *
 * @category constructors
 * @since 0.1.0
 */
export const unsafeMake = (): string => MonotonicV7.next()

/**
 * A UUIDv7 stamped with the given Unix time in milliseconds (random low bits, no monotonic state).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeAt = (millis: number): string => MonotonicV7.at(millis)

/**
 * A generator that stamps ids with Effect's `Clock`, so a test running under `TestClock` controls their time.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromClock: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, makeAt)

/**
 * Where the event stores take new event ids from (each must be a UUIDv7; anything else is a defect). Default:
 * {@link make} (wall clock, monotonic in the process).
 * Provide another, e.g. {@link fromClock}, with `Effect.provideService(EventId.Generator, ...)` around `append`.
 *
 * @category services
 * @since 0.1.0
 */
export const Generator: Context.Reference<Effect.Effect<string>> = Context.Reference<Effect.Effect<string>>(
  "@whizbang/core/EventId/Generator",
  { defaultValue: () => make }
)

/**
 * True for a canonical UUID string of any version (stream ids may be any UUID; event ids this library makes are v7).
 *
 * @category guards
 * @since 0.1.0
 */
export const isUuid = (value: unknown): value is string => typeof value === "string" && validate(value)

const v7Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

/**
 * True for a canonical UUIDv7 (version 7, RFC 9562 variant; either case): the only ids a caller may supply to `append`.
 *
 * @category guards
 * @since 0.1.0
 */
export const isV7 = (value: unknown): value is string => typeof value === "string" && v7Pattern.test(value)

const randomBits = (1n << 74n) - 1n
const format = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`

/**
 * The smallest UUIDv7 above `id` when `id` is a UUIDv7: its 74 random bits plus one, carrying into the 48-bit time,
 * version and variant bits kept. For an id of another version, the first UUIDv7 of the next millisecond above it.
 * The same rule as the Postgres store's `wh_next_event_id`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const successor = (id: string): string => {
  const hex = id.replaceAll("-", "").toLowerCase()
  let millis = BigInt(`0x${hex.slice(0, 12)}`)
  const randA = BigInt(`0x${hex.slice(13, 16)}`)
  const randB = BigInt(`0x${hex.slice(16, 32)}`) & ((1n << 62n) - 1n)
  let random = ((randA << 62n) | randB) + 1n
  if (!isV7(id)) random = 1n << 74n
  if (random > randomBits) {
    random = 0n
    millis += 1n
  }
  const a = (random >> 62n).toString(16).padStart(3, "0")
  const b = ((random & ((1n << 62n) - 1n)) | (1n << 63n)).toString(16).padStart(16, "0")
  return format(`${millis.toString(16).padStart(12, "0")}7${a}${b}`)
}
