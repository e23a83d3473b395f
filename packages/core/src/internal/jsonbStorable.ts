// What PostgreSQL's jsonb refuses although JSON.stringify accepts it. Checked before an append in every store, so
// the memory store refuses what Postgres would, and Postgres never turns bad input into a retryable
// EventStoreUnavailable: NUL (\u0000) and unpaired UTF-16 surrogates (JSON.stringify writes them as \ud800
// escapes, which jsonb rejects), in strings and keys, and nesting deep enough to exhaust the server's parser stack.

/** Deepest nesting accepted; PostgreSQL's default 2 MB stack parses ~10,000 levels, so this leaves a wide margin. */
export const maxDepth = 1_000

// With the `u` flag a well-formed surrogate pair is one code point, so only unpaired halves match.
const unpairedSurrogate = /[\uD800-\uDFFF]/u

const stringProblem = (value: string, what: string): string | undefined => {
  if (value.includes("\u0000")) return `${what} contains a NUL character (\\u0000), which PostgreSQL cannot store in jsonb`
  if (unpairedSurrogate.test(value))
    return `${what} contains an unpaired UTF-16 surrogate, which is not valid Unicode and PostgreSQL cannot store in jsonb`
  return undefined
}

/** Why jsonb cannot store a JSON value, or undefined when it can. */
export const storageProblem = (value: unknown): string | undefined => {
  const stack: Array<readonly [unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!
    if (typeof current === "string") {
      const problem = stringProblem(current, "a string")
      if (problem !== undefined) return problem
    } else if (current !== null && typeof current === "object") {
      if (depth > maxDepth) return `nested deeper than ${maxDepth} levels`
      if (Array.isArray(current)) {
        for (const item of current) stack.push([item, depth + 1])
      } else {
        for (const [key, item] of Object.entries(current)) {
          const problem = stringProblem(key, "a key")
          if (problem !== undefined) return problem
          stack.push([item, depth + 1])
        }
      }
    }
  }
  return undefined
}
