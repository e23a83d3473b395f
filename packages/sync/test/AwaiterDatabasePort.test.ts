import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ChangeSignal } from "../src/internal/processedListener.js"
import * as EventCompletionAwaiter from "../src/EventCompletionAwaiter.js"
import * as PerspectiveSyncAwaiter from "../src/PerspectiveSyncAwaiter.js"
import * as SyncEventTracker from "../src/SyncEventTracker.js"
import * as SyncFilter from "../src/SyncFilter.js"
import * as ScopedEventTracker from "../src/ScopedEventTracker.js"
import * as SyncInquiry from "../src/SyncInquiry.js"
import { SyncInquiryPort, type SyncInquiryPortShape } from "../src/SyncInquiryPort.js"
import type * as SyncResult from "../src/SyncResult.js"
import { isRunning, start, uuid } from "./support.js"

/** A fake database port: what it says pending / dead-lettered, a change signal, and how often it was asked. */
const fakeDatabase = (
  options: { readonly trustsTrackerMarks?: boolean; readonly perspectives?: ReadonlyMap<string, ReadonlySet<string>> } = {}
) => {
  const pending = new Set<string>()
  const deadLettered = new Set<string>()
  /** Pending ids held by a failing event, and its failure. */
  const failing = new Map<string, SyncResult.FailingEvent>()
  const signal = new ChangeSignal()
  const stats = {
    asked: 0,
    streamAsks: [] as Array<{
      readonly streamId: string | undefined
      readonly eventTypes: ReadonlyArray<string> | undefined
      readonly deadLettered: boolean
    }>
  }
  /** The stream of a pending event, when a test says (cross-scope discovery answers per stream); unsaid: any stream. */
  const streamOf = new Map<string, string>()
  /** Runs once after the next answer (a completion that commits right after the check's query read). */
  const hooks: { afterAnswer?: (() => void) | undefined; gate?: Deferred.Deferred<void> | undefined } = {}
  const port: SyncInquiryPortShape = {
    authoritative: true,
    pendingEventIds: (_p, ids) =>
      Effect.suspend(() => {
        stats.asked++
        // A gate: the query is in flight until the test opens it.
        return hooks.gate === undefined ? Effect.void : Deferred.await(hooks.gate)
      }).pipe(
        Effect.andThen(
          Effect.sync(() => {
            const answer = {
              pendingEventIds: ids.filter((id) => pending.has(id)),
              deadLetteredEventIds: ids.filter((id) => deadLettered.has(id)),
              failing: ids.flatMap((id) => {
                const f = pending.has(id) ? failing.get(id) : undefined
                return f === undefined ? [] : [{ eventId: id, failing: f }]
              })
            }
            const after = hooks.afterAnswer
            hooks.afterAnswer = undefined
            after?.()
            return answer
          })
        )
      ),
    pendingForStream: (_p, streamId, eventTypes, discovery) =>
      Effect.sync(() => {
        stats.streamAsks.push({ streamId, eventTypes, deadLettered: discovery?.deadLettered ?? false })
        const onStream = (id: string) => streamId === undefined || (streamOf.get(id) ?? streamId) === streamId
        const dead = discovery?.deadLettered === true ? [...deadLettered].filter((id) => streamOf.get(id) === streamId) : []
        return [...[...pending].filter(onStream), ...dead]
      }),
    perspectives:
      options.perspectives ??
      new Map([
        ["p", new Set(["A", "B"])],
        ["q", new Set(["B"])]
      ]),
    changes: { current: signal.current, awaitChangeAfter: (g) => signal.awaitChangeAfter(g) },
    ...(options.trustsTrackerMarks === undefined ? {} : { trustsTrackerMarks: () => options.trustsTrackerMarks! })
  }
  const layer = Layer.mergeAll(PerspectiveSyncAwaiter.layer, EventCompletionAwaiter.layer).pipe(
    Layer.provide(Layer.succeed(SyncInquiryPort, port)),
    Layer.provideMerge(SyncEventTracker.layer)
  )
  return { pending, deadLettered, failing, streamOf, signal, stats, hooks, layer }
}

