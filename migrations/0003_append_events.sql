CREATE INDEX "wh_events_stream_event_idx" ON "__whizbang_schema__"."wh_events" USING btree ("stream_id","event_id");--> statement-breakpoint
-- The smallest UUIDv7 above a UUIDv7: its 74 random bits plus one, carrying into the 48-bit millisecond time,
-- version and variant bits kept. For an id of another version: the first UUIDv7 of the next millisecond above it.
-- Same rule as EventId.successor in @whizbang/core (the memory store's).
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_next_event_id(p_id uuid) RETURNS uuid
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
  SET search_path = pg_catalog
AS $$
DECLARE
  v_hex text := replace(p_id::text, '-', '');
  v_millis bigint := ('x' || substr(v_hex, 1, 12))::bit(48)::bigint;
  v_rand_a integer := ('x' || substr(v_hex, 14, 3))::bit(12)::integer;
  v_rand_b bigint := ('x' || substr(v_hex, 17, 16))::bit(64)::bigint & x'3fffffffffffffff'::bigint;
BEGIN
  IF substr(v_hex, 13, 1) <> '7' OR substr(v_hex, 17, 1) NOT IN ('8', '9', 'a', 'b') THEN
    v_millis := v_millis + 1; v_rand_a := 0; v_rand_b := 0;
  ELSIF v_rand_b < x'3fffffffffffffff'::bigint THEN
    v_rand_b := v_rand_b + 1;
  ELSIF v_rand_a < 4095 THEN
    v_rand_a := v_rand_a + 1; v_rand_b := 0;
  ELSE
    v_millis := v_millis + 1; v_rand_a := 0; v_rand_b := 0;
  END IF;
  RETURN (lpad(to_hex(v_millis), 12, '0') || '7' || lpad(to_hex(v_rand_a), 3, '0')
    || lpad(to_hex(v_rand_b | x'8000000000000000'::bigint), 16, '0'))::uuid;
END;
$$;
--> statement-breakpoint
-- One append in one round trip (PgEventStore.append calls it as a single statement, so outside a caller's
-- transaction it is its own transaction):
--   1. the stream's transaction-scoped advisory lock (the same key as before this function, so appenders of older
--      versions still queue behind it during a rolling deploy), so appends to one stream run one at a time;
--   2. the expected-version check (NULL = any): 'wrong_version' with the current version, nothing written;
--   3. caller-supplied ids already stored: 'duplicate' with those ids, nothing written;
--   4. the ids: a supplied id as is; a proposed id if above the stream's highest id so far (stored or earlier in
--      the batch), else wh_next_event_id of that highest — minted after the lock, so within a stream id order is
--      version order whatever the concurrency and the process;
--   5. the events, their work rows (one per routed perspective; the insert fires wh_notify_work, so listeners wake
--      at commit) and lifecycle rows for the tracked types.
-- Returns 'ok', the version before the append and the stored ids. Outcomes are rows, not exceptions, so a caller's
-- enclosing transaction stays usable after a refused append.
-- No SET search_path clause (it costs a configuration save and restore on every call, on the hot path): every
-- relation is schema-qualified, and built-in functions and operators resolve from pg_catalog, which is searched
-- before any schema of the caller's path.
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
  p_lifecycle_types text[]
) RETURNS TABLE (outcome text, version bigint, ids uuid[])
  LANGUAGE plpgsql
AS $$
DECLARE
  v_version bigint;
  v_highest uuid;
  v_ids uuid[] := p_event_ids;
  v_taken uuid[];
BEGIN
  PERFORM pg_advisory_xact_lock(1464336385, hashtext('__whizbang_schema__' || ':' || p_stream_id::text));
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
  IF cardinality(p_routed_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_perspective_events (work_id, stream_id, perspective_name, event_id, partition_number)
    SELECT gen_random_uuid(), p_stream_id, r.perspective_name, v_ids[i], abs(hashtext(p_stream_id::text)) % p_partition_count
    FROM generate_subscripts(v_ids, 1) AS i
    JOIN unnest(p_routed_types, p_routed_perspectives) AS r(event_type, perspective_name) ON r.event_type = p_event_types[i];
  END IF;
  IF cardinality(p_lifecycle_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_lifecycle_pending (event_id, stream_id)
    SELECT v_ids[i], p_stream_id FROM generate_subscripts(v_ids, 1) AS i WHERE p_event_types[i] = ANY (p_lifecycle_types);
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_version, v_ids;
END;
$$;
