-- The append of an append statement slot (PgEventStore): like wh_append_events (migration 0010), but it never waits
-- for the stream's lock. A stream locked by another transaction (a caller's open one) answers 'busy' (version 0, no
-- ids) with nothing written, and the store runs the append again outside its slots, where it waits. So an append
-- whose stream is held never holds a slot: two of them had held up every other append of their process until the
-- lock's holder committed. Once the lock is taken here, wh_append_events takes it again at once (advisory locks
-- are re-entrant within a session) and does the rest.
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_try_append_events(
  p_stream_id uuid,
  p_expected_version bigint,
  p_event_ids uuid[],
  p_supplied boolean[],
  p_event_types text[],
  p_payloads jsonb[],
  p_correlation_id text,
  p_causation_id text,
  p_timestamp text,
  p_scope jsonb,
  p_routed_types text[],
  p_routed_perspectives text[],
  p_partition_count integer,
  p_lifecycle_types text[],
  p_notify boolean
) RETURNS TABLE (outcome text, version bigint, ids uuid[])
  LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(1464336385, hashtext('__whizbang_schema__' || ':' || p_stream_id::text)) THEN
    RETURN QUERY SELECT 'busy'::text, 0::bigint, NULL::uuid[];
    RETURN;
  END IF;
  RETURN QUERY SELECT a.outcome, a.version, a.ids FROM "__whizbang_schema__".wh_append_events(
    p_stream_id, p_expected_version, p_event_ids, p_supplied, p_event_types, p_payloads, p_correlation_id,
    p_causation_id, p_timestamp, p_scope, p_routed_types, p_routed_perspectives, p_partition_count,
    p_lifecycle_types, p_notify) AS a;
END;
$$;
