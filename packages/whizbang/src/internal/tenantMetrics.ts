// The fleet's metrics, bounded whatever the number of tenants: how many tenants run services here and how many
// have work, and the worst lag among them (seconds since the oldest pending event of a tenant with work). A label
// per tenant is opt-in (`tenants.metricsPerTenant`): a gauge per tenant with work, set to 0 when it has none left.
import { Effect, Metric } from "effect"

const active = Metric.gauge("whizbang_tenants_active", { description: "tenants whose services run in this process" })
const withWork = Metric.gauge("whizbang_tenants_with_work", { description: "tenants this process holds for their work" })
const maxLag = Metric.gauge("whizbang_tenants_lag_seconds_max", {
  description: "the worst lag of the tenants with work here: seconds since their oldest pending event"
})
const waiting = Metric.gauge("whizbang_tenants_waiting", { description: "tenants with work waiting for a slot (tenants.maxActive)" })
const failing = Metric.gauge("whizbang_tenants_failing", { description: "tenants whose services fail to start in this process" })
const tenantLag = Metric.gauge("whizbang_tenant_lag_seconds", {
  description: "seconds since the oldest pending event, per tenant with work (opt-in: tenants.metricsPerTenant)"
})

/** What {@link make} returns. */
export type Metrics = ReturnType<typeof make>

/** The metrics of one fleet. */
export const make = (perTenant: boolean) => {
  const lags = new Map<string, number>()
  const publish = Effect.suspend(() => Metric.update(maxLag, Math.max(0, ...lags.values())))
  return {
    /** The number of tenants whose services run. */
    active: (count: number) => Metric.update(active, count),
    /** The number of tenants waiting for a slot. */
    waiting: (count: number) => Metric.update(waiting, count),
    /** The number of tenants whose services fail to start. */
    failing: (count: number) => Metric.update(failing, count),
    /** A held tenant's lag, measured at its idle check. */
    lag: (tenantId: string, seconds: number) =>
      Effect.andThen(
        Effect.sync(() => lags.set(tenantId, seconds)),
        // Suspended: the count is read after the change above, not when the effect is made.
        Effect.suspend(() =>
          Effect.all([
            publish,
            Metric.update(withWork, lags.size),
            perTenant ? Metric.update(Metric.withAttributes(tenantLag, { tenant: tenantId }), seconds) : Effect.void
          ])
        )
      ),
    /** A tenant let go (idle, removed). */
    released: (tenantId: string) =>
      Effect.andThen(
        Effect.sync(() => lags.delete(tenantId)),
        Effect.suspend(() =>
          Effect.all([
            publish,
            Metric.update(withWork, lags.size),
            perTenant ? Metric.update(Metric.withAttributes(tenantLag, { tenant: tenantId }), 0) : Effect.void
          ])
        )
      )
  }
}
