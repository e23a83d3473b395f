CREATE TABLE "__whizbang_schema__"."wh_active_streams" (
	"stream_id" uuid PRIMARY KEY NOT NULL,
	"instance_id" uuid,
	"partition_number" integer NOT NULL,
	"lease_expiry" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_dead_letters" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"work_id" uuid NOT NULL,
	"stream_id" uuid NOT NULL,
	"perspective_name" text NOT NULL,
	"event_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"payload" jsonb,
	"error" text NOT NULL,
	"attempts" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_events" (
	"event_id" uuid PRIMARY KEY NOT NULL,
	"stream_id" uuid NOT NULL,
	"stream_version" bigint NOT NULL,
	"event_type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"scope" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wh_events_stream_version_key" UNIQUE("stream_id","stream_version")
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_perspective_cursors" (
	"stream_id" uuid NOT NULL,
	"perspective_name" text NOT NULL,
	"last_event_id" uuid,
	"status" integer DEFAULT 0 NOT NULL,
	"error" text,
	"processed_at" timestamp with time zone,
	"rewind_trigger_event_id" uuid,
	"rewind_first_flagged_at" timestamp with time zone,
	"rewind_flagged_at" timestamp with time zone,
	"stream_lock_instance_id" uuid,
	"stream_lock_expiry" timestamp with time zone,
	"stream_lock_reason" text,
	CONSTRAINT "wh_perspective_cursors_pkey" PRIMARY KEY("stream_id","perspective_name")
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_perspective_events" (
	"work_id" uuid PRIMARY KEY NOT NULL,
	"stream_id" uuid NOT NULL,
	"perspective_name" text NOT NULL,
	"event_id" uuid NOT NULL,
	"instance_id" uuid,
	"lease_expiry" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error" text,
	"scheduled_for" timestamp with time zone,
	"partition_number" integer NOT NULL,
	"processed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wh_perspective_events_stream_perspective_event_key" UNIQUE("stream_id","perspective_name","event_id")
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_perspective_snapshots" (
	"stream_id" uuid NOT NULL,
	"perspective_name" text NOT NULL,
	"event_id" uuid NOT NULL,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wh_perspective_snapshots_pkey" PRIMARY KEY("stream_id","perspective_name","event_id")
);
--> statement-breakpoint
CREATE TABLE "__whizbang_schema__"."wh_service_instances" (
	"instance_id" uuid PRIMARY KEY NOT NULL,
	"service_name" text NOT NULL,
	"host_name" text NOT NULL,
	"process_id" integer NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"metadata" jsonb
);
--> statement-breakpoint
CREATE INDEX "wh_active_streams_instance_idx" ON "__whizbang_schema__"."wh_active_streams" USING btree ("instance_id");--> statement-breakpoint
CREATE INDEX "wh_dead_letters_stream_perspective_idx" ON "__whizbang_schema__"."wh_dead_letters" USING btree ("stream_id","perspective_name","event_id");--> statement-breakpoint
CREATE INDEX "wh_perspective_events_claim_idx" ON "__whizbang_schema__"."wh_perspective_events" USING btree ("event_id") WHERE processed_at IS NULL;--> statement-breakpoint
CREATE INDEX "wh_perspective_events_instance_idx" ON "__whizbang_schema__"."wh_perspective_events" USING btree ("instance_id","lease_expiry");