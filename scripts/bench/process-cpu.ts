/**
 * Where a benchmark's CPU went, by process (Linux /proc): this process (the gateway node, with the in-process
 * simulator; or the gateway node processes it started, in bench:cluster), the PostgreSQL and nats-server processes it started, and its other children, running or finished (the
 * load generator or the webhook receiver; a finished one counts once it has been reaped). Elsewhere than Linux every figure is unavailable (null).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const CPU_GROUPS = ['gateway', 'postgres', 'nats', 'connector', 'load generator'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

/** CPU seconds per group since boot, at one moment. */
export type CpuSample = Readonly<Record<CpuGroup, number>>;

export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
  /** utime + stime, in clock ticks. */
  readonly own: number;
  /** cutime + cstime: reaped children, in clock ticks. */
  readonly children: number;
}

let ticksPerSecond: number | null = null;

function clockTicks(): number {
  if (ticksPerSecond === null) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

function readStat(pid: number, path = `/proc/${pid}/stat`): ProcStat | null {
  try {
    const text = readFileSync(path, 'utf8');
    // the command name is in parentheses and may itself hold spaces or parentheses
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const fields = text.slice(close + 2).split(' ');
    const field = (n: number) => Number(fields[n - 3]);
    return { pid, ppid: field(4), comm, own: field(14) + field(15), children: field(16) + field(17) };
  } catch {
    return null;
  }
}

/** The processes of /proc now; null where /proc is not available. */
function readAllStats(): ProcStat[] | null {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return null;
  }
  return pids.map((pid) => readStat(pid)).filter((s): s is ProcStat => s !== null);
}

/**
 * CPU seconds of each group now; null where /proc is not available.
 *
 * - `connectorPids`: the carrier connector's processes.
 * - `gatewayPids`: the gateway node processes when they are children of this one (bench:cluster); this process
 *   then counts as the load generator. Without them, this process is the gateway.
 */
export function sampleCpu(connectorPids: readonly number[] = [], gatewayPids?: readonly number[]): CpuSample | null {
  const stats = readAllStats();
  if (!stats) return null;
  const ticks = groupTicks(stats, process.pid, connectorPids, gatewayPids);
  if (!ticks) return null;
  const hz = clockTicks();
  return Object.fromEntries(CPU_GROUPS.map((group) => [group, ticks[group] / hz])) as CpuSample;
}

/** Whether a process descends from `selfPid`, by the parent links of `byPid`. */
function descendsFrom(byPid: ReadonlyMap<number, ProcStat>, selfPid: number): (stat: ProcStat) => boolean {
  return (stat) => {
    for (let parent = byPid.get(stat.ppid), hops = 0; parent && hops < 64; parent = byPid.get(parent.ppid), hops++) {
      if (parent.pid === selfPid) return true;
    }
    return false;
  };
}

/**
 * Clock ticks among `stats` of the descendants of `selfPid`, by the group `classify` gives each from its pid and
 * command name (null: not counted), each process with the children it has reaped (so a group's difference between
 * two readings is what it used in between, exited processes included). Null when `selfPid` is not among `stats`.
 */
export function namedGroupTicks<G extends string>(
  stats: readonly ProcStat[],
  selfPid: number,
  groups: readonly G[],
  classify: (pid: number, comm: string) => G | null,
): Record<G, number> | null {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  if (!byPid.has(selfPid)) return null;
  const descendsFromSelf = descendsFrom(byPid, selfPid);
  const ticks = Object.fromEntries(groups.map((group) => [group, 0])) as Record<G, number>;
  for (const stat of stats) {
    if (stat.pid === selfPid || !descendsFromSelf(stat)) continue;
    const group = classify(stat.pid, stat.comm);
    if (group !== null) ticks[group] += stat.own + stat.children;
  }
  return ticks;
}

/**
 * CPU seconds of a process's main thread alone (the thread whose id is the process's): what bounds one event loop,
 * whatever its other threads do; null when it is not there.
 */
export function mainThreadCpu(pid: number): number | null {
  const stat = readStat(pid, `/proc/${pid}/task/${pid}/stat`);
  return stat === null ? null : stat.own / clockTicks();
}

/** The machine's CPU time since boot over all its CPUs (/proc/stat), in ms: busy (everything but idle and I/O wait) and idle. */
export interface MachineCpu {
  readonly busyMs: number;
  readonly idleMs: number;
}

/** /proc/stat's first line (`cpu  user nice system idle iowait irq softirq steal …`, in ticks) as ms; null if it is not that line. */
export function parseMachineCpu(line: string, ticksPerSecond: number): MachineCpu | null {
  const [label, ...fields] = line.trim().split(/\s+/);
  const ticks = fields.slice(0, 8).map(Number);
  if (label !== 'cpu' || ticks.length < 5 || ticks.some((n) => !Number.isFinite(n))) return null;
  // guest time is inside user already, so only the first eight fields count
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  const busy = ticks.reduce((sum, n) => sum + n, 0) - idle;
  const msPerTick = 1000 / ticksPerSecond;
  return { busyMs: busy * msPerTick, idleMs: idle * msPerTick };
}

