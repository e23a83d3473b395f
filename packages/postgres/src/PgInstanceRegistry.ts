/**
 * The instance registry: this process's row in `wh_service_instances`, kept alive by heartbeats.
 *
 * - **Registration** at start-up. A row for the same instance id whose heartbeat is fresh and whose boot token
 *   (a random id made at start-up) is not ours belongs to another live process: start-up fails with
 *   {@link DuplicateInstanceError}. A stale row (a crashed predecessor) is taken over and its leases dropped.
 * - **Heartbeats** every `abandonStaleInstanceThreshold / 3` (or `heartbeatInterval`) from a fiber of the layer's scope. Each beat
 *   also abandons instances whose heartbeat is older than the threshold: their rows go, and so do their stream
 *   leases (`wh_active_streams`), so claims hand their streams to live instances. Claims treat a stale owner's
 *   leases as free even before a beat cleaned them up.
 * - **A process that is gone is seen at once.** The row records the server session of the process's LISTEN
 *   connection (`PgClient.listenSession`, kept up to date as it reconnects). Registration and every beat also
 *   abandon the instances whose recorded session has ended on this run of the server (`instanceSessions.ts`): a
 *   killed process's partitions go to the live instances at the next beat of any of them, or as soon as its
 *   replacement registers, not after the threshold (during which the partitions spread to it waited out the
 *   coordinator's affinity grace, 3 s by default, at every append). An instance without a LISTEN connection (no
 *   worker), or whose session is on another server run, is left to the threshold. A tenant's services started by
 *   the fleet when its check found no other instance's row in the schema skip the clean-up at registration
 *   (`TenantStart`): there is nothing to clean up.
 * - **Deregistration** when the scope closes: the row and this instance's leases are removed, so the remaining
 *   instances re-spread the partitions at once.
 *
 * **When to use**: `PgPerspectivePipeline.layer` includes it; provide it yourself when you compose the worker
 * from the single layers. `PgWorkCoordinator` reads its boot token (when present) to fence completions of a
 * process that lost its id to a successor.
 *
 * **Gotchas**: a restarted process that reuses its instance id is refused until the old heartbeat is stale
 * (at most the threshold). Processes that only append (no worker) should not register: a registered instance
 * gets a share of the partitions.
 *
 * @since 0.1.0
 */
import { InstanceProvider, WorkerOptions } from "@whizbang/core"
import { OutageLog } from "@whizbang/core/internal"
import { Context, Duration, Effect, Layer, Option, Stream } from "effect"
import * as InstanceSessions from "./internal/instanceSessions.js"
import { PgClient, type ListenSession } from "./PgClient.js"
import * as Jitter from "./internal/jitter.js"
import * as DurationOption from "./internal/durationOption.js"
import { DuplicateInstanceError, type PostgresConfigError, type PostgresError } from "./PostgresError.js"
import { SchemaReady } from "./SchemaReady.js"
import { TenantStart } from "./TenantStart.js"
import * as Sql from "./sql/serviceInstances.js"

/**
 * Registry options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /**
   * An instance silent for longer than this is abandoned: whole seconds, at least 1 second. Default
   * `WorkerOptions.defaults` (30 seconds).
   */
  readonly abandonStaleInstanceThreshold?: Duration.Input | undefined
  /** Heartbeat period, a finite, positive duration; default a third of the threshold (at least 100 ms). */
  readonly heartbeatInterval?: Duration.Input | undefined
  /**
   * Remove the row and leases when the scope closes (default true). `false` leaves them to be abandoned, as a
   * crash would: for tests of takeover.
   */
  readonly deregisterOnShutdown?: boolean
  /**
   * The perspectives this instance runs, recorded on its row so that `PgStatus` and `PgWatchdog` can tell work
   * that no live instance runs (a rolling deploy) from work that is merely waiting. Omitted: not recorded, and
   * the instance is taken as running every perspective. `PgPerspectivePipeline.layer` passes its perspectives.
   */
  readonly perspectiveNames?: ReadonlyArray<string>
}

/**
 * A live instance.
 *
 * @category models
 * @since 0.1.0
 */
export interface LiveInstance {
  readonly instanceId: string
  readonly hostName: string
  readonly processId: number
  /** The perspectives it runs; `null` when not recorded (taken as every perspective). */
  readonly perspectiveNames: ReadonlyArray<string> | null
}

/**
 * The registry of this process.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly instanceId: string
  /** Random per start-up; proves that this process holds `instanceId`. */
  readonly bootToken: string
  /** The decoded `abandonStaleInstanceThreshold`, in seconds. */
  readonly abandonStaleInstanceThresholdSeconds: number
  /** Live instances ordered by id (the order partitions are spread by). */
  readonly liveInstances: Effect.Effect<ReadonlyArray<LiveInstance>, PostgresError>
  /** One heartbeat now (also abandons stale instances). */
  readonly beat: Effect.Effect<void, PostgresError>
}

