-- wh_event_facts (migration 0015) with the facts of a failing stream: per (serving key, asked event id), when the
-- event still waits in the key's queue, the head of that queue for its stream (the first unprocessed work row by
-- event id) and, if that head failed its last attempt (its `error` is set: a failure records the error and a
-- backoff, a success deletes the row), the head's id, error, attempts and next attempt (`scheduled_for`); and the
-- event's stream. The worker stops a (stream, perspective) at its failing event, so an event at or after a failing
-- head is not applied before a retry of the head succeeds: a read-your-writes wait for it answers `Failing` instead
-- of waiting out its timeout.
--
-- The head is one more probe of the (stream_id, perspective_name, event_id) key, made only for an event that still
-- has its work row (an applied event, the usual answer, costs nothing more: a one-time filter). Measured on
-- PostgreSQL 17 with 20,000 events over 200 streams, a check of 17 pending events: 4 buffer hits and 5 us per event
-- for the head (0.085 of 0.25 ms of execution). The rest is migration 0015's function, unchanged; its comments:
--
-- The facts a read-your-writes check decides from (PgSyncInquiry's first check of a wait, its sweeps and its
-- inquiries), as a function planned once per connection. As a prepared statement sent by @whizbang/sync, PostgreSQL
-- chose a custom plan at 69 % of the calls (bench scenario c, cross-process at 1,000 requests/s, PostgreSQL 17,
-- track_planning): 0.31 ms of planning for 0.07 ms of execution. With the enable_* settings every lookup stays an
-- index probe even under a plan made while the tables were small (a new service, never analysed).
--
-- Per (serving key, asked event id): the serving keys of the base name p_base are its registered versions in state
-- 'live' or 'ready'; when it has none (no registry rows: not registered yet), the key asked for, p_key, which counts
-- as done for every event when it is registered as 'retired'. The rule that reads these facts is in
-- @whizbang/sync's internal/inquiryRule.ts.
--
-- The result gains columns, which CREATE OR REPLACE cannot do: the function is dropped and created again in one
-- transaction (a statement that selects 0015's columns by name reads the new function unchanged).
DROP FUNCTION IF EXISTS "__whizbang_schema__".wh_event_facts(text, text, uuid[]);
--> statement-breakpoint
CREATE FUNCTION "__whizbang_schema__".wh_event_facts(p_base text, p_key text, p_event_ids uuid[])
RETURNS TABLE (
  key text,
  event_types text[],
  retired boolean,
  event_id text,
  event_type text,
  committed boolean,
  has_work boolean,
  work_processed boolean,
  dead_lettered boolean,
  cursor_past boolean,
  stream_id text,
  failing_event_id text,
  failing_error text,
  failing_attempts integer,
  failing_next_attempt_at timestamptz
)
  LANGUAGE plpgsql
  STABLE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH serving AS (
    SELECT v.perspective_name AS k, v.event_types AS types, false AS gone
    FROM "__whizbang_schema__".wh_perspective_versions v
    WHERE v.base_name = p_base AND v.state IN ('live', 'ready')
    UNION ALL
    SELECT p_key, r.event_types, coalesce(r.state = 'retired', false)
    FROM (SELECT 1) AS one
    LEFT JOIN "__whizbang_schema__".wh_perspective_versions r ON r.perspective_name = p_key
    WHERE NOT EXISTS (
      SELECT 1 FROM "__whizbang_schema__".wh_perspective_versions v WHERE v.base_name = p_base AND v.state IN ('live', 'ready')
    )
  )
  SELECT s.k,
         s.types,
         s.gone,
         i.id::text,
         e.event_type,
         e.event_id IS NOT NULL,
         pe.work_id IS NOT NULL,
         pe.processed_at IS NOT NULL,
         d.dead IS NOT NULL,
         coalesce(c.last_event_id >= i.id, false),
         e.stream_id::text,
         h.event_id::text,
         h.error,
         h.attempts,
         h.scheduled_for
  FROM serving s
  CROSS JOIN unnest(p_event_ids) AS i(id)
  -- One probe per key: LATERAL with LIMIT 1, never a join of whole tables (as an EXISTS, the dead-letter test became a
  -- hashed subplan that read every dead letter at each call).
  LEFT JOIN LATERAL (
    SELECT e.event_id, e.stream_id, e.event_type FROM "__whizbang_schema__".wh_events e WHERE e.event_id = i.id LIMIT 1
  ) e ON true
  LEFT JOIN LATERAL (
    SELECT pe.work_id, pe.processed_at FROM "__whizbang_schema__".wh_perspective_events pe
    WHERE pe.stream_id = e.stream_id AND pe.perspective_name = s.k AND pe.event_id = i.id
    LIMIT 1
  ) pe ON true
  LEFT JOIN LATERAL (
    SELECT true AS dead FROM "__whizbang_schema__".wh_dead_letters d
    WHERE d.stream_id = e.stream_id AND d.perspective_name = s.k AND d.event_id = i.id
    LIMIT 1
  ) d ON true
  LEFT JOIN LATERAL (
    SELECT c.last_event_id FROM "__whizbang_schema__".wh_perspective_cursors c
    WHERE c.stream_id = e.stream_id AND c.perspective_name = s.k
    LIMIT 1
  ) c ON true
  -- The stream's head in the key's queue, only while the asked event still waits there (a one-time filter: no probe
  -- otherwise); it is at or before the asked event, whose own row is unprocessed. Its facts only when it failed.
  LEFT JOIN LATERAL (
    SELECT h.event_id, h.error, h.attempts, h.scheduled_for FROM (
      SELECT h.event_id, h.error, h.attempts, h.scheduled_for FROM "__whizbang_schema__".wh_perspective_events h
      WHERE pe.work_id IS NOT NULL AND pe.processed_at IS NULL
        AND h.stream_id = e.stream_id AND h.perspective_name = s.k AND h.processed_at IS NULL
      ORDER BY h.event_id
      LIMIT 1
    ) h
    WHERE h.error IS NOT NULL
  ) h ON true;
END
$$;
