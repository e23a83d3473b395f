-- Live work before background work: the claim walks live work (`fires`: the live versions' events) and background
-- work (a version's history, the events routed to a version being built) on separate partial indexes, so live
-- work is found at once during a rebuild (history event ids are older than any live one, and the one index walked
-- them first), and the search for background work costs nothing when there is none.
DROP INDEX IF EXISTS "__whizbang_schema__"."wh_perspective_events_claim_idx";
--> statement-breakpoint
CREATE INDEX "wh_perspective_events_claim_idx" ON "__whizbang_schema__"."wh_perspective_events" USING btree ("event_id") WHERE processed_at IS NULL AND fires;
--> statement-breakpoint
CREATE INDEX "wh_perspective_events_background_claim_idx" ON "__whizbang_schema__"."wh_perspective_events" USING btree ("event_id") WHERE processed_at IS NULL AND NOT fires;