/**
 * @category services
 * @since 0.1.0
 */
export class PgInstanceRegistry extends Context.Service<PgInstanceRegistry, Shape>()("@whizbang/postgres/PgInstanceRegistry") {}

/**
 * The options as {@link decodeOptions} leaves them.
 *
 * @category models
 * @since 0.5.0
 */
export interface Decoded {
  readonly abandonStaleInstanceThresholdSeconds: number
  readonly heartbeatIntervalMillis: number
  readonly deregisterOnShutdown: boolean
  readonly perspectiveNames: ReadonlyArray<string> | undefined
}

/**
 * Checks the options, filling defaults; a bad value is a `PostgresConfigError` naming it, after `prefix` (the
 * pipeline's `registry.`).
 *
 * @category constructors
 * @since 0.5.0
 */
export const decodeOptions = (options: Options = {}, prefix = ""): Effect.Effect<Decoded, PostgresConfigError> =>
  Effect.gen(function* () {
    const threshold = Duration.toSeconds(
      yield* DurationOption.decode(
        `${prefix}abandonStaleInstanceThreshold`,
        options.abandonStaleInstanceThreshold,
        "wholeSeconds",
        WorkerOptions.defaults.abandonStaleInstanceThreshold
      )
    )
    const interval = Duration.toMillis(
      yield* DurationOption.decode(
        `${prefix}heartbeatInterval`,
        options.heartbeatInterval,
        "positive",
        Duration.millis(Math.max(100, Math.floor((threshold * 1000) / 3)))
      )
    )
    return {
      abandonStaleInstanceThresholdSeconds: threshold,
      heartbeatIntervalMillis: interval,
      deregisterOnShutdown: options.deregisterOnShutdown ?? true,
      perspectiveNames: options.perspectiveNames
    }
  })

/** A session as the row records it, to tell whether the row has the current one (`null`: none). */
const sessionText = (session: ListenSession | undefined): string | null => (session === undefined ? null : JSON.stringify(session))

/**
 * Registers this instance and starts its heartbeat fiber in the current scope. A bad option fails with a
 * `PostgresConfigError` naming it, before the database is touched.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options = {}) => Effect.flatMap(decodeOptions(options), makeDecoded)

/**
 * {@link make} for options {@link decodeOptions} checked already.
 *
 * @category constructors
 * @since 0.5.0
 */
