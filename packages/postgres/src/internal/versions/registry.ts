/**
 * The registry of versions: what the database knows of each declared version (`wh_perspective_versions`), how a new
 * one is registered with its history planned, and how one is retired by hand. Apart because registration is the one
 * place that holds appends to plan history without a gap (see `PgPerspectiveVersions`' module notes), and retiring
 * by hand is its inverse under the same lock.
 *
 * @internal
 */
import { Perspective } from "@whizbang/core"
import { Duration, Effect, Layer } from "effect"
import { PgClient } from "../../PgClient.js"
import * as PerspectiveTable from "../perspectiveTable.js"
import type { Declared, Retired, RetireOptions } from "../../PgPerspectiveVersions.js"
import type { PostgresConfigError, PostgresError } from "../../PostgresError.js"
import { SchemaReady } from "../../SchemaReady.js"
import * as Sql from "../../sql/versions.js"
import { type UnknownPerspectiveVersion, VersionInUse, type VersionTableConflict } from "../../VersionError.js"
import * as DurationOptions from "../durationOption.js"
import { ddlLock, ensureBase, isLaidOut, type Layout, readLayout } from "../versionTables.js"
import { unknown } from "./baseVersions.js"

/** Whether registering `d` would change nothing: registered, not retired, same event types and fingerprint. */
const asDeclared = (layout: Layout, d: Declared): boolean => {
  const row = layout.versions.find((v) => v.name === d.name)
  if (row === undefined || row.state === "retired") return false
  if ([...new Set(row.types)].sort().join("\u0000") !== [...new Set(d.eventTypes)].sort().join("\u0000")) return false
  return d.fingerprint === undefined || row.fingerprint === d.fingerprint
}

/** See `PgPerspectiveVersions.register`. */
export const register = (
  declared: ReadonlyArray<Declared>
): Effect.Effect<ReadonlyArray<string>, PostgresError | VersionTableConflict, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const byBase = new Map<string, Array<Declared>>()
    for (const d of declared) byBase.set(d.baseName, [...(byBase.get(d.baseName) ?? []), d])
    // Every version registered as declared and laid out (every start after the first): one read, no lock.
    const keys = new Map([...byBase].map(([base, versions]) => [base, versions.map((v) => v.name)]))
    const layout = yield* readLayout(client, keys)
    if (declared.every((d) => asDeclared(layout, d)) && isLaidOut(layout, keys)) return []
    return yield* client.withTransaction(
      Effect.gen(function* () {
        yield* ddlLock(client)
        const added: Array<string> = []
        let appendsHeld = false
        const holdAppends = Effect.suspend(() => {
          if (appendsHeld) return Effect.void
          appendsHeld = true
          return Sql.lockAppends(client)
        })
        // What every base has, in two statements: its versions (row-locked) and the kinds of its relations.
        const bases = [...byBase.keys()]
        const registered = yield* Sql.versionsOfBases(client, { baseNames: bases })
        const relations = yield* Sql.relationKinds(client, {
          relations: bases.flatMap((b) => [PerspectiveTable.served(b), PerspectiveTable.ofVersion(b)])
        })
        const kinds = new Map(relations.map((r) => [r.name, r.kind]))
        for (const [baseName, versions] of byBase) {
          const rows = registered.filter((r) => r.baseName === baseName)
          let live = rows.find((r) => r.state === "live")?.key
          for (const d of [...versions].sort((a, b) => a.version - b.version)) {
            const row = rows.find((r) => r.key === d.name)
            const types = [...new Set(d.eventTypes)].sort()
            if (row === undefined) {
              const legacy = (yield* Sql.hasHistory(client, { key: d.name })).present
              // A version processed before versions existed was routed by its appenders: its history is applied.
              if (!legacy) yield* holdAppends
              yield* Sql.insertVersion(client, {
                key: d.name,
                baseName,
                version: d.version,
                state: live !== undefined ? "building" : "live",
                eventTypes: types,
                fingerprint: d.fingerprint ?? null
              })
              live ??= d.name
              if (!legacy) yield* Sql.planBackfill(client, { key: d.name, eventTypes: types })
              added.push(d.name)
              continue
            }
            const known = [...row.eventTypes].sort()
            if (known.join("\u0000") !== types.join("\u0000")) {
              yield* holdAppends
              yield* Sql.updateEventTypes(client, { key: d.name, eventTypes: types })
              const gained = types.filter((t) => !known.includes(t))
              if (gained.length > 0) {
                yield* Effect.logWarning(
                  `perspective ${d.name} now handles ${gained.join(", ")}: new events of these types are routed to it, their history is not replayed (raise its version to rebuild it)`
                )
              }
            }
            if (row.state === "retired") {
              yield* Effect.logWarning(`perspective ${d.name} is retired: this instance runs it, but it is no longer routed nor served`)
            }
            if (d.fingerprint !== undefined && row.fingerprint !== d.fingerprint) {
              if (row.fingerprint !== null) {
                yield* Effect.logWarning(
                  `perspective ${d.name}: its model, initial value or handlers differ from those version ${d.version} was registered with; ` +
                    `the rows built so far keep the old logic — declare version ${d.version + 1} to rebuild them ` +
                    "(a different compiler or bundler changes a handler's source text too)"
                )
              }
              yield* Sql.updateFingerprint(client, { key: d.name, fingerprint: d.fingerprint })
            }
          }
          yield* ensureBase(
            client,
            baseName,
            versions.map((v) => v.name),
            { kinds, live }
          )
        }
        // One notification for the whole registration (every process refreshes its versions once, not per version).
        if (added.length > 0) yield* Sql.notifyVersionsChanged(client, { keys: added })
        return added
      })
    )
  })

