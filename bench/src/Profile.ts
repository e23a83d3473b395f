/** Run profiles: `quick` (about a minute, a CI smoke test) and `full` (the published figures). */

export interface Profile {
  readonly name: string
  readonly repetitions: number
  readonly throughput: {
    readonly events: number
    readonly streams: number
    readonly instances: ReadonlyArray<number>
    readonly baselineLoops: ReadonlyArray<number>
    /** Peers process this many events (same formulas, so the same data as the first `peerEvents` events). */
    readonly peerEvents: number
    readonly peers: ReadonlyArray<"graphile-worker" | "pg-boss" | "emmett">
    /** Whizbang instances each in their own process (default), or all in the bench process (`--in-process`). */
    readonly workerProcesses: boolean
  }
  readonly latency: { readonly rates: ReadonlyArray<number>; readonly seconds: number; readonly streams: number }
  readonly scale: { readonly events: number; readonly streams: number }
  /**
   * Scenario v: history of `events` over `streams` streams with version 1 materialized; version 2 of `counter` rebuilt
   * while live appends go on, once per rate of `appendRates` (appends/s). `killAt` (a fraction of the history's streams):
   * one more run at the first rate whose worker is killed (SIGKILL) once that share of the history is replayed, and a
   * new worker process started in its place; off when undefined. Its own repetitions (a full-size rebuild takes
   * minutes); `--reps` sets both. `analyzeEveryMs` (diagnosis, off by default): ANALYZE of the work table at that
   * interval during the rebuild. `builder` (`--rebuild-builder`): the history replayed by a builder process of its own
   * (`PgPerspectivePipeline.layerBuild`, what `Whizbang.layerBuilder` runs) beside the worker process, whose replay is off.
   */
  readonly rebuild: {
    readonly events: number
    readonly streams: number
    readonly appendRates: ReadonlyArray<number>
    readonly killAt?: number | undefined
    readonly repetitions: number
    readonly analyzeEveryMs?: number | undefined
    readonly builder?: boolean | undefined
  }
  /**
   * Scenario t: `tenants` tenants sharing scenario a's events and streams (`throughput.events` / `.streams`, spread
   * evenly), `workers` tenant worker processes; `idleSeconds` of idle measurement; `quietTenants` appending
   * `quietRate` events/s each, for `lagSeconds` without a replay and then while one tenant replays `replayEvents`
   * events over `replayStreams` streams.
   */
  readonly tenants: {
    readonly tenants: number
    readonly workers: number
    readonly idleSeconds: number
    readonly quietTenants: number
    readonly quietRate: number
    readonly lagSeconds: number
    readonly replayEvents: number
    readonly replayStreams: number
  }
  /** Scenario c: requests (append -> wait -> read) per (worker placement, rate). */
  readonly readYourWrites: {
    readonly rates: ReadonlyArray<number>
    readonly iterations: number
    readonly streams: number
    readonly modes: ReadonlyArray<"in-process" | "cross-process">
  }
}

export const quick: Profile = {
  name: "quick",
  repetitions: 1,
  throughput: {
    events: 6_000,
    streams: 600,
    instances: [1, 2],
    baselineLoops: [1],
    peerEvents: 1_500,
    peers: ["graphile-worker", "pg-boss", "emmett"],
    workerProcesses: true
  },
  latency: { rates: [200, 1_000], seconds: 3, streams: 500 },
  scale: { events: 20_000, streams: 2_000 },
  rebuild: { events: 5_000, streams: 500, appendRates: [200], repetitions: 1 },
  tenants: {
    tenants: 100,
    workers: 2,
    idleSeconds: 5,
    quietTenants: 10,
    quietRate: 5,
    lagSeconds: 5,
    replayEvents: 10_000,
    replayStreams: 1_000
  },
  readYourWrites: { rates: [200, 1_000], iterations: 600, streams: 500, modes: ["in-process", "cross-process"] }
}

export const full: Profile = {
  name: "full",
  repetitions: 3,
  throughput: {
    events: 100_000,
    streams: 10_000,
    instances: [1, 2, 3],
    baselineLoops: [1, 2],
    peerEvents: 100_000,
    peers: ["graphile-worker", "pg-boss", "emmett"],
    workerProcesses: true
  },
  latency: { rates: [200, 1_000, 3_000], seconds: 20, streams: 2_000 },
  scale: { events: 1_000_000, streams: 100_000 },
  rebuild: { events: 1_000_000, streams: 100_000, appendRates: [200, 1_000], killAt: 0.4, repetitions: 1 },
  tenants: {
    tenants: 1_000,
    workers: 2,
    idleSeconds: 20,
    quietTenants: 20,
    quietRate: 5,
    lagSeconds: 15,
    replayEvents: 100_000,
    replayStreams: 10_000
  },
  readYourWrites: { rates: [200, 1_000], iterations: 10_000, streams: 2_000, modes: ["in-process", "cross-process"] }
}