const awaiter = Effect.service(PerspectiveSyncAwaiter.PerspectiveSyncAwaiter)
const tracker = Effect.service(SyncEventTracker.SyncEventTracker)

describe("PerspectiveSyncAwaiter with a database port", () => {
  it.effect("already applied elsewhere (still tracked here): answered after one database check, no poll", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e]))
      expect(isRunning(fiber)).toBe(false) // no clock advanced: not the safety-net poll
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "NoPendingEvents", eventsAwaited: 1 })
      expect(db.stats.asked).toBe(1)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect(
    "a tracked event committed here while the first database check is in flight: the mark ends the wait when that answer arrives",
    () => {
      const db = fakeDatabase()
      return Effect.gen(function* () {
        const [e, s] = [uuid(), uuid()]
        db.pending.add(e) // the answer's snapshot predates the commit
        db.hooks.gate = Deferred.makeUnsafe<void>()
        const t = yield* tracker
        yield* t.trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
        const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
        expect(isRunning(fiber)).toBe(true)
        expect(db.stats.asked).toBe(1)
        yield* t.markProcessedByPerspective([e], "p")
        yield* Effect.yieldNow
        // The mark is one version's: it counts only once the first database answer resolved what serves the perspective.
        expect(isRunning(fiber)).toBe(true)
        Deferred.doneUnsafe(db.hooks.gate, Exit.void)
        expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
        expect(db.stats.asked).toBe(1) // the in-flight query was not cancelled and asked again
      }).pipe(Effect.provide(db.layer))
    }
  )

  it.effect("a port that does not trust tracker marks (a perspective with versions): the database must agree", () => {
    const db = fakeDatabase({ trustsTrackerMarks: false })
    return Effect.gen(function* () {
      const [e, s] = [uuid(), uuid()]
      db.pending.add(e)
      const t = yield* tracker
      yield* t.trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
      yield* t.markProcessedByPerspective([e], "p") // this process's version applied it; another serving one did not
      yield* Effect.yieldNow
      expect(isRunning(fiber)).toBe(true)
      expect(db.stats.asked).toBe(2) // the first answer, then the mark's confirmation
      db.pending.delete(e)
      db.signal.bump()
      expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("a completion signalled between the first check and the wait is not lost (no safety-net poll needed)", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const e = uuid()
      db.pending.add(e)
      db.hooks.afterAnswer = () => {
        db.pending.delete(e)
        db.signal.bump()
      }
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
      expect(isRunning(fiber)).toBe(false) // no clock advanced
      expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("an event dead-lettered before the wait, among pending ones: DeadLettered at once, naming it", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [dead, other] = [uuid(), uuid()]
      db.deadLettered.add(dead)
      db.pending.add(other)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [dead, other]))
      expect(isRunning(fiber)).toBe(false)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "DeadLettered", deadLettered: [dead], pending: [other] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("includeProcessedEventIds: the processed ids are returned only when asked", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [a, b] = [uuid(), uuid()]
      db.pending.add(b)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [a, b], { includeProcessedEventIds: true }))
      db.pending.clear()
      db.signal.bump()
      const result = yield* Fiber.join(fiber)
      expect(result).toMatchObject({ _tag: "Synced", processedEventIds: [a, b] })
      const plain = yield* (yield* awaiter).waitForEvents("p", [a])
      expect("processedEventIds" in plain).toBe(false)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("bad arguments are typed errors at the call, never a wait", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const a = yield* awaiter
      const reason = (effect: Effect.Effect<unknown, unknown>) =>
        Effect.map(Effect.flip(effect), (e) => (e as { readonly reason?: { readonly _tag: string } }).reason?._tag)
      expect(yield* reason(a.waitForStream("p", "not-a-uuid"))).toBe("InvalidStreamId")
      expect(yield* reason(a.waitForStream("p", uuid(), { eventId: "nope" }))).toBe("InvalidEventId")
      expect(yield* reason(a.waitForEvents("p", ["not-a-uuid"]))).toBe("InvalidEventId")
      expect(yield* reason(a.waitForEvents("nope", [uuid()]))).toBe("UnknownPerspective")
      expect(yield* reason(a.waitForEvents("p", [uuid()], { timeout: -5 }))).toBe("InvalidTimeout")
      expect(yield* reason(a.wait("q", SyncFilter.forEventTypes("A")))).toBe("ImpossibleFilter")
      expect(yield* reason(a.wait("q", SyncFilter.forStream(uuid()).andEventTypes("A")))).toBe("ImpossibleFilter")
      expect(yield* reason(a.waitForStream("q", uuid(), { eventTypes: ["A"] }))).toBe("ImpossibleFilter")
      expect((yield* a.wait("q", SyncFilter.forEventTypes("A").orEventTypes("B")))._tag).toBe("NoPendingEvents")
      expect(db.stats.asked).toBe(0)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect(
    "versions: a base name or any version's key of a known perspective is accepted; the filter check unions its versions' types",
    () => {
      // This service runs v2 of "balance" (key balance__v2) and v1 of "ledger".
      const db = fakeDatabase({
        perspectives: new Map([
          ["balance__v2", new Set(["A"])],
          ["ledger", new Set(["B"])]
        ])
      })
      return Effect.gen(function* () {
        const a = yield* awaiter
        const reason = (effect: Effect.Effect<unknown, unknown>) =>
          Effect.map(Effect.flip(effect), (e) => (e as { readonly reason?: { readonly _tag: string } }).reason?._tag)
        for (const name of ["balance", "balance__v2", "balance__v3", "ledger", "ledger__v2"]) {
          expect((yield* a.waitForEvents(name, [uuid()]))._tag).toBe("NoPendingEvents")
        }
        expect(yield* reason(a.waitForEvents("other", [uuid()]))).toBe("UnknownPerspective")
        expect(yield* reason(a.wait("balance", SyncFilter.forEventTypes("B")))).toBe("ImpossibleFilter")
        expect((yield* a.wait("balance", SyncFilter.forEventTypes("A")))._tag).toBe("NoPendingEvents")
      }).pipe(Effect.provide(db.layer))
    }
  )

  it.effect("versions: a wait on the base name discovers events this process tracks under its version's key", () => {
    const db = fakeDatabase({ perspectives: new Map([["balance__v2", new Set(["A"])]]) })
    return Effect.gen(function* () {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "balance__v2" })
      db.pending.add(e)
      const result = yield* (yield* awaiter).wait("balance", SyncFilter.forStream(s).withTimeout(Duration.zero))
      expect(result).toMatchObject({ _tag: "TimedOut", pending: [e] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("a tracked event dead-lettered on any instance ends the wait on the change signal and is named", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e]))
      expect(db.stats.asked).toBe(1) // one check, then the wait
      db.pending.delete(e)
      db.deadLettered.add(e)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "DeadLettered", eventsAwaited: 1, deadLettered: [e] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("a tracked event processed on another instance ends the wait (the local tracker never hears of it)", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [e, s] = [uuid(), uuid()]
      yield* (yield* tracker).trackEvent({ eventId: e, streamId: s, eventType: "A", perspectiveName: "p" })
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e]))
      db.signal.bump() // a change, but still pending
      yield* Effect.yieldNow
      expect(isRunning(fiber)).toBe(true)
      db.pending.delete(e)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", deadLettered: [] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("without signals the 1 s safety-net poll still finds it; a signal sent before a wait is seen through the counter", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const e = uuid()
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
      db.pending.delete(e) // processed, but no NOTIFY arrives
      yield* TestClock.adjust(900)
      expect(isRunning(fiber)).toBe(true)
      yield* TestClock.adjust(200)
      expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
      // A signal fired before the wait registers is seen through the counter.
      const generation = yield* db.signal.current
      db.signal.bump()
      yield* db.signal.awaitChangeAfter(generation)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("a stream filter on an instance that did not append waits for the stream's events the database has pending", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [s, other, e, elsewhere] = [uuid(), uuid(), uuid(), uuid()]
      db.pending.add(e).add(elsewhere)
      db.streamOf.set(e, s).set(elsewhere, other)
      const a = yield* awaiter
      // Nothing in this scope, nothing tracked here: the database says what the stream still has pending.
      expect(yield* a.isCaughtUp("p", SyncFilter.forStream(s))).toBe(false)
      const fiber = yield* start(a.wait("p", SyncFilter.forStream(s).withTimeout("10 seconds")))
      expect(isRunning(fiber)).toBe(true)
      db.pending.delete(e)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 1, pending: [] })
      // Asked with the types the filter allows ("p" handles A and B), a stream with its dead letters; event types
      // alone ask every stream; a filter no stored event can match (only this scope's) asks nothing.
      db.stats.streamAsks.length = 0
      yield* a.isCaughtUp("p", SyncFilter.forStream(s))
      yield* a.isCaughtUp("p", SyncFilter.forStream(s).andEventTypes("A"))
      yield* ScopedEventTracker.withScope(a.isCaughtUp("p", SyncFilter.forStream(s).andCurrentScope()))
      yield* a.isCaughtUp("p", SyncFilter.forEventTypes("A"))
      yield* a.isCaughtUp("p", SyncFilter.all().or(SyncFilter.forStream(s).andEventTypes("C")))
      expect(db.stats.streamAsks).toEqual([
        { streamId: s, eventTypes: undefined, deadLettered: true },
        { streamId: s, eventTypes: ["A"], deadLettered: true },
        { streamId: undefined, eventTypes: ["A"], deadLettered: false },
        { streamId: undefined, eventTypes: undefined, deadLettered: false }
      ])
    }).pipe(Effect.provide(db.layer))
  })

  it.effect(
    "a stream read on an instance that did not append answers DeadLettered for the stream's dead letters, naming them; a receptor's wait does not",
    () => {
      const db = fakeDatabase()
      return Effect.gen(function* () {
        const [s, dead, incoming] = [uuid(), uuid(), uuid()]
        db.deadLettered.add(dead)
        db.streamOf.set(dead, s)
        const a = yield* awaiter
        // Nothing tracked here, nothing pending: only the dead letter (still in wh_dead_letters) says the row lacks it.
        expect(yield* a.wait("p", SyncFilter.forStream(s))).toMatchObject({ _tag: "DeadLettered", deadLettered: [dead], pending: [] })
        expect(yield* a.waitForStream("p", s)).toMatchObject({ _tag: "DeadLettered", deadLettered: [dead] })
        // A receptor waits for its incoming event (and what is in flight before it), not for the stream's old dead letters.
        expect(yield* a.waitForStream("p", s, { eventId: incoming, andStreamPending: true })).toMatchObject({
          _tag: "NoPendingEvents",
          deadLettered: []
        })
        // Retried or discarded (gone from dead letters): fresh again.
        db.deadLettered.delete(dead)
        expect((yield* a.wait("p", SyncFilter.forStream(s)))._tag).toBe("NoPendingEvents")
      }).pipe(Effect.provide(db.layer))
    }
  )

  it.effect(
    "an awaited event held by a failing one answers Failing at the first check, naming the failing event, its error, attempts and next attempt",
    () => {
      const db = fakeDatabase()
      return Effect.gen(function* () {
        const [s, head, mine] = [uuid(), uuid(), uuid()]
        const nextAttemptAt = new Date(Date.now() + 60_000)
        const failure = { eventId: head, streamId: s, perspectiveName: "p", error: "boom", attempts: 3, nextAttemptAt }
        db.pending.add(head).add(mine)
        db.streamOf.set(head, s).set(mine, s)
        db.failing.set(head, failure).set(mine, failure)
        const a = yield* awaiter
        const fiber = yield* start(a.waitForEvents("p", [mine], { timeout: "10 seconds" }))
        expect(isRunning(fiber)).toBe(false) // no clock advanced: not the timeout
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failing", failing: [failure], pending: [mine], eventsAwaited: 1 })
        // A discovered failing event ends a stream read at once too: the stream's later events wait behind it.
        expect(yield* a.wait("p", SyncFilter.forStream(s).withTimeout("10 seconds"))).toMatchObject({
          _tag: "Failing",
          failing: [failure],
          eventsAwaited: 2
        })
        expect(yield* a.isCaughtUp("p", SyncFilter.forStream(s))).toBe(false)
      }).pipe(Effect.provide(db.layer))
    }
  )

  it.effect("a wait already waiting ends with Failing on the change signal of the first failure, not at its timeout", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [s, e] = [uuid(), uuid()]
      db.pending.add(e)
      const fiber = yield* start((yield* awaiter).waitForEvents("p", [e], { timeout: "10 seconds" }))
      expect(isRunning(fiber)).toBe(true)
      const failure = { eventId: e, streamId: s, perspectiveName: "p", error: "boom", attempts: 1, nextAttemptAt: undefined }
      db.failing.set(e, failure)
      db.signal.bump() // the failure transaction's NOTIFY
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failing", failing: [failure], pending: [e] })
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("cross-scope: waitForStream discovers the stream's pending events in the database", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [a, b] = [uuid(), uuid()]
      db.pending.add(a).add(b)
      const fiber = yield* start((yield* awaiter).waitForStream("p", uuid()))
      db.pending.clear()
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Synced", eventsAwaited: 2 })
    }).pipe(Effect.provide(db.layer))
  })
})

