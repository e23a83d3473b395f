-- Work on Citus (schema-based sharding: the service schema is a distributed schema whose tables live on one worker
-- node), the same SQL on plain PostgreSQL. Two things Citus cannot do, each replaced by what works on both:
--   1. Triggers. Citus refuses them on distributed tables ("triggers are not supported on distributed tables"), and
--      where it allows them (citus.enable_unsafe_triggers) they run on the worker node that holds the shard, whose
--      NOTIFY never reaches the listeners, which are connected to the coordinator. Both triggers are dropped:
--      - wh_perspective_events_notify_work (NOTIFY wh_work when work rows are inserted): the append with
--        p_notify = true queues the NOTIFY itself; the other writers of work rows (history replay, a version's
--        backfill plan) send it as a statement of their own transaction. The 14- and 15-argument appends of older
--        deploys call the 16-argument one, so they keep waking the workers.
--      - wh_perspective_versions_notify (the `@versions` line on wh_processed when a version's state changes):
--        wh_notify_versions(keys) sends the same lines for the base names of those keys; the processes call it
--        right after a statement that changes a version's state.
--      A function called on the coordinator runs there (Citus routes each statement inside it to the worker node),
--      so its NOTIFY reaches the coordinator's listeners, as on plain PostgreSQL.
--   2. Non-immutable functions in ON CONFLICT DO UPDATE SET ("functions used in the DO UPDATE SET clause of INSERTs
--      on distributed tables must be marked IMMUTABLE"): `col = now()` there becomes `col = excluded.col`, the
--      inserted row's value, which is now() too (the column's default or the insert's own now()): the same
--      transaction timestamp as before.
-- The append and the completion are otherwise those of migrations 0014 and 0012, statement for statement.
DROP TRIGGER IF EXISTS wh_perspective_events_notify_work ON "__whizbang_schema__".wh_perspective_events;
--> statement-breakpoint
DROP TRIGGER IF EXISTS wh_perspective_versions_notify ON "__whizbang_schema__".wh_perspective_versions;
--> statement-breakpoint
DROP FUNCTION IF EXISTS "__whizbang_schema__".wh_notify_work();
--> statement-breakpoint
DROP FUNCTION IF EXISTS "__whizbang_schema__".wh_notify_versions();
--> statement-breakpoint
-- The `@versions` lines of the dropped trigger, one per base name of the keys p_keys: `<schema>\n@versions\t<base>:<1|0>`,
-- 1 when the base alone serves its reads (its only 'live' or 'ready' version is the key equal to the base name).
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_notify_versions(p_keys text[]) RETURNS void
  LANGUAGE plpgsql
AS $$
DECLARE
  v_lines text[];
BEGIN
  -- The lines first, the notifications from the array: on Citus a statement that reads the schema's tables runs on
  -- their worker node, and a pg_notify in it would be sent there.
  SELECT array_agg('__whizbang_schema__' || E'\n@versions\t' || b.base || ':' || CASE WHEN coalesce(a.alone, false) THEN '1' ELSE '0' END)
  INTO v_lines
  FROM (SELECT DISTINCT v.base_name AS base FROM "__whizbang_schema__".wh_perspective_versions v WHERE v.perspective_name = ANY (p_keys)) b
  LEFT JOIN LATERAL (
    SELECT count(*) > 0 AND bool_and(v.perspective_name = b.base) AS alone
    FROM "__whizbang_schema__".wh_perspective_versions v WHERE v.base_name = b.base AND v.state IN ('live', 'ready')
  ) a ON true;
  PERFORM pg_notify('wh_processed', l.line) FROM unnest(v_lines) AS l(line);
END;
$$;
--> statement-breakpoint
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
  -- The wake-up the wh_notify_work trigger sent: queued here, delivered at commit (see the header).
  IF p_notify THEN
    PERFORM pg_notify('wh_work', '__whizbang_schema__');
  END IF;
  IF cardinality(p_lifecycle_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_lifecycle_pending (event_id, stream_id)
    SELECT v_ids[i], p_stream_id FROM generate_subscripts(v_ids, 1) AS i WHERE p_event_types[i] = ANY (p_lifecycle_types);
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_version, v_ids;
END;
$$;
--> statement-breakpoint
-- The appends of older deploys, through the one above (they used to notify through the trigger).
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
  LANGUAGE sql
AS $$
  SELECT * FROM "__whizbang_schema__".wh_append_events(
    p_stream_id, p_expected_version, p_event_ids, p_supplied, p_event_types, p_payloads, p_correlation_id,
    p_causation_id, p_timestamp, p_scope, p_routed_types, p_routed_perspectives, p_partition_count, p_lifecycle_types, true, true)
$$;
--> statement-breakpoint
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
  LANGUAGE sql
AS $$
  SELECT * FROM "__whizbang_schema__".wh_append_events(
    p_stream_id, p_expected_version, p_event_ids, p_supplied, p_event_types, p_payloads, p_correlation_id,
    p_causation_id, p_timestamp, p_scope, p_routed_types, p_routed_perspectives, p_partition_count, p_lifecycle_types, p_notify, true)
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_complete_work(
  p_instance_id uuid,
  p_lease_seconds integer,
  p_boot_token text,
  p_streams uuid[],
  p_pair_streams uuid[],
  p_pair_perspectives text[],
  p_pair_checked boolean[],
  p_pair_at_fetch uuid[],
  p_pair_last uuid[],
  p_pair_status integer[],
  p_work_ids uuid[],
  p_model_tables text[],
  p_model_perspectives text[],
  p_model_streams uuid[],
  p_model_events uuid[],
  p_model_data jsonb[],
  p_model_metadata jsonb[],
  p_model_scope jsonb[],
  p_model_applied integer[],
  p_model_delete boolean[],
  p_debug boolean,
  p_snapshot_every integer,
  p_snapshot_keep integer,
  p_notice_chunk integer
) RETURNS void
  LANGUAGE plpgsql
  -- Every statement looks rows up by key, for a handful of keys: planned once per connection, and always through
  -- the indexes. Without the enable_* settings, a plan made while a table was empty or never analysed (a fresh
  -- database, the first completions after a deploy) joined the cursors and the work rows by sequential scans, and
  -- kept doing so as they grew until autovacuum analysed them (measured in bench scenario g: 0.48 ms for the cursor
  -- fence, 0.30 ms for the work-row removal, against 0.02-0.03 ms by index).
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
AS $$
DECLARE
  v_lost uuid[];
  v_owned uuid[];
  v_versions_by_row jsonb;
  v_conflicts text[];
  v_exists boolean[];
  v_fresh integer;
  v_created integer;
  v_wanted integer;
  v_removed integer;
  v_removed_events uuid[];
  v_removed_perspectives text[];
  v_table text;
  v_upserts boolean;
  v_deletes boolean;
  v_ids uuid[];
  v_versions integer[];
  v_up_tables text[] := '{}';
  v_up_ids uuid[] := '{}';
  v_up_versions integer[] := '{}';
  v_snap_streams uuid[];
  v_snap_perspectives text[];
BEGIN
  -- 1. Leases.
  WITH owned AS (
    UPDATE "__whizbang_schema__".wh_active_streams SET lease_expiry = now() + make_interval(secs => p_lease_seconds)
    WHERE stream_id IN (
      SELECT a.stream_id FROM "__whizbang_schema__".wh_active_streams a
      -- Looked up by stream (IS TRUE keeps the instance test out of the index choice: the instance index holds
      -- every lease the instance ever had, dead ones included, until vacuum).
      WHERE a.stream_id = ANY(p_streams) AND (a.instance_id = p_instance_id) IS TRUE AND a.lease_expiry > now()
        AND (p_boot_token IS NULL OR NOT EXISTS (
          SELECT 1 FROM "__whizbang_schema__".wh_service_instances i
          WHERE i.instance_id = p_instance_id AND i.metadata->>'bootToken' IS DISTINCT FROM p_boot_token
        ))
      ORDER BY a.stream_id FOR UPDATE
    )
    RETURNING stream_id
  )
  SELECT coalesce(array_agg(o.stream_id), '{}') INTO v_owned FROM owned o;
  -- p_streams holds each stream once: a lease is lost when fewer were renewed. Only then are the streams lost
  -- named (comparing every stream with every renewed one).
  IF cardinality(v_owned) < cardinality(p_streams) THEN
    SELECT coalesce(array_agg(s ORDER BY s), '{}') INTO v_lost FROM unnest(p_streams) AS s WHERE s <> ALL (v_owned);
    RAISE EXCEPTION USING ERRCODE = 'WH001', MESSAGE = format(
      'lease lost on %s stream(s) (%s%s); their work is redone by the new owner',
      cardinality(v_lost), array_to_string(v_lost[1:3], ', '), CASE WHEN cardinality(v_lost) > 3 THEN ', ...' ELSE '' END);
  END IF;

  -- 2. Cursors: each pair's cursor is looked up and row-locked by key, in (stream, perspective) order (the order
  --    every statement that locks cursors uses). A LATERAL subquery per pair, never a join of the pairs with a
  --    set of locked rows: a generic plan estimates 10 rows for an unnest, so such a join is a nested loop, and
  --    with 600 pairs that is 360,000 comparisons (110-160 ms a completion, bench scenario d).
  SELECT
    coalesce(array_agg(format('(%s, %s): %s', t.s, t.p,
      CASE WHEN f.held
        THEN format('stream lock held by %s (%s)', f.stream_lock_instance_id, coalesce(f.stream_lock_reason, 'no reason'))
        ELSE format('cursor moved since the fetch (%s -> %s)', coalesce(t.at_fetch::text, 'none'),
          CASE WHEN f.stream_id IS NULL THEN 'deleted' ELSE coalesce(f.last_event_id::text, 'none') END)
      END) ORDER BY t.n) FILTER (WHERE coalesce(f.held, false) OR (t.checked AND f.last_event_id IS DISTINCT FROM t.at_fetch)), '{}'),
    array_agg(f.stream_id IS NOT NULL ORDER BY t.n),
    count(*) FILTER (WHERE f.stream_id IS NULL AND t.last IS NOT NULL)
  INTO v_conflicts, v_exists, v_fresh
  FROM (
    SELECT * FROM unnest(p_pair_streams, p_pair_perspectives, p_pair_checked, p_pair_at_fetch, p_pair_last) WITH ORDINALITY
      AS u(s, p, checked, at_fetch, last, n)
    ORDER BY u.s, u.p
  ) t
  LEFT JOIN LATERAL (
    SELECT c.stream_id, c.last_event_id,
           coalesce(c.stream_lock_instance_id IS NOT NULL AND c.stream_lock_expiry > now(), false) AS held,
           c.stream_lock_instance_id, c.stream_lock_reason
    FROM "__whizbang_schema__".wh_perspective_cursors c
    WHERE c.stream_id = t.s AND c.perspective_name = t.p
    FOR UPDATE
  ) f ON true;
  IF cardinality(v_conflicts) > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'WH001', MESSAGE = format(
      '%s pair(s) were stream-locked or rebuilt after the fetch (%s%s); their work is delivered again',
      cardinality(v_conflicts), array_to_string(v_conflicts[1:3], '; '), CASE WHEN cardinality(v_conflicts) > 3 THEN '; ...' ELSE '' END);
  END IF;

  -- 3. Read-model rows, per perspective table in perspective order; each part only when the batch has rows for
  --    it (a dynamic statement is planned at every call).
  FOR v_table, v_upserts, v_deletes IN
    SELECT m.tab, bool_or(NOT m.del), bool_or(m.del)
    FROM unnest(p_model_tables, p_model_perspectives, p_model_delete) AS m(tab, p, del) GROUP BY m.tab ORDER BY min(m.p)
  LOOP
    IF v_upserts THEN
      EXECUTE format($q$
        WITH up AS (
          INSERT INTO %1$I.%2$I AS t (id, data, metadata, scope, version)
          SELECT r.id, r.data, r.metadata, r.scope, r.applied
          FROM unnest($1::text[], $2::uuid[], $3::jsonb[], $4::jsonb[], $5::jsonb[], $6::int[], $7::boolean[])
            AS r(tab, id, data, metadata, scope, applied, del)
          WHERE r.tab = $8 AND NOT r.del
          ON CONFLICT (id) DO UPDATE
            SET data = excluded.data, metadata = excluded.metadata, scope = excluded.scope,
                version = t.version + excluded.version, updated_at = excluded.updated_at
          RETURNING t.id, t.version::int AS version
        )
        SELECT coalesce(array_agg(up.id), '{}'), coalesce(array_agg(up.version), '{}') FROM up$q$,
        '__whizbang_schema__', v_table)
      INTO v_ids, v_versions
      USING p_model_tables, p_model_streams, p_model_data, p_model_metadata, p_model_scope, p_model_applied, p_model_delete, v_table;
      v_up_tables := v_up_tables || array_fill(v_table, ARRAY[cardinality(v_ids)]);
      v_up_ids := v_up_ids || v_ids;
      v_up_versions := v_up_versions || v_versions;
    END IF;
    IF v_deletes THEN
      EXECUTE format($q$
        DELETE FROM %1$I.%2$I WHERE id IN (
          SELECT r.id FROM unnest($1::text[], $2::uuid[], $3::boolean[]) AS r(tab, id, del) WHERE r.tab = $4 AND r.del
        )$q$, '__whizbang_schema__', v_table)
      USING p_model_tables, p_model_streams, p_model_delete, v_table;
    END IF;
  END LOOP;

  -- 4. Cursors: advance the existing ones (row-locked above), create the missing ones.
  INSERT INTO "__whizbang_schema__".wh_perspective_cursors AS c (stream_id, perspective_name, last_event_id, status, error, processed_at)
  SELECT t.s, t.p, t.last, t.status, NULL, now()
  FROM unnest(p_pair_streams, p_pair_perspectives, p_pair_last, p_pair_status, v_exists) AS t(s, p, last, status, present)
  WHERE t.last IS NOT NULL AND t.present
  ON CONFLICT (stream_id, perspective_name) DO UPDATE
    SET last_event_id = excluded.last_event_id, status = (c.status & ~(1 | 2 | 4 | 8)) | excluded.status, error = NULL, processed_at = excluded.processed_at;
  INSERT INTO "__whizbang_schema__".wh_perspective_cursors (stream_id, perspective_name, last_event_id, status, error, processed_at)
  SELECT t.s, t.p, t.last, t.status, NULL, now()
  FROM unnest(p_pair_streams, p_pair_perspectives, p_pair_last, p_pair_status, v_exists) AS t(s, p, last, status, present)
  WHERE t.last IS NOT NULL AND NOT t.present
  ON CONFLICT (stream_id, perspective_name) DO NOTHING;
  GET DIAGNOSTICS v_created = ROW_COUNT;
  IF v_created < v_fresh THEN
    RAISE EXCEPTION USING ERRCODE = 'WH001', MESSAGE = format(
      '%s cursor(s) were created by a bootstrap after the fetch; their work is delivered again', v_fresh - v_created);
  END IF;

  -- 5. Exactly the applied work rows.
  IF p_debug THEN
    WITH removed AS (
      UPDATE "__whizbang_schema__".wh_perspective_events SET processed_at = now(), instance_id = NULL, lease_expiry = NULL
      WHERE work_id = ANY(p_work_ids) AND processed_at IS NULL
      RETURNING event_id, perspective_name
    )
    SELECT count(*)::int, coalesce(array_agg(event_id), '{}'), coalesce(array_agg(perspective_name), '{}')
    INTO v_removed, v_removed_events, v_removed_perspectives FROM removed;
  ELSE
    WITH removed AS (
      DELETE FROM "__whizbang_schema__".wh_perspective_events WHERE work_id = ANY(p_work_ids)
      RETURNING event_id, perspective_name
    )
    SELECT count(*)::int, coalesce(array_agg(event_id), '{}'), coalesce(array_agg(perspective_name), '{}')
    INTO v_removed, v_removed_events, v_removed_perspectives FROM removed;
  END IF;
  SELECT count(DISTINCT w) INTO v_wanted FROM unnest(p_work_ids) AS w;
  IF v_removed < v_wanted THEN
    RAISE EXCEPTION USING ERRCODE = 'WH001', MESSAGE = format(
      '%s work row(s) were already covered by a rewind or bootstrap; the batch is redone from the rebuilt models', v_wanted - v_removed);
  END IF;

  -- 6. Streams left without work of the perspectives this instance runs (none recorded: every perspective).
  DELETE FROM "__whizbang_schema__".wh_active_streams a
  WHERE a.stream_id = ANY(p_streams) AND (a.instance_id = p_instance_id) IS TRUE
    AND NOT EXISTS (
      SELECT 1 FROM "__whizbang_schema__".wh_perspective_events pe
      WHERE pe.stream_id = a.stream_id AND pe.processed_at IS NULL
        AND pe.perspective_name = ANY(coalesce(
          (SELECT i.perspective_names FROM "__whizbang_schema__".wh_service_instances i WHERE i.instance_id = p_instance_id),
          ARRAY[pe.perspective_name]))
    );

  -- 7. Notifications, delivered at commit.
  IF v_removed = 0 THEN
    PERFORM pg_notify('wh_processed', '__whizbang_schema__');
  ELSE
    PERFORM pg_notify('wh_processed', n.payload)
    FROM (
      SELECT '__whizbang_schema__' || E'\n' || c.p || E'\t' || string_agg(c.id, ',') AS payload
      FROM (
        SELECT r.p, r.id::text AS id, (row_number() OVER (PARTITION BY r.p ORDER BY r.id) - 1) / p_notice_chunk AS chunk
        FROM unnest(v_removed_perspectives, v_removed_events) AS r(p, id)
      ) c
      GROUP BY c.p, c.chunk
    ) n;
  END IF;

  -- 8. Snapshots of the upserted pairs whose version crossed a multiple of p_snapshot_every.
  --    Each written row's new version is looked up in a map by table and id, not joined (see step 2).
  SELECT jsonb_object_agg(u.tab || ' ' || u.id, u.v) INTO v_versions_by_row
  FROM unnest(v_up_tables, v_up_ids, v_up_versions) AS u(tab, id, v);
  WITH due AS (
    SELECT m.s, m.p, m.e, m.d
    FROM unnest(p_model_tables, p_model_perspectives, p_model_streams, p_model_events, p_model_data, p_model_applied, p_model_delete)
      AS m(tab, p, s, e, d, applied, del)
    CROSS JOIN LATERAL (SELECT (v_versions_by_row ->> (m.tab || ' ' || m.s))::int AS v) u
    WHERE NOT m.del AND m.e IS NOT NULL AND u.v / p_snapshot_every > (u.v - m.applied) / p_snapshot_every
  ),
  written AS (
    INSERT INTO "__whizbang_schema__".wh_perspective_snapshots AS s (stream_id, perspective_name, event_id, data)
    SELECT due.s, due.p, due.e, due.d FROM due
    ON CONFLICT (stream_id, perspective_name, event_id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at
    RETURNING s.stream_id, s.perspective_name
  )
  SELECT array_agg(w.stream_id), array_agg(w.perspective_name) INTO v_snap_streams, v_snap_perspectives FROM written w;
  IF v_snap_streams IS NOT NULL THEN
    DELETE FROM "__whizbang_schema__".wh_perspective_snapshots s
    USING (
      SELECT x.stream_id, x.perspective_name, x.event_id,
             row_number() OVER (PARTITION BY x.stream_id, x.perspective_name ORDER BY x.event_id DESC) AS rank
      FROM "__whizbang_schema__".wh_perspective_snapshots x
      JOIN (SELECT DISTINCT * FROM unnest(v_snap_streams, v_snap_perspectives) AS p(stream_id, perspective_name)) p
        ON p.stream_id = x.stream_id AND p.perspective_name = x.perspective_name
    ) r
    WHERE s.stream_id = r.stream_id AND s.perspective_name = r.perspective_name AND s.event_id = r.event_id
      AND r.rank > p_snapshot_keep;
  END IF;
END;
$$;