/** The machine's CPU time now (/proc/stat); null where it is not available. */
export function machineCpu(): MachineCpu | null {
  try {
    return parseMachineCpu(readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '', clockTicks());
  } catch {
    return null;
  }
}

/** A thread's time since it started, in ms: on a CPU, and runnable but waiting on a run queue for one. */
export interface ThreadSchedule {
  readonly runMs: number;
  readonly waitMs: number;
}

/** A schedstat file's text (`<ns on a CPU> <ns waiting on a run queue> <time slices>`) as ms; null if it is not that. */
export function parseSchedstat(text: string): ThreadSchedule | null {
  const [run, wait] = text.trim().split(/\s+/).map(Number);
  if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) return null;
  return { runMs: run / 1e6, waitMs: wait / 1e6 };
}

/**
 * The scheduler's account of a process's main thread (/proc/<pid>/task/<pid>/schedstat): how long it ran, and how
 * long it was ready to run while no CPU took it. Null when the thread or the file is not there.
 */
export function mainThreadSchedule(pid: number): ThreadSchedule | null {
  try {
    return parseSchedstat(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8'));
  } catch {
    return null;
  }
}

/** CPU seconds now of this process's descendants by the groups of `classify` (see namedGroupTicks); null without /proc. */
export function sampleProcessCpu<G extends string>(
  groups: readonly G[],
  classify: (pid: number, comm: string) => G | null,
): Readonly<Record<G, number>> | null {
  const stats = readAllStats();
  const ticks = stats === null ? null : namedGroupTicks(stats, process.pid, groups, classify);
  if (!ticks) return null;
  const hz = clockTicks();
  return Object.fromEntries(groups.map((group) => [group, ticks[group] / hz])) as Record<G, number>;
}

/**
 * Clock ticks of each group among `stats` (one reading of /proc), counting only `selfPid` and its descendants; null
 * when `selfPid` is not among them. A process's ticks are its own plus those of its children it has reaped: a
 * PostgreSQL backend that exits (a pool closing an idle connection) moves its CPU into the postmaster's, instead of
 * out of the sum. A gateway pid that is not there (the node died) makes the gateway group NaN.
 */
export function groupTicks(
  stats: readonly ProcStat[],
  selfPid: number,
  connectorPids: readonly number[] = [],
  gatewayPids?: readonly number[],
): Record<CpuGroup, number> | null {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const self = byPid.get(selfPid);
  if (!self) return null;
  const descendsFromSelf = descendsFrom(byPid, selfPid);
  const gateways = new Set(gatewayPids ?? []);
  const ticks: Record<CpuGroup, number> =
    gatewayPids === undefined
      ? { gateway: self.own, postgres: 0, nats: 0, connector: 0, 'load generator': self.children }
      : { gateway: 0, postgres: 0, nats: 0, connector: 0, 'load generator': self.own + self.children };
  for (const pid of gateways) {
    const stat = byPid.get(pid);
    ticks.gateway += stat && descendsFromSelf(stat) ? stat.own + stat.children : Number.NaN;
  }
  for (const stat of stats) {
    if (stat.pid === selfPid || gateways.has(stat.pid) || !descendsFromSelf(stat)) continue;
    if (stat.comm === 'postgres') ticks.postgres += stat.own + stat.children;
    else if (stat.comm === 'nats-server') ticks.nats += stat.own;
    else if (connectorPids.includes(stat.pid)) ticks.connector += stat.own + stat.children;
    else ticks['load generator'] += stat.own;
  }
  return ticks;
}

/** CPU milliseconds per unit of work (a request, a recipient) of each group between two samples. */
export function cpuPerUnit(before: CpuSample | null, after: CpuSample | null, units: number): Record<CpuGroup, number> | null {
  if (!before || !after || units <= 0) return null;
  return Object.fromEntries(CPU_GROUPS.map((group) => [group, ((after[group] - before[group]) * 1000) / units])) as Record<
    CpuGroup,
    number
  >;
}

/** `gateway 2.71 · postgres 1.20 · nats 0.31 · connector 0.40 · load generator 0.52` (ms; groups that used nothing left out), or `n/a`; `names` renames groups. */
export function formatCpuPerUnit(cost: Record<CpuGroup, number> | null, names: Partial<Record<CpuGroup, string>> = {}): string {
  if (!cost) return 'n/a';
  return CPU_GROUPS.filter((group) => cost[group] >= 0.005)
    .map((group) => `${names[group] ?? group} ${cost[group].toFixed(2)}`)
    .join(' · ');
}
