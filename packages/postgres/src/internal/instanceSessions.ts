/**
 * Which registered instances are gone, told by their LISTEN connection's server session rather than by their
 * silence. Each instance records the session of its process's LISTEN connection on its row
 * (`PgClient.listenSession`); a process that dies (kill -9, OOM, a lost node) takes that session with it at once,
 * while its heartbeat only goes stale after the threshold (30 s by default), and partitions spread to it wait out
 * the affinity grace until then.
 *
 * An instance is detached when the session it recorded ran on this very run of the server (same start time) and no
 * session of the server has that pid and backend start now. A session recorded before a server restart, or on
 * another server (a LISTEN connection elsewhere than the pool's), is never taken for gone: such instances are left
 * to the heartbeat threshold, as before. A pid reused by a newer session keeps the instance until the threshold
 * where the backend's start is hidden from this role (another role's session without `pg_read_all_stats`).
 *
 * @internal
 */
import { Effect, Option } from "effect"
import type { Shape as Client } from "../PgClient.js"
import * as Sql from "../sql/serviceInstances.js"

/** A session recorded on an instance's row. */
export type Recorded = typeof Sql.RecordedSession.Type

/** The server's start and its sessions now. */
export type Server = typeof Sql.ServerSessions.Type

/** The recorded sessions that have ended (see the module notes). */
export const ended = (recorded: ReadonlyArray<Recorded>, server: Server): ReadonlyArray<Recorded> => {
  const starts = new Map<number, string | null>()
  server.pids.forEach((pid, k) => starts.set(pid, server.backendStarts[k] ?? null))
  return recorded.filter((r) => {
    if (r.serverStart !== server.serverStart) return false
    if (!starts.has(r.pid)) return true
    const start = starts.get(r.pid)
    return start !== null && start !== r.backendStart
  })
}

/**
 * The other instances whose session has ended. Two reads: the rows' sessions (routed wherever the instance table
 * lives, a Citus worker included), then the server's sessions (`pg_stat_activity`, on the server the client talks
 * to, where the LISTEN connections are), only when some row has one.
 */
export const detached = (client: Client, instanceId: string) =>
  Effect.gen(function* () {
    const recorded = yield* Sql.recordedSessions(client, { instanceId })
    if (recorded.length === 0) return []
    const server = yield* Sql.serverSessions(client)
    return Option.match(server, { onNone: () => [], onSome: (now) => ended(recorded, now) })
  })
