// What a worker claims: only work it can apply now (no spin on streams in backoff, under a stream lock or waiting
// for a rewind; such a worker is idle and `status` says why each waits), only the perspectives it runs (a rolling
// deploy dead-letters nothing), oldest first, and on an index with 100k+ pending rows.
import { describe, expect } from "@effect/vitest"
import { EventId, EventStore, InstanceProvider, PerspectiveStatus, PerspectiveStore } from "@whizbang/core"
import { PgClient, PgPerspectivePipeline, PgStatus, PgWatchdog, PgWorkCoordinator, SchemaReady } from "@whizbang/postgres"
import { Context, Duration, Effect, Layer } from "effect"
import * as Claim from "../src/sql/claimWork.js"
import * as Bank from "./fixtures/bank.js"
import { type Node, startNode } from "./fixtures/instances.js"
import { scenario } from "./fixtures/scenario.js"

const sql = <Row extends object = Record<string, unknown>>(node: Node, text: string, params: ReadonlyArray<unknown> = []) =>
  node.run(Effect.flatMap(Effect.service(PgClient.PgClient), (c) => c.query<Row>(text, params))).pipe(Effect.orDie)

const count = (node: Node, from: string, params: ReadonlyArray<unknown> = []) =>
  Effect.map(sql<{ n: number }>(node, `select count(*)::int as n from ${from}`, params), ([r]) => r!.n)

/**
 * A process that appends for every Bank perspective and runs no worker (not registered): with it, work of a
 * perspective that no worker runs can exist, as in a rolling deploy. Its coordinator is driven by hand.
 */
const startWriter = (url: string) =>
  Layer.build(
    PgPerspectivePipeline.layerPorts({ events: Bank.events, perspectives: Bank.perspectives }).pipe(
      Layer.provideMerge(SchemaReady.layer),
      Layer.provideMerge(PgClient.layer({ url, schema: "bank", maxConnections: 4 })),
      Layer.provideMerge(InstanceProvider.layerMemory({ serviceName: "bank-writer" })),
      Layer.orDie
    )
  )

const deposits = (id: string, amounts: ReadonlyArray<number>) => amounts.map((amount) => Bank.Deposited.make({ accountId: id, amount }))

