/** The schemas of this database that hold Whizbang tables (a `wh_events` table), for a "no such table" hint. */
export const withWhizbangTables = `
SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = 'wh_events' AND c.relkind IN ('r', 'p') ORDER BY 1`
