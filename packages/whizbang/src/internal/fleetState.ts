/**
 * The tenant fleet's state, and every change to it, in one place.
 *
 * Every fiber of the fleet changes it — the LISTEN streams (a notification, a catalog change), each hold's fiber
 * (its checks, its end), requests (`Tenants.run`), each tenant's services (their start and stop) — but all in one
 * process, and each transition below runs synchronously, so no change ever interleaves with another. The effects
 * around them (listening, holding a tenant, starting and stopping services, logs, metrics) live in the modules
 * named after them; none of them changes a collection here but through a method below.
 *
 * - Tenants: the catalog's active tenants (id and schema), refreshed when it changes.
 * - The queue: tenants waiting for one of `maxActive` slots, first come first served, each with whether a
 *   notification came since it was queued.
 * - Holds: tenants the fleet holds, one slot each ({@link Hold}: its notification mark, its fiber, its worker's idle
 *   signal); and the tenants put back for another process since they were last held (see `fleetSlots.ts`).
 * - Failures: tenants whose services fail to start, until a hold starts them (`FleetStatus.failing`).
 * - Requests: when each tenant last had one.
 * - Services: one generation of a tenant's services at a time, and how many run.
 *
 * The collections are mutable on purpose: a sweep queues every tenant served (a thousand and more), and copying
 * them at every transition would cost allocations for nothing.
 */
import type { OutageLog } from "@whizbang/core/internal"
import { Deferred, type Fiber } from "effect"
import type { FleetStatus } from "../Tenants.js"

/**
 * How a hold ended: its tenant idle, its time slice over while others wait (`turn`), put back for another process
 * (`elsewhere`), its services not starting (`failed`), or interrupted (`stopped`: the tenant removed, the fleet
 * stopping).
 */
export type HoldEnd = "idle" | "turn" | "elsewhere" | "failed" | "stopped"

/** A tenant's work, as a check sees it (`TenantWork.check`). */
export interface Work {
  readonly busy: boolean
  readonly elsewhere: boolean
}

/** A tenant whose hold failed (services not starting, the database away), from the first failure of a run on. */
export interface Failure {
  /** The run's log: its failure once (then a reminder a minute), its recovery once. */
  readonly log: OutageLog.OutageLog
  readonly since: number
  readonly attempts: number
  /** The last failure's message. */
  readonly error: string
}

/**
 * A tenant the fleet holds. Its notification mark is set from the LISTEN fiber and cleared by the hold's own fiber,
 * as its checks cover the notifications.
 */
export class Hold {
  /** A notification came since the last idle check. */
  private notified: boolean
  /** Completed when the tenant's worker goes idle (its `onWorkProcessingIdle`): check now, not at `idleCheck`. */
  private idle = Deferred.makeUnsafe<void>()
  private forked: Fiber.Fiber<void> | undefined = undefined

  constructor(notified: boolean) {
    this.notified = notified
  }

  /** A notification came since the last idle check. */
  get dirty(): boolean {
    return this.notified
  }

  /** Completed when the tenant's worker goes idle. */
  get idleSignal(): Deferred.Deferred<void> {
    return this.idle
  }

  /** The hold's fiber, once forked. */
  get fiber(): Fiber.Fiber<void> | undefined {
    return this.forked
  }

  /** The hold's fiber forked: removing the tenant interrupts it. */
  forkedAs(fiber: Fiber.Fiber<void>): void {
    this.forked = fiber
  }

  /** A notification for the held tenant: there is work. */
  notify(): void {
    this.notified = true
  }

  /** A check begins that covers the notifications so far: returns whether one had come. */
  takeNotified(): boolean {
    const notified = this.notified
    this.notified = false
    return notified
  }

  /**
   * The hold woke: its worker said it is idle (`saidIdle`), or `idleCheck` passed. `"wait"` when a notification came
   * since and its turn is not over (there is work: no check needed), else `"check"`.
   */
  woke(saidIdle: boolean, turnOver: boolean): "wait" | "check" {
    this.idle = Deferred.makeUnsafe<void>()
    // The worker found nothing after the notifications so far: work they announced was committed before its claim.
    // The check covers what came since.
    if (saidIdle) this.notified = false
    if (this.notified && !turnOver) {
      this.notified = false
      return "wait"
    }
    return "check"
  }

  /** An idle check's verdict: the tenant is idle, its turn is over, or it is held on. */
  checked(busy: boolean, turnOver: boolean): "idle" | "turn" | "again" {
    // A notification that came while the check ran may be for work committed after its snapshot.
    if (!busy && !this.notified) return "idle"
    if (turnOver) return "turn"
    this.notified = false
    return "again"
  }
}

/**
 * After a hold, whether its tenant's services stop now rather than `idleTimeToLive` later: when others wait for a
 * slot (or its turn is over) and no request came lately; not after `stopped` (nothing holds them any more).
 */
export const stopsAfterHold = (end: HoldEnd, othersWaiting: boolean, requestedLately: boolean): boolean =>
  end !== "stopped" && (othersWaiting || end === "turn") && !requestedLately