describe("EventCompletionAwaiter with a database port (every perspective, any instance)", () => {
  const completion = Effect.service(EventCompletionAwaiter.EventCompletionAwaiter)

  it.effect("untracked here, applied elsewhere: answered from the database after one check, not a timeout", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const e = uuid()
      const fiber = yield* start((yield* completion).waitForEvents([e], { timeout: "3 seconds" }))
      expect(isRunning(fiber)).toBe(false)
      expect((yield* Fiber.join(fiber))._tag).toBe("NoPendingEvents")
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("pending in the database: resumes on the change signal once no perspective has it", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const e = uuid()
      db.pending.add(e)
      const fiber = yield* start((yield* completion).waitForEvents([e], { timeout: "10 seconds" }))
      expect(isRunning(fiber)).toBe(true)
      db.pending.delete(e)
      db.signal.bump()
      expect((yield* Fiber.join(fiber))._tag).toBe("Synced")
      expect(yield* (yield* completion).areEventsFullyProcessed([e])).toBe(true)
    }).pipe(Effect.provide(db.layer))
  })

  it.effect("dead-lettered by one perspective: DeadLettered at once, naming it", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [dead, other] = [uuid(), uuid()]
      db.pending.add(other).add(dead)
      const fiber = yield* start((yield* completion).waitForEvents([dead, other], { timeout: "10 seconds" }))
      db.pending.delete(dead)
      db.deadLettered.add(dead)
      db.signal.bump()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "DeadLettered", deadLettered: [dead] })
      expect(yield* (yield* completion).areEventsFullyProcessed([dead])).toBe(false)
    }).pipe(Effect.provide(db.layer))
  })
})

