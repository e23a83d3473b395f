/**
 * SQL for one perspective version's table (`wh_per_<base>__v<N>`, see `PerspectiveTable`) and for reads through
 * the view of the live version. Names are validated perspective keys and are quoted; every value is a bound parameter.
 */
import * as Identifier from "../internal/identifier.js"
import * as PerspectiveTable from "../internal/perspectiveTable.js"

/** The quoted table of one version's read-model rows (`name`: a perspective key). */
export const table = (name: string) => Identifier.quote(PerspectiveTable.ofVersion(name))

/** The quoted relation a read of `name` reads (a base name: the view of the live version). */
const readable = (name: string) => Identifier.quote(PerspectiveTable.forRead(name))

export const createTable = (name: string) => `
CREATE TABLE IF NOT EXISTS ${table(name)} (
  id uuid PRIMARY KEY,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  scope jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  version bigint NOT NULL DEFAULT 1
) WITH (fillfactor = 70)`

/** Params: parallel arrays $1 ids, $2 data, $3 metadata, $4 scope, $5 events applied. Returns each row's new version. */
export const upsertRows = (name: string) => `
INSERT INTO ${table(name)} AS t (id, data, metadata, scope, version)
SELECT id, data, metadata, scope, applied FROM unnest($1::uuid[], $2::jsonb[], $3::jsonb[], $4::jsonb[], $5::int[]) AS r(id, data, metadata, scope, applied)
ON CONFLICT (id) DO UPDATE
  SET data = excluded.data, metadata = excluded.metadata, scope = excluded.scope, version = t.version + excluded.version, updated_at = excluded.updated_at
RETURNING t.id, t.version::int AS version`

/** Params: $1 ids. */
export const deleteRows = (name: string) => `DELETE FROM ${table(name)} WHERE id = ANY($1::uuid[])`

/** Params: $1 ids. */
export const selectRows = (name: string) =>
  `SELECT id, data, metadata, scope, version::int AS version, created_at, updated_at FROM ${readable(name)} WHERE id = ANY($1::uuid[])`

/** Params: $1 jsonb containment filter, $2 limit, $3 offset. */
export const queryRows = (name: string) =>
  `SELECT id, data, metadata, scope, version::int AS version, created_at, updated_at FROM ${readable(name)} WHERE data @> $1::jsonb ORDER BY id LIMIT $2::int OFFSET $3::int`