/** The fleet's state; see the module's overview. */
export class FleetState {
  /** Active tenants: id -> schema, from the catalog, refreshed when it changes. */
  private readonly known = new Map<string, string>()
  private readonly bySchema = new Map<string, string>()
  /** Tenants waiting for a slot, first come first served (`queued`: the same, for lookups). */
  private readonly waiting: Array<string> = []
  private readonly queued = new Set<string>()
  /** Tenants queued with a notification since (their first check is skipped: there is work). */
  private readonly queuedDirty = new Set<string>()
  /** Tenants the fleet holds (each takes one of `maxActive` slots). */
  private readonly holds = new Map<string, Hold>()
  /** Tenants put back for another process since they were last held (see `fleetSlots.ts`). */
  private readonly putBackMarks = new Set<string>()
  /** Tenants whose hold failed (services not starting, the database away), until a hold starts them. */
  private readonly failing = new Map<string, Failure>()
  /** When each tenant last had a request (`Tenants.run`). */
  private readonly lastRequest = new Map<string, number>()
  /** Per tenant, completed when its services of the current generation have stopped. */
  private readonly stopping = new Map<string, Deferred.Deferred<void>>()
  /** Tenants whose services run (the `whizbang_tenants_active` gauge). */
  private running = 0

  // Tenants

  /** The catalog's tenants, read again: only the active ones are tenants. */
  refreshed(tenants: ReadonlyArray<{ readonly id: string; readonly schema: string; readonly state: string }>): void {
    this.known.clear()
    this.bySchema.clear()
    for (const t of tenants) {
      if (t.state !== "active") continue
      this.known.set(t.id, t.schema)
      this.bySchema.set(t.schema, t.id)
    }
  }

  /** An active tenant the catalog named (added in another process, its notification not here yet). */
  learned(tenant: { readonly id: string; readonly schema: string }): void {
    this.known.set(tenant.id, tenant.schema)
    this.bySchema.set(tenant.schema, tenant.id)
  }

  isTenant(tenantId: string): boolean {
    return this.known.has(tenantId)
  }

  /** The tenant whose schema this is, if any. */
  tenantOf(schema: string): string | undefined {
    return this.bySchema.get(schema)
  }

  tenants(): Array<string> {
    return [...this.known.keys()]
  }

  // Requests

  requested(tenantId: string, now: number): void {
    this.lastRequest.set(tenantId, now)
  }

  /** Whether the tenant had a request in the `millis` before `now`. */
  requestedWithin(tenantId: string, now: number, millis: number): boolean {
    return now - (this.lastRequest.get(tenantId) ?? 0) < millis
  }

  // The queue

  get waitingCount(): number {
    return this.waiting.length
  }

  get heldCount(): number {
    return this.holds.size
  }

  /** Whether a tenant other than `tenantId` is held for its work or waits for a slot (a replay gives way to them). */
  othersHaveWork(tenantId: string): boolean {
    return this.waiting.length > 0 || this.holds.size > (this.holds.has(tenantId) ? 1 : 0)
  }

  /** Whether a tenant that nobody serves yet waits for a slot: only then is one served elsewhere put back. */
  othersWait(): boolean {
    return this.waiting.some((id) => !this.putBackMarks.has(id))
  }

  /** Whether a hold that started at `since` has had its time slice (`timeSliceMillis`) while others wait. */
  turnOver(since: number, now: number, timeSliceMillis: number): boolean {
    return this.waiting.length > 0 && now - since >= timeSliceMillis
  }

  /** Queues the tenant at the back, unless it waits already; `dirty`: a notification came (there is work). */
  private enqueue(tenantId: string, dirty: boolean): void {
    if (dirty) this.queuedDirty.add(tenantId)
    if (this.queued.has(tenantId)) return
    this.queued.add(tenantId)
    this.waiting.push(tenantId)
  }

  /** A notification for a tenant this process serves: a held one is marked, any other queued (`"queued"`). */
  notified(tenantId: string): "held" | "queued" {
    const hold = this.holds.get(tenantId)
    if (hold !== undefined) {
      hold.notify()
      return "held"
    }
    this.enqueue(tenantId, true)
    return "queued"
  }

  /** At a sweep, queues the tenants in `order` that are not held, without a notification (each is checked first). */
  swept(order: ReadonlyArray<string>): void {
    for (const id of order) if (!this.holds.has(id)) this.enqueue(id, false)
  }

  /**
   * Takes tenants from the front of the queue into the free slots (of `maxActive`) and returns their holds to
   * start. A tenant removed or held meanwhile is skipped.
   */
  nextHolds(maxActive: number): Array<readonly [string, Hold]> {
    const next: Array<readonly [string, Hold]> = []
    while (this.holds.size < maxActive && this.waiting.length > 0) {
      const tenantId = this.waiting.shift()!
      this.queued.delete(tenantId)
      if (!this.known.has(tenantId) || this.holds.has(tenantId)) continue
      const hold = new Hold(this.queuedDirty.delete(tenantId))
      this.holds.set(tenantId, hold)
      next.push([tenantId, hold])
    }
    return next
  }