describe("EventCompletionAwaiter with a failing event", () => {
  const completion = Effect.service(EventCompletionAwaiter.EventCompletionAwaiter)

  it.effect("held by a failing event in one perspective: Failing at once, naming it; not fully processed", () => {
    const db = fakeDatabase()
    return Effect.gen(function* () {
      const [s, e] = [uuid(), uuid()]
      const failure = { eventId: e, streamId: s, perspectiveName: "p", error: "boom", attempts: 2, nextAttemptAt: undefined }
      db.pending.add(e)
      db.failing.set(e, failure)
      const fiber = yield* start((yield* completion).waitForEvents([e], { timeout: "10 seconds" }))
      expect(isRunning(fiber)).toBe(false)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failing", failing: [failure], pending: [e] })
      expect(yield* (yield* completion).areEventsFullyProcessed([e])).toBe(false)
    }).pipe(Effect.provide(db.layer))
  })
})

describe("SyncInquiry.isSettled", () => {
  it("dead-lettered expected ids settle the wait but are not fully synced", () => {
    const [a, b] = [uuid(), uuid()]
    const result = {
      inquiryId: uuid(),
      pendingCount: 0,
      processedCount: 1,
      processedEventIds: [a],
      deadLetteredEventIds: [b],
      expectedEventIds: [a, b]
    }
    expect(SyncInquiry.isSettled(result)).toBe(true)
    expect(SyncInquiry.isFullySynced(result)).toBe(false)
    expect(SyncInquiry.isSettled({ ...result, deadLetteredEventIds: [] })).toBe(false)
  })
})
