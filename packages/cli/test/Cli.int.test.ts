import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient, PgPerspectiveVersions } from "@whizbang/postgres"
import { Effect } from "effect"
import pg from "pg"
import { type FreshDatabase, freshDatabase } from "../../postgres/test/fixtures/freshDatabase.js"
import { cli } from "./fixtures/runCli.js"
import { runInProcess } from "./fixtures/runInProcess.js"

// Every command is run as a separate process against a fresh database, as an operator would run it.
let db: FreshDatabase
beforeAll(async () => {
  db = await freshDatabase()
}, 60_000)
afterAll(() => db?.drop())

const env = () => ({ DATABASE_URL: db.url })
const sql = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.scoped(
    Effect.flatMap(PgClient.make({ url: db.url, schema: "whizbang", maxConnections: 1 }), (c) => c.query<Record<string, any>>(text, params))
  ).pipe(Effect.orDie)

const register = (declared: ReadonlyArray<PgPerspectiveVersions.Declared>) =>
  PgPerspectiveVersions.register(declared).pipe(
    Effect.provide(PgClient.layer({ url: db.url, schema: "whizbang", maxConnections: 1 })),
    Effect.orDie
  )

const seedEvent = (streamId: string, version: number, type = "Deposited", perspective: string | null = "balance", ageSeconds = 120) =>
  Effect.gen(function* () {
    const eventId = randomUUID()
    yield* sql(
      `insert into wh_events (event_id, stream_id, stream_version, event_type, payload, created_at) values ($1, $2, $3, $4, '{"amount": 1}', now() - make_interval(secs => $5))`,
      [eventId, streamId, version, type, ageSeconds]
    )
    if (perspective !== null) {
      yield* sql(
        `insert into wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, created_at) values (gen_random_uuid(), $1, $2, $3, 0, now() - make_interval(secs => $4))`,
        [streamId, perspective, eventId, ageSeconds]
      )
    }
    return eventId
  })

const deadLetter = (perspective: string) =>
  Effect.gen(function* () {
    const streamId = randomUUID()
    const eventId = yield* seedEvent(streamId, 1, "Deposited", null)
    const [row] = yield* sql(
      `insert into wh_dead_letters (work_id, stream_id, perspective_name, event_id, event_type, payload, error, attempts) values (gen_random_uuid(), $1, $2, $3, 'Deposited', '{"amount": 1}', 'boom', 3) returning id`,
      [streamId, perspective, eventId]
    )
    return { id: String(row!.id), streamId, eventId }
  })

/**
 * A LISTEN on `wh_work` for the test: `next` resolves with the payload of the next notification not yet taken (a
 * worker's wake-up), or fails after 10 s.
 */
const workNotifications = Effect.acquireRelease(
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: db.url })
    await client.connect()
    const payloads: Array<string> = []
    const waiting: Array<(payload: string) => void> = []
    client.on("notification", (n) => {
      const resolve = waiting.shift()
      if (resolve === undefined) payloads.push(n.payload ?? "")
      else resolve(n.payload ?? "")
    })
    await client.query("LISTEN wh_work")
    const next = Effect.callback<string>((resume) => {
      const ready = payloads.shift()
      if (ready !== undefined) resume(Effect.succeed(ready))
      else waiting.push((payload) => resume(Effect.succeed(payload)))
    }).pipe(Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error("no wh_work notification in 10 s")) }))
    return { client, next, pending: () => payloads.length }
  }),
  ({ client }) => Effect.promise(() => client.end())
)

