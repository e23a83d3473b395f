/**
 * Deterministic snake_case for identifiers: `OrderSummaryV2` -> `order_summary_v2`, `HTTPLog` -> `http_log`.
 * Used only to suggest a valid perspective name, never to rewrite one.
 */
export const toSnakeCase = (input: string): string =>
  input
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase()