  held(tenantId: string): Hold | undefined {
    return this.holds.get(tenantId)
  }

  // Holds

  /**
   * Whether the hold checks the tenant's work before it starts its services: when no notification says there is
   * work, or while others wait for a slot (it may be put back for another process).
   */
  checksFirst(hold: Hold): boolean {
    return !hold.dirty || this.othersWait()
  }

  /**
   * The verdict of the check before the services start (`notified`: whether a notification had come before it).
   * A notification during the check may be for work committed after its snapshot: counted as work. One that came
   * before it announced work committed before it (appends notify after their commit, a version's registration in
   * its transaction), which the check sees unless another process drained it meanwhile: nothing to start then
   * (bench t: a tenant's first start notifies every process of its versions, and each started the tenant's services
   * after the first had drained it).
   */
  firstChecked(tenantId: string, hold: Hold, work: Work, notified: boolean): "idle" | "elsewhere" | "start" {
    if (!work.busy && !hold.dirty) return "idle"
    if (notified) hold.notify()
    // Put back once in a row at most: an instance elsewhere may not run all of its work (a rolling deploy's old
    // instance, a subset of perspectives), so its next turn holds it whatever the queue.
    return work.elsewhere && !this.putBackMarks.has(tenantId) && this.othersWait() ? "elsewhere" : "start"
  }

  /** The hold starts the tenant's services: they see the work notified so far, and its put-back mark goes. */
  starts(tenantId: string, hold: Hold): void {
    hold.takeNotified()
    this.putBackMarks.delete(tenantId)
  }

  /** The hold ended `elsewhere`: its slot is free, and the tenant waits at the back, marked as put back. */
  putBack(tenantId: string): void {
    const hold = this.holds.get(tenantId)
    this.holds.delete(tenantId)
    this.putBackMarks.add(tenantId)
    this.enqueue(tenantId, hold?.dirty === true)
  }

  /** The hold ended otherwise: its slot is free, and the tenant's put-back mark goes. */
  letGo(tenantId: string): void {
    this.holds.delete(tenantId)
    this.putBackMarks.delete(tenantId)
  }

  /** A tenant handed on after its time slice waits again at the back, with work. */
  requeue(tenantId: string): void {
    this.enqueue(tenantId, true)
  }

  /**
   * The tenant is no longer one: it leaves the queue, its marks and failure go. Returns its hold, if any, for its
   * fiber to be interrupted (its end then frees the slot).
   */
  removed(tenantId: string): Hold | undefined {
    if (this.queued.delete(tenantId)) this.waiting.splice(this.waiting.indexOf(tenantId), 1)
    this.queuedDirty.delete(tenantId)
    this.putBackMarks.delete(tenantId)
    this.failing.delete(tenantId)
    return this.holds.get(tenantId)
  }

  // Failures

  get failingCount(): number {
    return this.failing.size
  }

  /** A hold failed with `error`: the tenant's run of failures, begun now (its log made by `log`) or counted on. */
  failed(tenantId: string, error: string, now: number, log: () => OutageLog.OutageLog): Failure {
    const previous = this.failing.get(tenantId)
    const failure: Failure =
      previous === undefined ? { log: log(), since: now, attempts: 1, error } : { ...previous, attempts: previous.attempts + 1, error }
    this.failing.set(tenantId, failure)
    return failure
  }

  /** A hold started the tenant's services: its run of failures, if any, is over (returned). */
  recovered(tenantId: string): Failure | undefined {
    const failure = this.failing.get(tenantId)
    this.failing.delete(tenantId)
    return failure
  }

  // Services

  /** The tenant's previous generation of services, still stopping: the next one starts after it. */
  previousGeneration(tenantId: string): Deferred.Deferred<void> | undefined {
    return this.stopping.get(tenantId)
  }

  /** A generation of the tenant's services starts; `stopped` completes when it has stopped. */
  generationStarts(tenantId: string, stopped: Deferred.Deferred<void>): void {
    this.stopping.set(tenantId, stopped)
  }

  /** The generation `stopped` stands for has stopped. */
  generationStopped(tenantId: string, stopped: Deferred.Deferred<void>): void {
    if (this.stopping.get(tenantId) === stopped) this.stopping.delete(tenantId)
  }

  /** A tenant's services started: returns how many run. */
  servicesStarted(): number {
    return ++this.running
  }

  /** A tenant's services stopped: returns how many run. */
  servicesStopped(): number {
    return --this.running
  }

  // Status

  status(): FleetStatus {
    return {
      held: [...this.holds.keys()],
      waiting: [...this.waiting],
      failing: [...this.failing].map(([tenantId, f]) => ({ tenantId, error: f.error, since: new Date(f.since), attempts: f.attempts }))
    }
  }
}
