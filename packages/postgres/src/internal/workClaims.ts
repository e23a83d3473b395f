/**
 * The coordinator's claims (`claimWork`, and `claimAndFetch`, which also fetches what it claimed): each run with the
 * release of the leases an empty claim leaves idle, the queue's statistics looked at after a claim that found a
 * backlog, and the claim's span.
 *
 * @internal
 */
import type { WorkCoordinator } from "@whizbang/core"
import { Effect } from "effect"
import type { PgClient } from "../PgClient.js"
import type * as PgQueueVacuum from "../PgQueueVacuum.js"
import type { PostgresError } from "../PostgresError.js"
import * as Claim from "../sql/claimWork.js"
import type * as Fetch from "../sql/fetchPendingEvents.js"
import { coordinatorError } from "./coordinatorError.js"
import * as BackgroundRest from "./backgroundRest.js"
import { toPendingEvents } from "./pendingRows.js"

type Service = WorkCoordinator.WorkCoordinator["Service"]
type ClaimRequest = Parameters<Service["claimWork"]>[0]

/** A claim-and-fetch's rows as its answer: the streams it claimed and their pending events. */
const claimedAndPending = (rows: ReadonlyArray<typeof Claim.ClaimAndFetchRow.Type>, modelsLoaded: boolean) => {
  // The statement's rows are unordered (see `internal/pendingRows.ts`): the claimed streams in claim order.
  const claimed: Array<Claim.ClaimedRow> = []
  const fetched: Array<Fetch.PendingRow> = []
  for (const r of rows) {
    if (r.part === 0) claimed.push(r)
    else fetched.push(r)
  }
  return {
    streams: claimed.sort((a, b) => a.claim_order - b.claim_order).map((r) => r.stream_id),
    pending: toPendingEvents(fetched, modelsLoaded)
  }
}

/** The claims of one coordinator (one instance). */
export const make = (
  client: PgClient["Service"],
  context: {
    readonly instanceId: string
    readonly staleSeconds: number
    readonly graceMillis: number
    readonly queueVacuum: ReturnType<typeof PgQueueVacuum.make>
  }
): { readonly claimWork: Service["claimWork"]; readonly claimAndFetch: NonNullable<Service["claimAndFetch"]> } => {
  const { instanceId, staleSeconds, graceMillis, queueVacuum } = context
  /**
   * Whether this instance may hold a lease on a stream without work. Leases come only from claims, and a claim
   * returns a row for every stream it leased, so only a claim that returned rows since the last release can have
   * left one; the first empty claim after it releases, the next ones do not (an idle poll is one statement, not
   * two). Cleared before the release is sent: a claim that committed before it is seen by it, one whose rows come
   * back after sets it again. True at start: a predecessor with this instance id may have left some.
   */
  let mayHoldIdleLeases = true
  const releaseIdle = Effect.suspend(() => {
    if (!mayHoldIdleLeases) return Effect.void
    mayHoldIdleLeases = false
    return Effect.tapError(Claim.releaseIdleStreams(client, { instanceId }), () =>
      Effect.sync(() => {
        mayHoldIdleLeases = true
      })
    )
  })
  /**
   * Runs a claim statement: an empty claim also drops this instance's leases on streams with no work left (a claim
   * that raced the stream's last completion can leave one behind). `streams`: how many streams the rows claimed. A
   * claim that took as many as it asked for has a backlog behind it, the one case where the queue's statistics can
   * be far behind (a replay, a rebuild's history): only then does the queue's upkeep look for stale statistics (one
   * statement on `pg_stat_user_tables`, which every tenant's first claim used to pay: bench t, 1,000 tenants of 10
   * streams each).
   */
  const claim = <Row>(
    statement: Effect.Effect<ReadonlyArray<Row>, PostgresError>,
    request: ClaimRequest,
    operation: string,
    streams: (rows: ReadonlyArray<Row>) => number
  ) =>
    statement.pipe(
      Effect.tap((rows) => {
        if (rows.length === 0) return releaseIdle
        mayHoldIdleLeases = true
        return streams(rows) >= request.maxStreams ? queueVacuum.claimed : Effect.void
      }),
      Effect.mapError(coordinatorError(operation)),
      Effect.withSpan(
        "whizbang.claim",
        { attributes: { "whizbang.instance_id": instanceId, "whizbang.max_streams": request.maxStreams } },
        { captureStackTrace: false }
      ),
      Effect.annotateLogs({ "whizbang.instance_id": instanceId })
    )
  const rest = BackgroundRest.make()
  const claimRequest = (request: ClaimRequest): Claim.ClaimRequest => ({
    instanceId,
    maxStreams: request.maxStreams,
    leaseSeconds: request.leaseSeconds,
    staleSeconds,
    graceMillis,
    exclude: request.exclude ?? [],
    perspectiveNames: request.perspectiveNames === undefined ? null : request.perspectiveNames,
    heads: request.perspectiveNames?.length ?? 4
  })

  return {
    claimWork: (request) =>
      Effect.map(
        claim(Claim.claimWork(client, claimRequest(request)), request, "claimWork", (rows) => rows.length),
        (rows) => rows.map((r) => r.streamId)
      ),
    claimAndFetch: ({ backgroundLimit, limit, withModels, ...request }) =>
      Effect.gen(function* () {
        const background = yield* rest.open
        const rows = yield* claim(
          Claim.claimAndFetch(client, {
            ...claimRequest(request),
            limit: limit ?? 2_147_483_647,
            backgroundLimit: backgroundLimit ?? 2_147_483_647,
            modelsOf: withModels === true ? request.perspectiveNames : undefined,
            background
          }),
          request,
          "claimAndFetch",
          (rows) => rows.reduce((n, r) => (r.part === 0 ? n + 1 : n), 0)
        )
        const answer = claimedAndPending(rows, withModels === true && request.perspectiveNames !== undefined)
        if (background) yield* rest.after(answer.streams, answer.pending)
        return answer
      })
  }
}
