-- Concurrent appends in one statement. When a process has as many appends in flight as PgEventStore allows
-- (`maxConcurrentAppends`), the appends that arrive meanwhile wait and then go together, in one call of this
-- function: one round trip, one transaction and one commit for all of them instead of one each (bench scenario g,
-- 8 appenders). Each stream at most once per call (the store keeps a stream's later append for the next call).
-- Every append keeps the meaning of wh_append_events (migration 0010), and gets its own outcome row:
--   1. the streams' transaction-scoped advisory locks (the same keys as wh_append_events), each only if free: the
--      call never waits for a lock, so a caller's transaction that holds one stream's lock holds up no other
--      stream's append, and two calls never wait on each other;
--   2. each stream's version and highest id, read once under the locks;
--   3. per append: 'busy' (its stream's lock was taken: nothing written; the store runs it alone, and that call
--      waits for the lock like any append), else 'wrong_version' (expected version given and different), else
--      'duplicate' (a supplied id already stored), else 'ok' with its ids minted as wh_append_events mints them; an
--      append refused writes nothing and does not stop the others;
--   4. the events, work rows and lifecycle rows of the 'ok' appends, one statement each; the work rows fire no
--      NOTIFY (the store wakes the workers after the commit, as for wh_append_events with p_notify = false).
-- A supplied id that another append of the same call, or a concurrent transaction, stores too fails the statement
-- (wh_events_pkey): the store then runs that call's appends one by one, each getting its own answer.
-- Per-append arrays: p_stream_ids, p_expected (NULL = any), p_counts (its events), p_correlation_ids (NULL = its
-- first event's id), p_causation_ids, p_timestamps, p_scopes. Per-event arrays, the appends' events in order:
-- p_event_ids, p_supplied, p_event_types, p_payloads. Routes, partitions and lifecycle types as wh_append_events
-- (the union over the call's appends: each is a function of the event type).
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_append_batch(
  p_stream_ids uuid[],
  p_expected bigint[],
  p_counts integer[],
  p_correlation_ids text[],
  p_causation_ids text[],
  p_timestamps text[],
  p_scopes jsonb[],
  p_event_ids uuid[],
  p_supplied boolean[],
  p_event_types text[],
  p_payloads jsonb[],
  p_routed_types text[],
  p_routed_perspectives text[],
  p_partition_count integer,
  p_lifecycle_types text[]
) RETURNS TABLE (n integer, outcome text, version bigint, ids uuid[])
  LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_appends integer := cardinality(p_stream_ids);
  v_events integer := cardinality(p_event_ids);
  v_versions bigint[];
  v_highest uuid[];
  v_taken uuid[] := '{}';
  v_ids uuid[] := p_event_ids;
  v_keep boolean[] := array_fill(false, ARRAY[v_events]);
  v_append_of integer[] := array_fill(0, ARRAY[v_events]);
  v_event_versions bigint[] := array_fill(0::bigint, ARRAY[v_events]);
  v_first_ids uuid[] := array_fill(NULL::uuid, ARRAY[v_appends]);
  v_first integer := 1;
  v_last integer;
  v_high uuid;
  v_dup uuid[];
  v_busy uuid[];
BEGIN
  SELECT coalesce(array_agg(u.s), '{}') INTO v_busy
  FROM unnest(p_stream_ids) AS u(s)
  WHERE NOT pg_try_advisory_xact_lock(1464336385, hashtext('__whizbang_schema__' || ':' || u.s::text));
  SELECT array_agg(x.v ORDER BY u.a), array_agg(x.h ORDER BY u.a) INTO v_versions, v_highest
  FROM unnest(p_stream_ids) WITH ORDINALITY AS u(s, a)
  CROSS JOIN LATERAL (
    SELECT
      (SELECT coalesce(max(e.stream_version), 0) FROM "__whizbang_schema__".wh_events e WHERE e.stream_id = u.s) AS v,
      (SELECT e.event_id FROM "__whizbang_schema__".wh_events e WHERE e.stream_id = u.s
       ORDER BY e.event_id DESC LIMIT 1) AS h
  ) x;
  IF true = ANY (p_supplied) THEN
    SELECT coalesce(array_agg(e.event_id), '{}') INTO v_taken
    FROM "__whizbang_schema__".wh_events e
    WHERE e.event_id IN (SELECT s.id FROM unnest(p_event_ids, p_supplied) AS s(id, supplied) WHERE s.supplied);
  END IF;
  FOR a IN 1 .. v_appends LOOP
    v_last := v_first + p_counts[a] - 1;
    v_dup := NULL;
    IF cardinality(v_taken) > 0 THEN
      SELECT array_agg(s.id ORDER BY s.id) INTO v_dup
      FROM unnest(p_event_ids[v_first:v_last], p_supplied[v_first:v_last]) AS s(id, supplied)
      WHERE s.supplied AND s.id = ANY (v_taken);
    END IF;
    IF p_stream_ids[a] = ANY (v_busy) THEN
      n := a; outcome := 'busy'; version := 0; ids := NULL;
    ELSIF p_expected[a] IS NOT NULL AND p_expected[a] <> v_versions[a] THEN
      n := a; outcome := 'wrong_version'; version := v_versions[a]; ids := NULL;
    ELSIF v_dup IS NOT NULL THEN
      n := a; outcome := 'duplicate'; version := v_versions[a]; ids := v_dup;
    ELSE
      v_high := v_highest[a];
      FOR i IN v_first .. v_last LOOP
        IF NOT p_supplied[i] AND v_high IS NOT NULL AND v_ids[i] <= v_high THEN
          v_ids[i] := "__whizbang_schema__".wh_next_event_id(v_high);
        END IF;
        IF v_high IS NULL OR v_ids[i] > v_high THEN
          v_high := v_ids[i];
        END IF;
        v_keep[i] := true;
        v_append_of[i] := a;
        v_event_versions[i] := v_versions[a] + (i - v_first + 1);
      END LOOP;
      IF v_last >= v_first THEN
        v_first_ids[a] := v_ids[v_first];
      END IF;
      n := a; outcome := 'ok'; version := v_versions[a]; ids := coalesce(v_ids[v_first:v_last], '{}');
    END IF;
    RETURN NEXT;
    v_first := v_last + 1;
  END LOOP;
  INSERT INTO "__whizbang_schema__".wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope)
  SELECT v_ids[u.i], p_stream_ids[v_append_of[u.i]], v_event_versions[u.i], u.t, u.p,
         jsonb_build_object(
           'correlationId', coalesce(p_correlation_ids[v_append_of[u.i]], v_first_ids[v_append_of[u.i]]::text),
           'causationId', p_causation_ids[v_append_of[u.i]],
           'timestamp', p_timestamps[v_append_of[u.i]]),
         p_scopes[v_append_of[u.i]]
  FROM unnest(p_event_types, p_payloads) WITH ORDINALITY AS u(t, p, i)
  WHERE v_keep[u.i];
  PERFORM set_config('whizbang.defer_work_notify', 'on', true);
  INSERT INTO "__whizbang_schema__".wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, fires)
  SELECT gen_random_uuid(), ev.s, r.perspective_name, ev.id, abs(hashtext(ev.s::text)) % p_partition_count, r.fires
  FROM (
    SELECT v_ids[u.i] AS id, p_stream_ids[v_append_of[u.i]] AS s, u.t
    FROM unnest(p_event_types) WITH ORDINALITY AS u(t, i)
    WHERE v_keep[u.i]
  ) ev
  JOIN (
    SELECT t.event_type, v.perspective_name, v.state = 'live' AS fires
    FROM "__whizbang_schema__".wh_perspective_versions v, unnest(v.event_types) AS t(event_type)
    WHERE v.state <> 'retired'
    UNION ALL
    SELECT c.event_type, c.perspective_name, true
    FROM unnest(p_routed_types, p_routed_perspectives) AS c(event_type, perspective_name)
    WHERE NOT EXISTS (SELECT 1 FROM "__whizbang_schema__".wh_perspective_versions v WHERE v.perspective_name = c.perspective_name)
  ) AS r ON r.event_type = ev.t;
  PERFORM set_config('whizbang.defer_work_notify', 'off', true);
  IF cardinality(p_lifecycle_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_lifecycle_pending (event_id, stream_id)
    SELECT v_ids[u.i], p_stream_ids[v_append_of[u.i]]
    FROM unnest(p_event_types) WITH ORDINALITY AS u(t, i)
    WHERE v_keep[u.i] AND u.t = ANY (p_lifecycle_types);
  END IF;
END;
$$;
