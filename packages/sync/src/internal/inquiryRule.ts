/**
 * The rule that decides, from the database alone, whether perspective P has processed event E — correct after
 * the worker deleted E's work row.
 *
 * Facts: the append writes E and one work row per perspective handling E's type in ONE transaction; the
 * completion deletes exactly the applied work rows and advances the (stream, P) cursor in ONE transaction;
 * failures that exhaust their attempts move the row to `wh_dead_letters` in one transaction. So:
 *
 * 1. E not in `wh_events`: **pending** — not committed yet (or no such event). Never done unless the database agrees.
 * 2. A work row for (E, P) exists: **pending** while `processed_at` is null — **failing** when the first unprocessed
 *    row of E's stream for P (E itself or an earlier event, which holds E: the worker applies a stream in order and
 *    stops it at its failing event) failed its last attempt; **processed** once `processed_at` is set (debug mode keeps rows).
 * 3. No work row, a dead letter for (E, P): **dead-lettered** — not pending, but the read model lacks E.
 * 4. No work row, P does not handle E's type: **processed** — no work row ever existed, there is nothing to apply.
 * 5. No work row, the (stream, P) cursor's `last_event_id >= E` (UUIDv7 order): **processed** — the deletion and
 *    the cursor advance committed together.
 * 6. Otherwise (no work row, no dead letter, the cursor not past E): **pending** — the row vanished without the
 *    cursor vouching for E (deleted by hand, perspective added after E was appended): we cannot prove E applied.
 *
 * With versions, P stands for every SERVING version of P's base name (see `sql/syncInquiry.ts`): the facts come
 * per (serving key, E) and {@link combine} joins them — dead-lettered if any key dead-lettered E, failing if any key
 * is failing at it, pending if any key has it pending, processed only if every key processed it. A retired key
 * (asked for when nothing serves) counts as done for every committed event: it is no longer processed.
 *
 * @internal
 */

/** @internal */
export interface EventFacts {
  /** The serving key these facts are about. */
  readonly key: string
  /** The key's event types from the version registry; null when the key is not registered. */
  readonly event_types: ReadonlyArray<string> | null
  readonly retired: boolean
  readonly event_id: string
  readonly event_type: string | null
  readonly committed: boolean
  readonly has_work: boolean
  readonly work_processed: boolean
  readonly dead_lettered: boolean
  readonly cursor_past: boolean
  /** The event's stream (null when not committed). */
  readonly stream_id: string | null
  /** While E waits in the key's queue: the stream's first unprocessed event there, when its last attempt failed. */
  readonly failing_event_id: string | null
  readonly failing_error: string | null
  readonly failing_attempts: number | null
  readonly failing_next_attempt_at: Date | string | null
}

/** @internal */
export type Verdict = "pending" | "processed" | "deadLettered" | "failing"

/** @internal */
export const verdict = (facts: EventFacts, handlesType: (eventType: string) => boolean): Verdict => {
  if (!facts.committed || facts.event_type === null) return "pending"
  if (facts.retired) return "processed"
  if (facts.has_work) return facts.work_processed ? "processed" : facts.failing_event_id !== null ? "failing" : "pending"
  if (facts.dead_lettered) return "deadLettered"
  if (!handlesType(facts.event_type)) return "processed"
  return facts.cursor_past ? "processed" : "pending"
}

/** One id's verdict over every serving key (`verdicts` non-empty). @internal */
export const combine = (verdicts: Iterable<Verdict>): Verdict => {
  let out: Verdict = "processed"
  for (const v of verdicts) {
    if (v === "deadLettered") return v
    if (v === "failing" || (v === "pending" && out === "processed")) out = v
  }
  return out
}
