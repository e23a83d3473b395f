/**
 * The process's UUIDv7 generator: ids that sort in the order they were made, with their random bits sliced from
 * a pool that is refilled 4 KiB at a time. `uuid`'s own `v7()` asks `crypto.getRandomValues` for 16 bytes per id:
 * 4.5 µs an id on the bench machine, against 0.2 µs for a slice of the pool, and every append proposes an id per
 * event.
 *
 * The layout is `uuid`'s `v7`, given the time and the counter: 48 bits of Unix milliseconds, then a 31-bit counter
 * spread over rand_a and the top of rand_b (RFC 9562, section 6.2, method 1), then random bits. A millisecond later
 * than the last one seeds the counter from the random bytes; the same millisecond, or a clock that went back, adds
 * one to it, and when it wraps the timestamp moves one millisecond on. So each id is above the one before.
 *
 * @internal
 */
import { v7 } from "uuid"

const pool = new Uint8Array(4096)
let offset = pool.length

const random16 = (): Uint8Array => {
  if (offset === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    offset = 0
  }
  const bytes = pool.subarray(offset, offset + 16)
  offset += 16
  return bytes
}

let lastMillis = Number.NEGATIVE_INFINITY
let counter = 0

/** The next id of this process: above every id it made before. @internal */
export const next = (): string => {
  const random = random16()
  const now = Date.now()
  if (now > lastMillis) {
    lastMillis = now
    counter = (((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!) >>> 0
  } else {
    counter = (counter + 1) & 0x7fffffff
    if (counter === 0) lastMillis += 1
  }
  return v7({ random, msecs: lastMillis, seq: counter })
}

/** A UUIDv7 at the given time: random low bits, no counter. @internal */
export const at = (millis: number): string => v7({ random: random16(), msecs: millis })
