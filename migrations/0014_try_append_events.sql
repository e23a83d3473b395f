-- The append of PgEventStore's statement slots never waits for its stream's lock: with p_wait_for_lock false, a
-- stream locked by another transaction (a caller's open one) answers 'busy' (version 0, no ids) with nothing
-- written, and the store runs the append again outside its slots, where it waits (p_wait_for_lock true). So an
-- append whose stream is held never holds a slot: two of them had held up every other append of their process
-- until the lock's holder committed. The statements are those of the 15-argument function (migration 0010), run
-- here rather than called through a nested query (pgbench, one client, PostgreSQL 15: a wrapper that called it
-- answered 3-7 % fewer appends/s). The 15-argument function stays for processes of an older deploy.
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
  p_notify boolean,
  p_wait_for_lock boolean
) RETURNS TABLE (outcome text, version bigint, ids uuid[])
  LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_version bigint;
  v_highest uuid;
  v_ids uuid[] := p_event_ids;
  v_taken uuid[];
BEGIN
  IF p_wait_for_lock THEN
    PERFORM pg_advisory_xact_lock(1464336385, hashtext('__whizbang_schema__' || ':' || p_stream_id::text));
  ELSIF NOT pg_try_advisory_xact_lock(1464336385, hashtext('__whizbang_schema__' || ':' || p_stream_id::text)) THEN
    RETURN QUERY SELECT 'busy'::text, 0::bigint, NULL::uuid[];
    RETURN;
  END IF;
  SELECT coalesce(max(e.stream_version), 0) INTO v_version
  FROM "__whizbang_schema__".wh_events e WHERE e.stream_id = p_stream_id;
  IF p_expected_version IS NOT NULL AND p_expected_version <> v_version THEN
    RETURN QUERY SELECT 'wrong_version'::text, v_version, NULL::uuid[];
    RETURN;
  END IF;
  IF true = ANY (p_supplied) THEN
    SELECT array_agg(e.event_id ORDER BY e.event_id) INTO v_taken
    FROM "__whizbang_schema__".wh_events e
    WHERE e.event_id IN (SELECT s.id FROM unnest(p_event_ids, p_supplied) AS s(id, supplied) WHERE s.supplied);
    IF v_taken IS NOT NULL THEN
      RETURN QUERY SELECT 'duplicate'::text, v_version, v_taken;
      RETURN;
    END IF;
  END IF;
  SELECT e.event_id INTO v_highest
  FROM "__whizbang_schema__".wh_events e WHERE e.stream_id = p_stream_id
  ORDER BY e.event_id DESC LIMIT 1;
  FOR i IN 1 .. cardinality(v_ids) LOOP
    IF NOT p_supplied[i] AND v_highest IS NOT NULL AND v_ids[i] <= v_highest THEN
      v_ids[i] := "__whizbang_schema__".wh_next_event_id(v_highest);
    END IF;
    IF v_highest IS NULL OR v_ids[i] > v_highest THEN
      v_highest := v_ids[i];
    END IF;
  END LOOP;
  INSERT INTO "__whizbang_schema__".wh_events (event_id, stream_id, stream_version, event_type, payload, metadata, scope)
  SELECT v_ids[i], p_stream_id, v_version + i, p_event_types[i], p_payloads[i],
         jsonb_build_object('correlationId', coalesce(p_correlation_id, v_ids[1]::text), 'causationId', p_causation_id,
           'timestamp', p_timestamp),
         p_scope
  FROM generate_subscripts(v_ids, 1) AS i;
  -- Routes: every registered version that is not retired and handles the type (whoever appends, so a version an
  -- appender does not know still gets its work), plus the caller's routes to perspectives never registered.
  -- `fires`: only the live version's work fires PostPerspective receptors.
  IF NOT p_notify THEN
    PERFORM set_config('whizbang.defer_work_notify', 'on', true);
  END IF;
  INSERT INTO "__whizbang_schema__".wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number, fires)
  SELECT gen_random_uuid(), p_stream_id, r.perspective_name, v_ids[i], abs(hashtext(p_stream_id::text)) % p_partition_count, r.fires
  FROM generate_subscripts(v_ids, 1) AS i
  JOIN (
    SELECT t.event_type, v.perspective_name, v.state = 'live' AS fires
    FROM "__whizbang_schema__".wh_perspective_versions v, unnest(v.event_types) AS t(event_type)
    WHERE v.state <> 'retired'
    UNION ALL
    SELECT c.event_type, c.perspective_name, true
    FROM unnest(p_routed_types, p_routed_perspectives) AS c(event_type, perspective_name)
    WHERE NOT EXISTS (SELECT 1 FROM "__whizbang_schema__".wh_perspective_versions v WHERE v.perspective_name = c.perspective_name)
  ) AS r ON r.event_type = p_event_types[i];
  IF NOT p_notify THEN
    PERFORM set_config('whizbang.defer_work_notify', 'off', true);
  END IF;
  IF cardinality(p_lifecycle_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_lifecycle_pending (event_id, stream_id)
    SELECT v_ids[i], p_stream_id FROM generate_subscripts(v_ids, 1) AS i WHERE p_event_types[i] = ANY (p_lifecycle_types);
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_version, v_ids;
END;
$$;