export const makeDecoded = (options: Decoded) =>
  Effect.gen(function* () {
    const threshold = options.abandonStaleInstanceThresholdSeconds
    const interval = options.heartbeatIntervalMillis
    const client = yield* PgClient
    const identity = yield* InstanceProvider.InstanceProvider
    const bootToken = globalThis.crypto.randomUUID()
    const { instanceId } = identity
    const perspectiveNames = options.perspectiveNames === undefined ? null : [...new Set(options.perspectiveNames)]
    const registration: Sql.Registration = {
      instanceId,
      serviceName: identity.serviceName,
      hostName: identity.hostName,
      processId: identity.processId,
      bootToken,
      perspectiveNames
    }

    // The LISTEN connection's session now (open already when the process serves other tenants), and as the row has
    // it (`null`: none recorded).
    let session: ListenSession | undefined = Option.getOrUndefined(yield* Stream.runHead(client.listenSession))
    let written = sessionText(session)

    // A taken-over stale row may still own leases of the crashed predecessor: they are not ours (released with it).
    const registered = (yield* Sql.registerAndRelease(client, { ...registration, session, staleSeconds: threshold })) > 0
    if (!registered) {
      const holder = Option.getOrUndefined(yield* Sql.describe(client, { instanceId }))
      return yield* new DuplicateInstanceError({
        instanceId,
        holderHostName: holder?.hostName ?? "unknown",
        holderProcessId: holder?.processId ?? -1,
        heartbeatAgeSeconds: holder?.heartbeatAgeSeconds ?? 0,
        abandonStaleInstanceThresholdSeconds: threshold
      })
    }

    const abandoned = (
      stale: ReadonlyArray<{ readonly instanceId: string; readonly heartbeatAgeSeconds: number }>,
      gone: ReadonlyArray<{ readonly instanceId: string }>,
      released: number
    ) => {
      const described = [
        ...stale.map((s) => `${s.instanceId}: silent ${s.heartbeatAgeSeconds.toFixed(1)} s`),
        ...gone.map((g) => `${g.instanceId}: its session ended`)
      ]
      return Effect.logInfo(`abandoned ${described.length} instance(s) (${described.join(", ")}); released ${released} stream lease(s)`)
    }

    const abandon = Effect.gen(function* () {
      // Read outside the transaction: on Citus the server's sessions are the coordinator's, where LISTEN runs.
      const ended = yield* InstanceSessions.detached(client, instanceId)
      if (ended.length === 0) {
        // The usual case (every beat, every start of a tenant's services): one statement, no transaction.
        const stale = yield* Sql.abandonStaleAndRelease(client, { staleSeconds: threshold })
        if (stale.length > 0) yield* abandoned(stale, [], stale[0]!.released)
        return
      }
      yield* client.withTransaction(
        Effect.gen(function* () {
          const stale = yield* Sql.abandonStale(client, { staleSeconds: threshold })
          const gone = yield* Sql.abandonDetached(client, {
            instanceIds: ended.map((e) => e.instanceId),
            backendStarts: ended.map((e) => e.backendStart)
          })
          if (stale.length === 0 && gone.length === 0) return
          const released = yield* Sql.releaseStreamsOf(client, { instanceIds: [...stale, ...gone].map((s) => s.instanceId) })
          yield* abandoned(stale, gone, released)
        })
      )
    })

    const record = Effect.suspend(() => {
      const wanted = sessionText(session)
      if (wanted === written) return Effect.void
      return Effect.map(Sql.recordSession(client, { instanceId, bootToken, session: session ?? null }), () => {
        written = wanted
      })
    })

    const beat = Effect.gen(function* () {
      const alive = yield* Sql.heartbeat(client, { instanceId, bootToken })
      if (alive === 0) {
        // Declared dead during a pause (row removed): come back. Fenced completions keep the pause harmless.
        const back = yield* Sql.reRegister(client, { ...registration, session })
        written = sessionText(session)
        if (back === 0) {
          yield* Effect.logError(`instance id ${instanceId} was taken over by another process; this process no longer heartbeats for it`)
        } else {
          yield* Effect.logWarning(`instance ${instanceId} had been abandoned (missed heartbeats); registered again`)
        }
      }
      yield* record
      yield* abandon
    })

    const outages = yield* OutageLog.make("instance heartbeat")
    // The session as it changes (a failed write is made again by the next beat), and the instances gone before this
    // one registered (a restarted process's predecessor) abandoned at once.
    yield* Effect.forkScoped(
      Stream.runForEach(client.listenSession, (next) =>
        Effect.suspend(() => {
          session = next
          return Effect.catchCause(record, (cause) => Effect.logDebug("recording the LISTEN session failed; the next beat does", cause))
        })
      )
    )
    // Nothing to clean up when the tenant fleet found no other instance's row just before this start (`TenantStart`).
    if ((yield* TenantStart)?.otherInstances !== false) yield* outages.guard(abandon, undefined)
    // Jittered: the instances started together (a process's many tenants, a fleet's deploy) do not beat together.
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Jitter.sleep(Duration.millis(interval)), outages.guard(beat, undefined))))
    if (options.deregisterOnShutdown) {
      yield* Effect.addFinalizer(() =>
        Sql.deregisterAndRelease(client, { instanceId, bootToken }).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("deregistering the instance failed; it will be abandoned after the threshold", cause)
          )
        )
      )
    }
    yield* Effect.logInfo(`instance ${instanceId} registered (heartbeat every ${interval} ms, abandoned after ${threshold} s of silence)`)

    return PgInstanceRegistry.of({
      instanceId,
      bootToken,
      abandonStaleInstanceThresholdSeconds: threshold,
      liveInstances: Sql.liveInstances(client, { staleSeconds: threshold }),
      beat
    })
  })

/**
 * The registry as a layer: registered while the layer lives.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  PgInstanceRegistry,
  DuplicateInstanceError | PostgresError | PostgresConfigError,
  PgClient | InstanceProvider.InstanceProvider | SchemaReady
> =>
  Layer.effect(
    PgInstanceRegistry,
    Effect.flatMap(Effect.service(SchemaReady), () => make(options))
  )

/**
 * {@link layer} for options {@link decodeOptions} checked already.
 *
 * @category layers
 * @since 0.5.0
 */
export const layerDecoded = (
  options: Decoded
): Layer.Layer<PgInstanceRegistry, DuplicateInstanceError | PostgresError, PgClient | InstanceProvider.InstanceProvider | SchemaReady> =>
  Layer.effect(
    PgInstanceRegistry,
    Effect.flatMap(Effect.service(SchemaReady), () => makeDecoded(options))
  )
