// The actions token: generated when none is given, compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/** 32 random bytes, base64url (43 characters). */
export const generate = (): string => randomBytes(32).toString("base64url")

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/**
 * Whether `given` is the token. Both sides are hashed first, so the comparison takes the same time whatever the
 * length or content of `given` (`timingSafeEqual` alone needs equal lengths, and an early length check would leak it).
 */
export const matches = (expected: string, given: string | undefined): boolean =>
  given !== undefined && timingSafeEqual(digest(expected), digest(given))
