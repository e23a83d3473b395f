-- A hand-over (cutover or rollback) is owned while it runs. The version is 'ready' (read-your-writes waits include
-- it) from the first commit of the hand-over until the switch to 'live' commits or the hand-over gives up. Its owner
-- (a random id per hand-over, not an instance: `whizbang cutover` runs hand-overs too) renews `handover_until` every
-- third of its lease (default 10 s); a graceful stop sets it to now(). Once it has passed (the owner was killed,
-- crashed or stopped), the build loop of an instance that runs the version takes the hand-over over under the row
-- lock (one taker) and finishes it. `handover_from` is the state to return to if it gives up (timeout, dead letters),
-- `handover_grace_seconds` how long the version it replaces is kept up to date. A 'ready' row with no
-- `handover_until` (left by a release before this migration) counts as abandoned.
ALTER TABLE "__whizbang_schema__"."wh_perspective_versions"
  ADD COLUMN "handover_owner" uuid,
  ADD COLUMN "handover_until" timestamp with time zone,
  ADD COLUMN "handover_from" text,
  ADD COLUMN "handover_grace_seconds" double precision;