/** A `--name N` flag as a positive integer (undefined when absent). */
export const numberArg = (args: ReadonlyArray<string>, name: string) => {
  const i = args.indexOf(`--${name}`)
  if (i === -1) return undefined
  const n = Number(args[i + 1])
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} needs a positive integer, got ${args[i + 1]}`)
  return n
}

export const stringArg = (args: ReadonlyArray<string>, name: string) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : args[i + 1]
}

/** A comma-separated list of positive integers (`--instances 1,2`). */
const listArg = (args: ReadonlyArray<string>, name: string): ReadonlyArray<number> | undefined => {
  const raw = stringArg(args, name)
  if (raw === undefined) return undefined
  const values = raw.split(",").map((v) => Number(v.trim()))
  if (values.some((v) => !Number.isInteger(v) || v < 1))
    throw new Error(`--${name} must be positive integers separated by commas, got ${raw}`)
  return values
}

/** `--ryw-modes in-process,cross-process`: where scenario c's worker runs. */
const modesArg = (args: ReadonlyArray<string>): ReadonlyArray<"in-process" | "cross-process"> | undefined => {
  const raw = stringArg(args, "ryw-modes")
  if (raw === undefined) return undefined
  const modes = raw.split(",").map((m) => m.trim())
  const bad = modes.find((m) => m !== "in-process" && m !== "cross-process")
  if (bad !== undefined) throw new Error(`--ryw-modes must be in-process and/or cross-process separated by commas, got ${raw}`)
  return modes as ReadonlyArray<"in-process" | "cross-process">
}

const killAtArg = (args: ReadonlyArray<string>): number | undefined => {
  const raw = stringArg(args, "rebuild-kill-at")
  if (raw === undefined) return undefined
  const f = Number(raw)
  if (!(f >= 0 && f < 1)) throw new Error(`--rebuild-kill-at must be a fraction in [0, 1), got ${raw}`)
  return f
}

const killAtOf = (given: number | undefined, base: number | undefined) => (given === undefined ? base : given === 0 ? undefined : given)

/**
 * The profile named by `--profile`, with overrides: --reps, --events, --streams, --peer-events, --scale-events,
 * --scale-streams, --latency-seconds, --latency-rates 200,1000 (scenario b), --instances 1,2 (Whizbang instance counts), --baseline-loops 1,2, --peers none,
 * --in-process (scenario a's Whizbang instances in the bench process instead of one process each),
 * --ryw-rates 200,1000, --ryw-iterations N, --ryw-modes in-process,cross-process (scenario c), --rebuild-events N,
 * --rebuild-streams N, --rebuild-rate 200,1000 (scenario v's live appends/s, a run per rate), --rebuild-kill-at F (scenario v:
 * the share of the history replayed when its worker is killed, 0 for no kill run), --rebuild-builder (scenario v: the replay in a builder process of its own), --rebuild-analyze-ms N (scenario v, diagnosis:
 * ANALYZE the work table every N ms during the rebuild), --tenants N, --tenant-workers N, --idle-seconds N, --quiet-tenants N,
 * --quiet-rate N, --lag-seconds N, --replay-events N, --replay-streams N (scenario t).
 */
export const fromArgs = (args: ReadonlyArray<string>): Profile => {
  const name = stringArg(args, "profile") ?? "full"
  const base = name === "quick" ? quick : name === "full" ? full : undefined
  if (base === undefined) throw new Error(`--profile must be quick or full, got ${name}`)
  const events = numberArg(args, "events") ?? base.throughput.events
  return {
    ...base,
    repetitions: numberArg(args, "reps") ?? base.repetitions,
    throughput: {
      ...base.throughput,
      events,
      streams: numberArg(args, "streams") ?? base.throughput.streams,
      peerEvents: Math.min(events, numberArg(args, "peer-events") ?? base.throughput.peerEvents),
      instances: listArg(args, "instances") ?? base.throughput.instances,
      baselineLoops: listArg(args, "baseline-loops") ?? base.throughput.baselineLoops,
      peers: stringArg(args, "peers") === "none" ? [] : base.throughput.peers,
      workerProcesses: !args.includes("--in-process")
    },
    latency: {
      ...base.latency,
      rates: listArg(args, "latency-rates") ?? base.latency.rates,
      seconds: numberArg(args, "latency-seconds") ?? base.latency.seconds
    },
    scale: {
      events: numberArg(args, "scale-events") ?? base.scale.events,
      streams: numberArg(args, "scale-streams") ?? base.scale.streams
    },
    rebuild: {
      events: numberArg(args, "rebuild-events") ?? base.rebuild.events,
      streams: numberArg(args, "rebuild-streams") ?? base.rebuild.streams,
      appendRates: listArg(args, "rebuild-rate") ?? base.rebuild.appendRates,
      killAt: killAtOf(killAtArg(args), base.rebuild.killAt),
      repetitions: numberArg(args, "reps") ?? base.rebuild.repetitions,
      analyzeEveryMs: numberArg(args, "rebuild-analyze-ms"),
      builder: args.includes("--rebuild-builder")
    },
    tenants: {
      tenants: numberArg(args, "tenants") ?? base.tenants.tenants,
      workers: numberArg(args, "tenant-workers") ?? base.tenants.workers,
      idleSeconds: numberArg(args, "idle-seconds") ?? base.tenants.idleSeconds,
      quietTenants: numberArg(args, "quiet-tenants") ?? base.tenants.quietTenants,
      quietRate: numberArg(args, "quiet-rate") ?? base.tenants.quietRate,
      lagSeconds: numberArg(args, "lag-seconds") ?? base.tenants.lagSeconds,
      replayEvents: numberArg(args, "replay-events") ?? base.tenants.replayEvents,
      replayStreams: numberArg(args, "replay-streams") ?? base.tenants.replayStreams
    },
    readYourWrites: {
      ...base.readYourWrites,
      rates: listArg(args, "ryw-rates") ?? base.readYourWrites.rates,
      iterations: numberArg(args, "ryw-iterations") ?? base.readYourWrites.iterations,
      modes: modesArg(args) ?? base.readYourWrites.modes
    }
  }
}
