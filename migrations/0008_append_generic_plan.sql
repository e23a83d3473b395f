-- The append function's statements are planned once per connection, not at every call. PL/pgSQL re-planned the
-- work-row insert (a join of the event list with the routes of every registered version) for each append, as a
-- custom plan for its arguments: about 100 µs of a 0.7 ms append on this project's PostgreSQL 15. Its statements look
-- rows up by key whatever the arguments, so one generic plan serves every call (pgbench, one event per append:
-- 1,450-1,590 → 1,960-1,980 appends/s with 1 client, 3,025 → 4,189 with 8). A later CREATE OR REPLACE of this
-- function drops the setting: repeat the SET clause there.
ALTER FUNCTION "__whizbang_schema__".wh_append_events(uuid, bigint, uuid[], boolean[], text[], jsonb[], text, text, text, jsonb, text[], text[], integer, text[])
  SET plan_cache_mode = force_generic_plan;
