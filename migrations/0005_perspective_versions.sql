-- Perspective versions (blue/green rebuilds). One row per version of a perspective that an instance registered:
-- its key (`perspective_name`, the name its work rows, cursors and dead letters are filed under: the base name
-- for version 1, `<base>__v<N>` after), the event types it handles and its state:
--   building  its history is being replayed (`wh_perspective_backfill` holds the streams still to plan) or it lags;
--   ready     caught up and being handed over: read-your-writes waits include it;
--   live      `wh_per_<base>` (a view) serves its rows; exactly one per base name;
--   retiring  was live until a cutover; still kept up to date until `retire_after`, so a rollback is instant;
--   retired   no longer routed nor processed (its table is kept).
-- Appends route each event to every version not retired that handles its type, whoever appends.
CREATE TABLE "__whizbang_schema__"."wh_perspective_versions" (
	"perspective_name" text PRIMARY KEY NOT NULL,
	"base_name" text NOT NULL,
	"version" integer NOT NULL,
	"state" text NOT NULL,
	"event_types" text[] NOT NULL,
	"registered_at" timestamp with time zone DEFAULT now() NOT NULL,
	"state_changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retire_after" timestamp with time zone,
	"backfill_streams" integer DEFAULT 0 NOT NULL,
	"backfill_events" bigint DEFAULT 0 NOT NULL,
	"fingerprint" text,
	CONSTRAINT "wh_perspective_versions_base_version_key" UNIQUE("base_name","version"),
	CONSTRAINT "wh_perspective_versions_state_check" CHECK (state IN ('building', 'ready', 'live', 'retiring', 'retired'))
);
--> statement-breakpoint
-- The history a version still has to be given: per stream, the newest event id that existed when the version was
-- registered (every later event was routed to it by its append). A row is deleted in the same transaction that
-- inserts the stream's history as work rows, and while it exists the version's work on that stream is not
-- fetched, so the history and the live events are applied in order, once.
CREATE TABLE "__whizbang_schema__"."wh_perspective_backfill" (
	"perspective_name" text NOT NULL,
	"stream_id" uuid NOT NULL,
	"through_event_id" uuid NOT NULL,
	CONSTRAINT "wh_perspective_backfill_pkey" PRIMARY KEY("perspective_name","stream_id")
);
--> statement-breakpoint
-- false: `PostPerspective` receptors do not fire for this work (replayed history, or a version that was not live
-- when the event was appended).
ALTER TABLE "__whizbang_schema__"."wh_perspective_events" ADD COLUMN "fires" boolean DEFAULT true NOT NULL;
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
  IF cardinality(p_lifecycle_types) > 0 THEN
    INSERT INTO "__whizbang_schema__".wh_lifecycle_pending (event_id, stream_id)
    SELECT v_ids[i], p_stream_id FROM generate_subscripts(v_ids, 1) AS i WHERE p_event_types[i] = ANY (p_lifecycle_types);
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_version, v_ids;
END;
$$;
--> statement-breakpoint
-- Tells read-your-writes listeners (channel `wh_processed`, in commit order with the completions' notifications)
-- when the versions serving a base name change: a line `@versions<TAB><base>:<1|0>` after the schema, 1 when the
-- base alone serves its reads (its only 'live' or 'ready' version is the key equal to the base name). A listener
-- may then settle a wait from a completion's payload without asking the database only while that holds.
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_notify_versions() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
DECLARE
  v_base text := CASE WHEN TG_OP = 'DELETE' THEN OLD.base_name ELSE NEW.base_name END;
  v_alone boolean;
BEGIN
  EXECUTE format(
    'SELECT count(*) > 0 AND bool_and(perspective_name = $1) FROM %I.wh_perspective_versions WHERE base_name = $1 AND state IN (''live'', ''ready'')',
    TG_TABLE_SCHEMA
  ) INTO v_alone USING v_base;
  PERFORM pg_notify('wh_processed', TG_TABLE_SCHEMA || E'\n@versions\t' || v_base || ':' || CASE WHEN coalesce(v_alone, false) THEN '1' ELSE '0' END);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER wh_perspective_versions_notify
  AFTER INSERT OR UPDATE OF state OR DELETE ON "__whizbang_schema__".wh_perspective_versions
  FOR EACH ROW EXECUTE FUNCTION "__whizbang_schema__".wh_notify_versions();