/** See `PgPerspectiveVersions.retire`. */
export const retire = (
  name: string,
  options: RetireOptions = {}
): Effect.Effect<ReadonlyArray<Retired>, PostgresError | PostgresConfigError | UnknownPerspectiveVersion | VersionInUse, PgClient> =>
  Effect.gen(function* () {
    const client = yield* PgClient
    const deadAfter = yield* DurationOptions.decode("deadInstanceAfter", options.deadInstanceAfter, "positive", Duration.seconds(30))
    const { baseName } = Perspective.parseKey(name)
    return yield* client.withTransaction(
      Effect.gen(function* () {
        const rows = yield* Sql.versionsOfBase(client, { baseName })
        const named = rows.filter((r) => r.key === name)
        const targets = (named.length > 0 ? named : name === baseName ? rows : []).filter((r) => r.state !== "retired")
        if (named.length === 0 && (name !== baseName || rows.length === 0)) return yield* unknown(client, baseName, undefined, [])
        if (targets.length === 0) return []
        const keys = targets.map((r) => r.key)
        const handingOver = targets.find((r) => r.state === "ready")
        if (handingOver !== undefined) {
          return yield* new VersionInUse({ perspectiveName: handingOver.key, reason: "HandOverInProgress", instances: 0 })
        }
        if (options.force !== true) {
          const runners = yield* Sql.liveRunners(client, { keys, seconds: Duration.toSeconds(deadAfter) })
          const run = runners.find((r) => r.instances > 0)
          if (run !== undefined) {
            return yield* new VersionInUse({ perspectiveName: run.key, reason: "RunByLiveInstance", instances: run.instances })
          }
        }
        yield* Sql.lockAppends(client)
        const retired = yield* Sql.retireVersions(client, { keys })
        yield* Sql.notifyVersionsChanged(client, { keys: retired.map((r) => r.key) })
        for (const r of retired) {
          yield* Effect.logInfo(`perspective ${r.key} retired by hand (${r.dropped} pending work row(s) dropped)`)
        }
        return retired.map((r) => ({ perspectiveName: r.key, dropped: r.dropped, unplanned: r.unplanned }))
      })
    )
  })

/** See `PgPerspectiveVersions.layerRegistration`. */
export const layerRegistration = (
  declared: ReadonlyArray<Declared>
): Layer.Layer<never, PostgresError | VersionTableConflict, PgClient | SchemaReady> =>
  Layer.effectDiscard(Effect.andThen(SchemaReady, register(declared)))
