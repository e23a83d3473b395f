/**
 * Work wake-ups inside one process, without a round trip. An append committed outside a caller's transaction
 * wakes this process's work listeners at once (`publish`), and its `NOTIFY wh_work` carries `processToken`, so
 * those same listeners skip it when it arrives while every other process's listeners act on it. A worker in the
 * appending process (every `Whizbang.layer` instance) so starts its claim right after the commit instead of a
 * NOTIFY round trip later.
 *
 * Missing a local wake-up is never a correctness issue (the NOTIFY and the safety-net poll stay); a spurious one
 * (another database with the same schema name in this process) costs one claim.
 *
 * @internal
 */
import { randomUUID } from "node:crypto"

/** Names this process in the payload of the NOTIFYs it sends (`<schema>\n<token>`). @internal */
export const processToken: string = randomUUID()

/** Whether a `wh_work` notification's detail (after the schema) names this process. @internal */
export const fromThisProcess = (detail: string | undefined): boolean => detail === processToken

const listeners = new Set<(schema: string) => void>()

/** Wakes this process's listeners of `schema` (synchronously; never throws). @internal */
export const publish = (schema: string): void => {
  for (const listener of listeners) listener(schema)
}

/** Registers a listener; returns its removal. @internal */
export const subscribe = (listener: (schema: string) => void): (() => void) => {
  listeners.add(listener)
  return () => void listeners.delete(listener)
}