describe("whizbang CLI", () => {
  it.live(
    "migrate applies the migrations once and reports them (--json), then is a no-op",
    () =>
      Effect.gen(function* () {
        const first = yield* cli(["migrate", "--json"], env())
        expect(first.code).toBe(0)
        expect(first.json().applied).toContain("0000_init")
        const again = yield* cli(["migrate"], env())
        expect(again.code).toBe(0)
        expect(again.stdout).toMatch(/schema whizbang is up to date/)
      }),
    120_000
  )

  it.live(
    "status reports per-perspective work, lag, failures, dead letters, instances, locks and stuck streams",
    () =>
      Effect.gen(function* () {
        const stream = randomUUID()
        yield* seedEvent(stream, 1, "Deposited", "orders_summary")
        yield* seedEvent(stream, 2, "Deposited", "orders_summary")
        yield* sql(
          `insert into wh_perspective_cursors (stream_id, perspective_name, status, error, processed_at) values ($1, 'orders_summary', 4, 'boom', now() - interval '10 minutes')`,
          [stream]
        )
        const instance = randomUUID()
        yield* sql(
          `insert into wh_service_instances (instance_id, service_name, host_name, process_id, last_heartbeat_at) values ($1, 'orders', 'web-1', 42, now() - interval '3 seconds')`,
          [instance]
        )
        yield* sql(
          `update wh_perspective_cursors set stream_lock_instance_id = $1, stream_lock_expiry = now() + interval '1 minute', stream_lock_reason = 'rewind' where stream_id = $2`,
          [instance, stream]
        )
        yield* deadLetter("orders_summary")

        const json = yield* cli(["status", "--json"], env())
        expect(json.code).toBe(0)
        const snapshot = json.json()
        const summary = snapshot.perspectives.find((p: any) => p.perspective === "orders_summary")
        expect(summary).toMatchObject({ streams: 1, pending: 2, pendingStreams: 1, failed: 1, deadLetters: 1 })
        expect(summary.lagSeconds).toBeGreaterThan(100)
        expect(snapshot.instances).toMatchObject([{ instanceId: instance, serviceName: "orders", hostName: "web-1", processId: 42 }])
        expect(snapshot.locks).toMatchObject([{ streamId: stream, perspective: "orders_summary", instanceId: instance, reason: "rewind" }])
        expect(snapshot.stuck).toMatchObject([
          { streamId: stream, perspective: "orders_summary", pending: 2, reason: { _tag: "StreamLocked" } }
        ])
        expect(snapshot.waiting).toMatchObject([
          { streamId: stream, perspective: "orders_summary", reason: { _tag: "StreamLocked", instanceId: instance, lockReason: "rewind" } }
        ])

        const human = yield* cli(["status"], env())
        expect(human.code).toBe(0)
        expect(human.stdout).toMatch(/PERSPECTIVES/)
        expect(human.stdout).toMatch(/orders_summary\s+1\s+2\s+2 events\s+\d+m \d+s\s+1\s+1/)
        expect(human.stdout).toMatch(/web-1\s+42/)
        expect(human.stdout).toMatch(/StreamLocked/)
        expect(human.stdout).toMatch(/WAITING \(cannot move now\)\n.*\n.*StreamLocked\s+stream lock held by/)

        const failed = yield* cli(["failed", "--json", "--perspective", "orders_summary"], env())
        expect(failed.json()).toMatchObject([{ streamId: stream, perspective: "orders_summary", error: "boom", attempts: 0 }])
        yield* sql("update wh_perspective_cursors set stream_lock_instance_id = null, stream_lock_expiry = null, stream_lock_reason = null")
      }),
    120_000
  )

  it.live(
    "dead-letters list / show / discard, with confirmation refused without a terminal",
    () =>
      Effect.gen(function* () {
        const letter = yield* deadLetter("ledger")
        const list = yield* cli(["dead-letters", "list", "--json", "-p", "ledger"], env())
        expect(list.json()).toMatchObject([{ id: letter.id, perspective: "ledger", eventId: letter.eventId, attempts: 3, error: "boom" }])
        const show = yield* cli(["dead-letters", "show", letter.id], env())
        expect(show.code).toBe(0)
        expect(show.stdout).toMatch(/payload\s+\{"amount":1\}/)

        const refused = yield* cli(["dead-letters", "discard", letter.id], env())
        expect(refused.code).toBe(4)
        expect(refused.stderr).toMatch(/refusing without a terminal.*--yes/)
        expect(yield* sql("select id from wh_dead_letters where id = $1", [letter.id])).toHaveLength(1)

        const discarded = yield* cli(["dead-letters", "discard", letter.id, "--yes", "--json"], env())
        expect(discarded.code).toBe(0)
        expect(discarded.json()).toEqual({ discarded: letter.id })
        expect(yield* sql("select id from wh_dead_letters where id = $1", [letter.id])).toHaveLength(0)

        const missing = yield* cli(["dead-letters", "show", letter.id, "--json"], env())
        expect(missing.code).toBe(3)
        expect(missing.json()).toMatchObject({ error: { reason: "NotFound" } })
      }),
    120_000
  )

  it.live(
    "dead-letters retry moves the letter back into the work queue with attempts 0",
    () =>
      Effect.gen(function* () {
        const letter = yield* deadLetter("ledger")
        const notifications = yield* workNotifications
        const retried = yield* cli(["dead-letters", "retry", letter.id, "--json"], env())
        expect(retried.code).toBe(0)
        // The workers are woken (a tenant's fleet is started by nothing else).
        expect(yield* notifications.next).toBe("whizbang")
        expect(retried.json()).toMatchObject({ id: letter.id, eventId: letter.eventId, perspective: "ledger", streamId: letter.streamId })
        expect(
          yield* sql("select attempts, error from wh_perspective_events where event_id = $1 and perspective_name = 'ledger'", [
            letter.eventId
          ])
        ).toEqual([{ attempts: 0, error: null }])
        expect(yield* sql("select id from wh_dead_letters where id = $1", [letter.id])).toHaveLength(0)
        expect((yield* cli(["dead-letters", "retry", letter.id], env())).code).toBe(3)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "rewind flags one stream's cursor, or every cursor of a perspective with a progress bar",
    () =>
      Effect.gen(function* () {
        const streams = Array.from({ length: 5 }, () => randomUUID())
        const firsts: Array<string> = []
        for (const s of streams) {
          firsts.push(yield* seedEvent(s, 1, "Deposited", null))
          yield* seedEvent(s, 2, "Deposited", null)
          yield* sql(`insert into wh_perspective_cursors (stream_id, perspective_name, status) values ($1, 'rewound', 2)`, [s])
        }
        const one = yield* cli(["rewind", "rewound", "--stream", streams[0]!, "--json"], env())
        expect(one.json()).toEqual({ perspective: "rewound", streams: 1, enqueued: 0 })
        expect(yield* sql("select status, rewind_trigger_event_id from wh_perspective_cursors where stream_id = $1", [streams[0]])).toEqual(
          [{ status: 34, rewind_trigger_event_id: firsts[0] }]
        )
        expect(
          yield* sql("select count(*)::int as n from wh_perspective_cursors where perspective_name = 'rewound' and status & 32 <> 0")
        ).toEqual([{ n: 1 }])

        const all = yield* cli(["rewind", "rewound", "--batch-size", "2"], env())
        expect(all.code).toBe(0)
        expect(all.stdout).toMatch(/flagged 5 cursor\(s\) of rewound/)
        expect(all.stderr).toMatch(/rewind \[#+\] 100% 5\/5 streams/)
        expect(all.stderr.split("\n").filter((l) => l.startsWith("rewind ["))).toHaveLength(4)
        expect(
          yield* sql("select count(*)::int as n from wh_perspective_cursors where perspective_name = 'rewound' and status & 32 <> 0")
        ).toEqual([{ n: 5 }])

        const unknownStream = yield* cli(["rewind", "rewound", "--stream", randomUUID()], env())
        expect(unknownStream.code).toBe(3)
      }),
    120_000
  )

  it.live(
    "rebuild refuses what the service did not register, then deletes rows and cursors and plans the history of every type it handles for the replay",
    () =>
      Effect.gen(function* () {
        yield* sql(
          `create table if not exists wh_per_rebuilt (id uuid primary key, data jsonb not null, metadata jsonb not null default '{}', scope jsonb not null default '{}', created_at timestamptz not null default now(), updated_at timestamptz not null default now(), version bigint not null default 1)`
        )
        const streams = Array.from({ length: 3 }, () => randomUUID())
        for (const s of streams) {
          yield* seedEvent(s, 1, "RebuiltDeposited", null)
          yield* seedEvent(s, 2, "Ignored", null)
          yield* seedEvent(s, 3, "RebuiltDeposited", null)
          yield* sql(`insert into wh_perspective_cursors (stream_id, perspective_name, status) values ($1, 'rebuilt', 2)`, [s])
          yield* sql(`insert into wh_per_rebuilt (id, data) values ($1, '{"balance": 99}')`, [s])
        }
        // What an instance of the service registers when it starts (its table becomes version 1's, read through a view).
        yield* register([
          { name: "rebuilt", baseName: "rebuilt", version: 1, eventTypes: ["RebuiltDeposited"] },
          { name: "ignored_log", baseName: "ignored_log", version: 1, eventTypes: ["Ignored"] }
        ])
        const nothingWritten = () =>
          Effect.gen(function* () {
            expect(yield* sql("select count(*)::int as n from wh_per_rebuilt")).toEqual([{ n: 3 }])
            expect(yield* sql("select count(*)::int as n from wh_perspective_cursors where perspective_name = 'rebuilt'")).toEqual([
              { n: 3 }
            ])
            expect(yield* sql("select count(*)::int as n from wh_perspective_events where perspective_name like 'rebuil%'")).toEqual([
              { n: 0 }
            ])
          })

        const misspelled = yield* cli(["rebuild", "rebuild", "-t", "RebuiltDeposited", "--yes"], env())
        expect(misspelled.code).toBe(3)
        expect(misspelled.stderr).toBe('whizbang: unknown perspective "rebuild"; registered: ignored_log, rebuilt\n')
        const wrongType = yield* cli(["rebuild", "rebuilt", "-t", "RebuiltDeposit", "--yes"], env())
        expect(wrongType.code).toBe(2)
        expect(wrongType.stderr).toMatch(
          /unknown event type "RebuiltDeposit": no registered perspective handles it; rebuilt handles: RebuiltDeposited/
        )
        const notHandled = yield* cli(["rebuild", "rebuilt", "-t", "Ignored", "--yes"], env())
        expect(notHandled.code).toBe(2)
        expect(notHandled.stderr).toMatch(/rebuilt does not handle "Ignored" \(ignored_log does\)/)
        const refused = yield* cli(["rebuild", "rebuilt"], env())
        expect(refused.code).toBe(4)
        expect(refused.stderr).toMatch(
          /rebuild rebuilt in place: empties 3 row\(s\) of wh_per_rebuilt__v1 and resets 3 stream\(s\) .* plans 6 event\(s\) of RebuiltDeposited for the replay .* refusing without a terminal/
        )
        yield* nothingWritten()

        // No -t: every type it handles (and only those: the Ignored events are not planned), planned for the replay.
        const rebuilt = yield* cli(["rebuild", "rebuilt", "--yes", "--json"], env())
        expect(rebuilt.code).toBe(0)
        expect(rebuilt.json()).toEqual({ perspective: "rebuilt", streams: 3, enqueued: 0, planned: 6 })
        expect(yield* sql("select count(*)::int as n from wh_per_rebuilt")).toEqual([{ n: 0 }])
        expect(yield* sql("select count(*)::int as n from wh_perspective_cursors where perspective_name = 'rebuilt'")).toEqual([{ n: 0 }])
        expect(yield* sql("select count(*)::int as n from wh_perspective_events where perspective_name = 'rebuilt'")).toEqual([{ n: 0 }])
        expect(yield* sql("select count(*)::int as n from wh_perspective_backfill where perspective_name = 'rebuilt'")).toEqual([{ n: 3 }])
      }),
    120_000
  )

  it.live(
    "failed shows each cursor's whole error: wrapped to the screen, on one line with --wide, in full with --json",
    () =>
      Effect.gen(function* () {
        const stream = randomUUID()
        const error = `perspective "long_errors" failed to apply Deposited ${randomUUID()}: ${"the reason goes on and on ".repeat(12)}(the end)`
        yield* sql(
          `insert into wh_perspective_cursors (stream_id, perspective_name, status, error, processed_at) values ($1, 'long_errors', 4, $2, now())`,
          [stream, error]
        )
        const wrapped = yield* runInProcess(["--database-url", db.url, "failed", "-p", "long_errors"])
        expect(wrapped.code).toBe(0)
        const lines = wrapped.stdout.trimEnd().split("\n")
        expect(lines[0]).toMatch(/^\s+STREAM\s+PERSPECTIVE\s+STOPPED AT\s+ATTEMPTS\s+RETRY AFTER\s+ERROR$/)
        expect(lines[1]).toMatch(new RegExp(`^\\s+${stream}\\s+long_errors\\s+-\\s+-\\s+-`))
        for (const line of lines) expect(line.length).toBeLessThanOrEqual(120)
        expect(lines.length).toBeGreaterThan(3)
        expect(lines.map((l) => l.trim()).join(" ")).toContain(error.trim())

        const wide = yield* runInProcess(["--database-url", db.url, "failed", "-p", "long_errors", "--wide"])
        expect(wide.stdout.trimEnd().split("\n")).toHaveLength(2)
        expect(wide.stdout).toContain(error.trim())
        const json = yield* runInProcess(["--database-url", db.url, "failed", "-p", "long_errors", "--json"])
        expect(json.json()).toMatchObject([{ streamId: stream, error }])
      }),
    120_000
  )

  it.live(
    "locks list and release --force (refused without --force, and without a terminal unless --yes)",
    () =>
      Effect.gen(function* () {
        const stream = randomUUID()
        const holder = randomUUID()
        yield* sql(
          `insert into wh_perspective_cursors (stream_id, perspective_name, status, stream_lock_instance_id, stream_lock_expiry, stream_lock_reason) values ($1, 'locked', 2, $2, now() + interval '5 minutes', 'rewind')`,
          [stream, holder]
        )
        const list = yield* cli(["locks", "list", "--json", "-p", "locked"], env())
        expect(list.json()).toMatchObject([
          { streamId: stream, perspective: "locked", instanceId: holder, reason: "rewind", expired: false }
        ])
        expect((yield* cli(["locks", "release", "-p", "locked"], env())).code).toBe(4)
        const noTty = yield* cli(["locks", "release", "--force", "-p", "locked"], env())
        expect(noTty.code).toBe(4)
        expect(noTty.stderr).toMatch(/force-release 1 stream lock\(s\)\? — refusing without a terminal/)
        const notifications = yield* workNotifications
        const released = yield* cli(["locks", "release", "--force", "--yes", "-p", "locked", "--json"], env())
        expect(released.code).toBe(0)
        // Work held behind the lock is claimable now: the workers are told.
        expect(yield* notifications.next).toBe("whizbang")
        expect(released.json()).toEqual([{ streamId: stream, perspective: "locked", heldBy: holder, reason: "rewind" }])
        expect(yield* sql("select stream_lock_instance_id from wh_perspective_cursors where stream_id = $1", [stream])).toEqual([
          { stream_lock_instance_id: null }
        ])
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "bad input exits 2 with a clear message; a database failure exits 1",
    () =>
      Effect.gen(function* () {
        const badId = yield* cli(["dead-letters", "show", "not-a-uuid"], env())
        expect(badId.code).toBe(2)
        expect(badId.stderr).toMatch(/id must be a UUID, got "not-a-uuid"/)
        const badName = yield* cli(["rewind", "Bad-Name"], env())
        expect(badName.code).toBe(2)
        expect(badName.stderr).toMatch(/invalid perspective name "Bad-Name"/)
        const noUrl = yield* cli(["status"], { DATABASE_URL: "" })
        expect(noUrl.code).toBe(2)
        expect(noUrl.stderr).toMatch(/pass --database-url or set DATABASE_URL/)
        const unknown = yield* cli(["frobnicate"], env())
        expect(unknown.code).toBe(2)
        const wrongSchema = yield* cli(["--schema", "nowhere", "status"], env())
        expect(wrongSchema.code).toBe(1)
        expect(wrongSchema.stderr).toBe(
          'whizbang: database: relation "wh_service_instances" does not exist in schema "nowhere": pass --schema with the service\'s schema (default "whizbang"); schemas with Whizbang tables in this database: whizbang\n'
        )
        const down = new URL(db.url)
        down.port = "1"
        const unreachable = yield* cli(["status", "--database-url", down.toString()], {})
        expect(unreachable.code).toBe(1)
      }),
    120_000
  )
})
