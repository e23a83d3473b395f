/**
 * `@whizbang/core/internal` — modules Whizbang's own packages share (`@whizbang/postgres`, `@whizbang/stream-locker`,
 * `@whizbang/cli`, `@whizbang/dashboard`, `@whizbang/testing`, `whizbang`), published so those packages need not
 * copy them.
 *
 * **Not for applications, no semver guarantees**: a module here may change or go in any release, a patch
 * included, and releases of Whizbang's packages are only tested with the `internal` of the same release. An
 * application imports from `whizbang` or the package's main entry (`@whizbang/core`); one that needs something from
 * here has found a gap in the public API — please open an issue instead. The folder behind this entry stays closed
 * (`@whizbang/core/internal/*` does not resolve).
 *
 * @since 0.6.0
 */

/**
 * The three rules every duration option is decoded by (`positive`, `nonNegative`, `wholeSeconds`), for the
 * packages' option decoders.
 *
 * @since 0.6.0
 */
export * as DurationOption from "./internal/durationOption.js"

/**
 * One warning per outage of a background loop, not one per attempt (the worker's loops, heartbeats, listeners,
 * the watchdog, stream-lock renewals, the tenant fleet).
 *
 * @since 0.6.0
 */
export * as OutageLog from "./internal/outageLog.js"

/**
 * A perspective version's fingerprint, stored by `@whizbang/postgres` when it registers the version.
 *
 * @since 0.6.0
 */
export * as PerspectiveFingerprint from "./internal/perspectiveFingerprint.js"
