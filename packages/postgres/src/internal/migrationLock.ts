// The advisory lock of a schema's migrations (transaction-scoped): migrations of one schema run one at a time across
// processes, and a tenant's removal drops its schema under the same lock, so a migration never re-creates a schema
// that a removal is dropping.
import type { Shape } from "../PgClient.js"
import * as Sql from "../sql/migrations.js"

/** Takes the lock of `schema` (default the client's) for the client's current transaction. */
export const take = (client: Shape, schema: string = client.schema) => Sql.lock(client, { schema })