describe("claims", () => {
  scenario(
    "streams that cannot move are not re-claimed: about one claim per poll, the worker is idle, status names why each waits",
    (url) =>
      Effect.gen(function* () {
        const claims = { calls: 0, streams: 0 }
        const pollMillis = 100
        const node = yield* startNode({
          url,
          options: {
            pollingInterval: pollMillis,
            notifyHealthyPollingInterval: pollMillis,
            maxPerspectiveEventAttempts: 10
          },
          failureBackoff: { initial: Duration.minutes(1), multiplier: 2, max: Duration.minutes(1) },
          wrap: (inner) => ({
            ...inner,
            claimWork: (request) =>
              inner.claimWork(request).pipe(
                Effect.tap((ids) =>
                  Effect.sync(() => {
                    claims.calls++
                    claims.streams += ids.length
                  })
                )
              ),
            // The worker claims through this one when the coordinator has it (the Postgres one does).
            claimAndFetch: (request) =>
              inner.claimAndFetch!(request).pipe(
                Effect.tap(({ streams }) =>
                  Effect.sync(() => {
                    claims.calls++
                    claims.streams += streams.length
                  })
                )
              )
          })
        })
        const store = yield* node.run(Effect.service(EventStore.EventStore))
        const failing = EventId.unsafeMake()
        const locked = EventId.unsafeMake()
        const flagged = EventId.unsafeMake()
        yield* Effect.orDie(
          store.append(failing, [
            Bank.Deposited.make({ accountId: failing, amount: 1 }),
            Bank.Audited.make({ accountId: failing, fail: true }),
            ...deposits(failing, [2])
          ])
        )
        yield* Effect.orDie(store.append(locked, deposits(locked, [1])))
        yield* Effect.orDie(store.append(flagged, deposits(flagged, [1])))
        // The failing stream waits out a 60 s backoff: that alone must not keep the worker busy.
        yield* node.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
        // A purge elsewhere holds `locked`'s lock; `flagged` waits for a rewind (no rewinder here: it waits for good).
        const holder = globalThis.crypto.randomUUID()
        yield* sql(
          node,
          `update wh_perspective_cursors set stream_lock_instance_id = $2, stream_lock_expiry = now() + interval '5 minutes', stream_lock_reason = 'purge'
                        where stream_id = $1 and perspective_name = 'balance'`,
          [locked, holder]
        )
        yield* sql(
          node,
          `update wh_perspective_cursors set status = status | 32, rewind_trigger_event_id = last_event_id, rewind_flagged_at = now(), rewind_first_flagged_at = now()
                        where stream_id = $1 and perspective_name = 'balance'`,
          [flagged]
        )
        yield* Effect.orDie(store.append(locked, deposits(locked, [2])))
        yield* Effect.orDie(store.append(flagged, deposits(flagged, [2])))
        yield* node.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
        // Blocked balance work is all that is left (the activity pairs applied).
        expect(yield* count(node, "wh_perspective_events where perspective_name = 'activity'")).toBe(0)
        expect(yield* count(node, "wh_perspective_events where perspective_name = 'balance'")).toBe(4)

        // The claim rate while only blocked streams exist, over 30 polls (counted, not slept).
        const polls = (yield* node.worker.stats).polls
        const before = { ...claims }
        const started = Date.now()
        yield* node.worker.awaitPolls(polls + 30).pipe(Effect.timeout(Duration.seconds(30)), Effect.orDie)
        const seconds = (Date.now() - started) / 1000
        const perSecond = (claims.calls - before.calls) / seconds
        const claimedPerSecond = (claims.streams - before.streams) / seconds
        console.log(
          `blocked streams only: ${perSecond.toFixed(1)} claims/s with a ${pollMillis} ms poll (${1000 / pollMillis}/s); ${claimedPerSecond.toFixed(1)} streams claimed/s`
        )
        expect(perSecond).toBeGreaterThan(0)
        expect(perSecond).toBeLessThan(2 * (1000 / pollMillis))
        // Only the flagged stream is ever re-claimed, once per hold (idleThresholdPolls + 1 polls).
        expect(claimedPerSecond).toBeLessThanOrEqual(1000 / (pollMillis * 3) + 1)
        expect(yield* node.worker.isIdle).toBe(true)
        yield* node.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(5)), Effect.orDie)

        const snapshot = yield* node.run(PgStatus.snapshot()).pipe(Effect.orDie)
        const why = (streamId: string) => snapshot.waiting.find((w) => w.streamId === streamId && w.perspective === "balance")?.reason
        expect(why(failing)).toMatchObject({
          _tag: "FailingEvent",
          attempts: 1,
          error: expect.stringMatching(/audit rejected/),
          backoffUntil: expect.any(String)
        })
        expect(why(locked)).toMatchObject({ _tag: "StreamLocked", instanceId: holder, lockReason: "purge" })
        expect(why(flagged)).toMatchObject({ _tag: "RewindPending", flaggedAt: expect.any(String) })
        expect(snapshot.waiting).toHaveLength(3)
        for (const w of snapshot.waiting) expect(w.message.length).toBeGreaterThan(10)
      }),
    90_000
  )

  scenario(
    "rolling deploy: work of a perspective no live instance runs waits, is shown, never dead-lettered, and is applied once one runs it",
    (url) =>
      Effect.gen(function* () {
        const writer = yield* startWriter(url)
        const store = Context.get(writer, EventStore.EventStore)
        // The old version runs only `balance`; one failed attempt would dead-letter, so any attempt would show.
        const old = yield* startNode({ url, perspectives: [Bank.balance], options: { maxPerspectiveEventAttempts: 1 } })
        const streams = Array.from({ length: 20 }, () => EventId.unsafeMake())
        yield* Effect.forEach(streams, (id) => Effect.orDie(store.append(id, deposits(id, [1, 2, 3]))), { discard: true })
        yield* old.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
        const balances = yield* old
          .run(Effect.flatMap(Effect.service(PerspectiveStore.PerspectiveStore), (s) => s.getMany("balance", streams)))
          .pipe(Effect.orDie)
        for (const id of streams) expect(balances.get(id)?.data).toEqual({ balance: 6, audits: 0 })
        expect(yield* count(old, "wh_perspective_events where perspective_name = 'activity' and attempts = 0")).toBe(60)
        expect(yield* count(old, "wh_dead_letters")).toBe(0)
        // The old instance holds no lease on work it does not run.
        expect(yield* count(old, "wh_active_streams")).toBe(0)

        const snapshot = yield* old.run(PgStatus.snapshot()).pipe(Effect.orDie)
        expect(snapshot.perspectives.find((p) => p.perspective === "activity")).toMatchObject({
          pending: 60,
          pendingStreams: 20,
          runningInstances: 0
        })
        expect(snapshot.perspectives.find((p) => p.perspective === "balance")).toMatchObject({ pending: 0, runningInstances: 1 })
        expect(snapshot.instances.map((i) => i.perspectives)).toEqual([["balance"]])
        expect(snapshot.waiting).toHaveLength(20)
        for (const w of snapshot.waiting) {
          expect(w.reason).toEqual({ _tag: "NoInstanceRunsPerspective", perspective: "activity", liveInstances: 1 })
          expect(w.message).toMatch(
            /no live instance runs perspective "activity" .*\(removed from the code\? whizbang retire activity stops routing to it\)$/
          )
        }
        const named = yield* old.run(PgWatchdog.diagnose({ stuckAfter: 0 })).pipe(Effect.orDie)
        expect(new Set(named.map((s) => s.reason._tag))).toEqual(new Set(["NoInstanceRunsPerspective"]))

        // The new version starts, running both.
        const next = yield* startNode({ url, options: { maxPerspectiveEventAttempts: 1 } })
        yield* next.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
        yield* old.worker.awaitIdle.pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
        const activities = yield* next
          .run(Effect.flatMap(Effect.service(PerspectiveStore.PerspectiveStore), (s) => s.getMany("activity", streams)))
          .pipe(Effect.orDie)
        for (const id of streams) expect((activities.get(id)?.data as { order: Array<number> }).order).toEqual([1, 2, 3])
        expect(yield* count(next, "wh_perspective_events")).toBe(0)
        expect(yield* count(next, "wh_dead_letters")).toBe(0)
        expect((yield* next.run(PgStatus.snapshot()).pipe(Effect.orDie)).waiting).toEqual([])
      }),
    90_000
  )

  scenario("a claim commits without waiting for its WAL flush (its own transaction only); the completion waits for it", (url) =>
    Effect.gen(function* () {
      const writer = yield* startWriter(url)
      const client = Context.get(writer, PgClient.PgClient)
      // A deferred constraint trigger runs at commit: it records the synchronous_commit the committing transaction has.
      yield* Effect.orDie(
        client.query(`
          CREATE TABLE commit_settings (at timestamptz DEFAULT clock_timestamp(), tbl text, setting text);
          CREATE FUNCTION record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO commit_settings (tbl, setting) VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'));
            RETURN NULL;
          END $$;
          CREATE CONSTRAINT TRIGGER commit_setting AFTER INSERT OR DELETE ON wh_active_streams
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION record_commit_setting();
          CREATE CONSTRAINT TRIGGER commit_setting AFTER INSERT OR UPDATE ON wh_perspective_cursors
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION record_commit_setting();`)
      )
      const server = (yield* Effect.orDie(client.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s")))[0]!.s
      const store = Context.get(writer, EventStore.EventStore)
      const id = EventId.unsafeMake()
      yield* Effect.orDie(store.append(id, deposits(id, [5])))
      const coordinator = yield* PgWorkCoordinator.make().pipe(Effect.provide(writer))
      const { instanceId } = Context.get(writer, InstanceProvider.InstanceProvider)
      const claimed = yield* Effect.orDie(
        coordinator.claimWork({ instanceId, maxStreams: 10, leaseSeconds: 30, perspectiveNames: ["balance"] })
      )
      expect(claimed).toEqual([id])
      const settings = () =>
        Effect.orDie(client.query<{ tbl: string; setting: string }>("SELECT tbl, setting FROM commit_settings ORDER BY at"))
      expect(yield* settings()).toEqual([{ tbl: "wh_active_streams", setting: "off" }])
      // The session's own setting is untouched afterwards (the claim set it for its transaction only).
      const after = (yield* Effect.orDie(client.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s")))[0]!.s
      expect(after).toBe(server)
      // The completion (model, cursor, work rows) commits with the server's setting.
      const [row] = yield* Effect.orDie(coordinator.fetchPendingEvents({ instanceId, streamIds: [id], perspectiveNames: ["balance"] }))
      yield* Effect.orDie(
        coordinator.reportCompletions([
          {
            workIds: [row!.workId],
            streamId: id,
            perspectiveName: "balance",
            lastEventId: row!.eventId,
            status: PerspectiveStatus.PerspectiveStatus.Completed,
            cursorAtFetch: row!.cursorLastEventId
          }
        ])
      )
      const cursorCommits = (yield* settings()).filter((r) => r.tbl === "wh_perspective_cursors")
      expect(cursorCommits.length).toBeGreaterThan(0)
      expect(new Set(cursorCommits.map((r) => r.setting))).toEqual(new Set([server]))
    })
  )

  scenario("claims take the oldest pending work first, and return the streams in that order", (url) =>
    Effect.gen(function* () {
      const writer = yield* startWriter(url)
      const store = Context.get(writer, EventStore.EventStore)
      const streams = Array.from({ length: 6 }, () => EventId.unsafeMake())
      // Appended in an order unrelated to the stream ids.
      const order = [streams[3]!, streams[0]!, streams[5]!, streams[1]!, streams[4]!, streams[2]!]
      for (const id of order) yield* Effect.orDie(store.append(id, deposits(id, [1])))
      const coordinator = yield* PgWorkCoordinator.make().pipe(Effect.provide(writer))
      const { instanceId } = Context.get(writer, InstanceProvider.InstanceProvider)
      const first = yield* Effect.orDie(
        coordinator.claimWork({ instanceId, maxStreams: 3, leaseSeconds: 30, perspectiveNames: ["balance", "activity"] })
      )
      expect(first).toEqual(order.slice(0, 3))
      const rest = yield* Effect.orDie(
        coordinator.claimWork({ instanceId, maxStreams: 10, leaseSeconds: 30, exclude: first, perspectiveNames: ["balance"] })
      )
      expect(rest).toEqual(order.slice(3))
      // A perspective set with no pending work claims nothing.
      expect(
        yield* Effect.orDie(coordinator.claimWork({ instanceId, maxStreams: 10, leaseSeconds: 30, perspectiveNames: ["other"] }))
      ).toEqual([])
      const fetched = yield* Effect.orDie(coordinator.fetchPendingEvents({ instanceId, streamIds: order, perspectiveNames: ["activity"] }))
      expect(new Set(fetched.map((e) => e.perspectiveName))).toEqual(new Set(["activity"]))
      expect(fetched).toHaveLength(6)
    })
  )

  scenario(
    "live work first: a stream with live work is claimed before older background work (a version's history), background fills the queue only up to two batches, and a fetch spends a bounded budget on it, saying which pairs have more",
    (url) =>
      Effect.gen(function* () {
        const writer = yield* startWriter(url)
        const store = Context.get(writer, EventStore.EventStore)
        const client = Context.get(writer, PgClient.PgClient)
        const { instanceId } = Context.get(writer, InstanceProvider.InstanceProvider)
        const coordinator = yield* PgWorkCoordinator.make().pipe(Effect.provide(writer))
        // Five streams of history (appended first, so older event ids), made background work as a version's build
        // writes it (fires = false); then one live event on a sixth stream.
        const history = Array.from({ length: 5 }, () => EventId.unsafeMake()).sort()
        for (const id of history) yield* Effect.orDie(store.append(id, deposits(id, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])))
        yield* Effect.orDie(client.query("update wh_perspective_events set fires = false where stream_id = any($1::uuid[])", [history]))
        const live = EventId.unsafeMake()
        yield* Effect.orDie(store.append(live, deposits(live, [1])))
        const perspectiveNames = ["balance"]

        // With two batches of streams already queued (exclude), only live work is claimed.
        const queued = Array.from({ length: 4 }, () => EventId.unsafeMake())
        expect(
          yield* Effect.orDie(coordinator.claimWork({ instanceId, maxStreams: 2, leaseSeconds: 30, exclude: queued, perspectiveNames }))
        ).toEqual([live])
        // One stream at a time: the live one, although every history event is older.
        expect(yield* Effect.orDie(coordinator.claimWork({ instanceId, maxStreams: 1, leaseSeconds: 30, perspectiveNames }))).toEqual([
          live
        ])
        const claimed = yield* Effect.orDie(
          coordinator.claimWork({ instanceId, maxStreams: 10, leaseSeconds: 30, exclude: [live], perspectiveNames })
        )
        expect([...claimed].sort()).toEqual(history)

        // A budget of 15 background events: the first history pair whole, the second cut after 5 (and says so),
        // none of the others; the live event regardless.
        const fetched = yield* Effect.orDie(
          coordinator.fetchPendingEvents({ instanceId, streamIds: [live, ...history], limit: 100, perspectiveNames, backgroundLimit: 15 })
        )
        const byStream = (id: string) => fetched.filter((e) => e.streamId === id)
        expect(byStream(live).map((e) => [e.fires, e.more])).toEqual([[true, false]])
        expect(byStream(history[0]!)).toHaveLength(10)
        expect(byStream(history[0]!).every((e) => e.fires === false && e.more === false)).toBe(true)
        expect(byStream(history[1]!)).toHaveLength(5)
        expect(byStream(history[1]!).every((e) => e.more === true)).toBe(true)
        expect(history.slice(2).flatMap(byStream)).toEqual([])
        // In event order within the pair: the cut keeps a prefix.
        const cut = byStream(history[1]!).map((e) => e.eventId)
        expect(cut).toEqual([...cut].sort())
        // Without a budget, everything.
        const all = yield* Effect.orDie(
          coordinator.fetchPendingEvents({ instanceId, streamIds: [live, ...history], limit: 100, perspectiveNames })
        )
        expect(all).toHaveLength(51)
      })
  )

  scenario(
    "the claim stays on the work index with 100k pending rows, whether streams interleave or come in bursts",
    (url) =>
      Effect.gen(function* () {
        const writer = yield* startWriter(url)
        const client = Context.get(writer, PgClient.PgClient)
        const { instanceId } = Context.get(writer, InstanceProvider.InstanceProvider)
        // 2,000 streams x 50 events x 1 perspective; the event id (UUIDv7-shaped) orders them by `position`.
        const seed = (position: string) =>
          Effect.orDie(
            client.query(`
          insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at)
          select gen_random_uuid(), s.id, 'balance',
                 (lpad(to_hex(1700000000000 + ${position}), 12, '0') || '7000' || '8000' || lpad(to_hex(s.n), 12, '0'))::uuid,
                 s.n % 10000, now()
          from (select n, gen_random_uuid() as id from generate_series(1, 2000) n) s, generate_series(1, 50) g`)
          )
        const measure = (layout: string, position: string) =>
          Effect.gen(function* () {
            yield* Effect.orDie(client.query("delete from wh_active_streams"))
            yield* Effect.orDie(client.query("delete from wh_perspective_events"))
            yield* seed(position)
            yield* Effect.orDie(client.query("analyze wh_perspective_events"))
            const [row] = yield* Effect.orDie(
              client.query<{ "QUERY PLAN": Array<{ Plan: unknown; "Execution Time": number }> }>(
                `explain (analyze, format json) ${Claim.claimWork.sql}`,
                [instanceId, 300, 30, 30, 3000, [], ["balance"], 1]
              )
            )
            const plan = row!["QUERY PLAN"][0]!
            const text = JSON.stringify(plan.Plan)
            console.log(`claim of 300 streams over 100,000 pending rows (${layout}): ${plan["Execution Time"].toFixed(1)} ms`)
            expect(text).toContain("wh_perspective_events_claim_idx")
            // The search for background work (none here) walks its own, empty, index.
            expect(text).toContain("wh_perspective_events_background_claim_idx")
            expect(text).not.toMatch(/"Node Type":"Seq Scan"[^}]*"Relation Name":"wh_perspective_events"/)
            expect(plan["Execution Time"]).toBeLessThan(2000)
            expect(yield* Effect.orDie(client.query<{ n: number }>("select count(*)::int as n from wh_active_streams"))).toEqual([
              { n: 300 }
            ])
          })
        // Appends spread over time, and each stream's events written in one burst.
        yield* measure("interleaved", "g * 2000 + s.n")
        yield* measure("bursts", "s.n * 50 + g")
      }),
    90_000
  )
})
