/**
 * `@whizbang/postgres/internal` — modules Whizbang's own packages share (`@whizbang/stream-locker`,
 * `@whizbang/sync`, `@whizbang/cli`, `whizbang`, the bench), published so those packages hold no SQL against the
 * `wh_` tables of their own.
 *
 * **Not for applications, no semver guarantees**: a module here may change or go in any release, a patch
 * included, and releases of Whizbang's packages are only tested with the `internal` of the same release. An
 * application or an operations tool imports from `whizbang`, `@whizbang/postgres` or `@whizbang/cli` (whose
 * `DeadLetters`, `FailedCursors`, `Locks`, `Rewind`, `Versions`, `Work` and `Tenants` are these statements as
 * operations); one that needs something from here has found a gap in the public API — please open an issue
 * instead. The folder behind this entry stays closed (`@whizbang/postgres/internal/*` does not resolve).
 *
 * @since 0.6.0
 */

/**
 * Where a perspective version's rows live: `wh_per_<base>__v<N>` tables and the `wh_per_<base>` view.
 *
 * @since 0.6.0
 */
export * as PerspectiveTable from "./internal/perspectiveTable.js"

/**
 * The statements Whizbang's other packages run against the `wh_` tables, as typed operations with decoded rows.
 *
 * @since 0.6.0
 */
export * as PgOperations from "./internal/pgOperations.js"
