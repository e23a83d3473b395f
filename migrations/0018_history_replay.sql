-- When the replay of a version's planned history started (`PgHistoryReplay`: its first chunk): the origin of the
-- replay rate and ETA shown by `whizbang perspectives`, status and the logs. Null while nothing was replayed yet;
-- `whizbang rebuild` sets it back to null when it plans a perspective's history again.
ALTER TABLE "__whizbang_schema__"."wh_perspective_versions" ADD COLUMN "replay_started_at" timestamp with time zone;
