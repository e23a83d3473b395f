CREATE TABLE "__whizbang_schema__"."wh_lifecycle_pending" (
	"event_id" uuid PRIMARY KEY NOT NULL,
	"stream_id" uuid NOT NULL,
	"claimed_by" uuid,
	"claimed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "wh_lifecycle_pending_stream_idx" ON "__whizbang_schema__"."wh_lifecycle_pending" USING btree ("stream_id");