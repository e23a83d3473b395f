/**
 * The InstanceProvider port: who this running process is.
 *
 * Every instance of a service needs its own `instanceId` (a UUID): leases, stream affinity and heartbeats are
 * keyed by it, and two processes sharing one id would act as one and starve each other.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"

/**
 * The instance's identity.
 *
 * @category models
 * @since 0.1.0
 */
export interface Shape {
  readonly instanceId: string
  readonly serviceName: string
  readonly hostName: string
  readonly processId: number
}

/**
 * The identity as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class InstanceProvider extends Context.Service<InstanceProvider, Shape>()("@whizbang/core/InstanceProvider") {}

/**
 * Provides a fixed identity.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (identity: Shape): Layer.Layer<InstanceProvider> => Layer.succeed(InstanceProvider, InstanceProvider.of(identity))

/**
 * Provides an identity for tests: a fresh random UUID unless given, service `"test"`, host `"memory"`, pid 0.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory = (identity: Partial<Shape> = {}): Layer.Layer<InstanceProvider> =>
  Layer.effect(
    InstanceProvider,
    Effect.sync(() =>
      InstanceProvider.of({
        instanceId: identity.instanceId ?? globalThis.crypto.randomUUID(),
        serviceName: identity.serviceName ?? "test",
        hostName: identity.hostName ?? "memory",
        processId: identity.processId ?? 0
      })
    )
  )
