-- Wakes PerspectiveWorker consumers when work is appended, in the append transaction (so a listener is woken
-- only after the work rows are visible). Statement-level: one NOTIFY per INSERT statement, and Postgres folds
-- identical notifications within a transaction, so a batch append costs one message.
-- Channel `wh_work` is shared by every service schema in the database (a channel name is limited to 63 bytes,
-- as is a schema name, so the schema cannot be part of it); the payload names the schema, and a listener
-- ignores payloads of other schemas.
-- Every object is qualified with the placeholder schema; the migrator rewrites it to the service schema.
CREATE OR REPLACE FUNCTION "__whizbang_schema__".wh_notify_work() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
BEGIN
  PERFORM pg_notify('wh_work', TG_TABLE_SCHEMA);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER wh_perspective_events_notify_work
  AFTER INSERT ON "__whizbang_schema__".wh_perspective_events
  FOR EACH STATEMENT EXECUTE FUNCTION "__whizbang_schema__".wh_notify_work();
