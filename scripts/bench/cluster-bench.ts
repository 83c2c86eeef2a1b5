/**
 * npm run bench:cluster — POST /send throughput of a cluster as it grows, and what a SIGKILLed node costs.
 * test/helpers/cluster.ts starts the real thing: a private PostgreSQL and nats-server, gateway node processes
 * (`src/main.ts`, server mode, on free ports), the simulator connector as its own process, and an operator gateway in
 * this process (a cluster client) that seeds the merchants.
 *
 *   1. Throughput, for each node count of --nodes (ascending; the cluster grows by starting nodes and waiting until
 *      the shards are balanced): a closed loop of --concurrency requests in flight (paced at --rate when given) for --duration-s (after a
 *      --warmup-s warm-up), spread over the merchants and, by --route, round-robin over every node's HTTP port
 *      (a load balancer that knows nothing of shards), to each merchant's owner (no hop: what a load balancer routing
 *      by API key to a shard's owner would give), or to nodes that are not its owner (every request forwarded); req/s and
 *      p50/p99 latency, and the CPU time the node processes spent per request (from /proc: the cost of the NATS hops
 *      to a shard's owner shows there even when the machine has fewer cores than processes).
 *      And what each send cost the rest of the system (scripts/bench/cluster-costs.ts): rows inserted, updated and
 *      deleted per table, transactions (all, and those that wrote, from the WAL), WAL bytes, NATS messages and bytes
 *      in and out (the server's /varz) and what JetStream keeps (/jsz), and the CPU of PostgreSQL, nats-server and the connector; over the window
 *      alone, and until the window's sends have drained through the pipeline less the idle background measured
 *      just before. The cluster runs without the harness's audit triggers, so the database does the product's work.
 *      And how the window's CPU was shared out: how busy the machine was over all its CPUs (/proc/stat), and how long
 *      each node's main thread ran and how long it was ready to run but waited for a CPU (its schedstat): on a machine
 *      with fewer CPUs than busy processes, the wait is part of every request's latency.
 *   2. Failover, at the largest count (≥ 2): a paced load (--failover-rate sends/s, each with its Idempotency-Key);
 *      after a third of --failover-s the node owning the most merchants is SIGKILLed and taken out of the
 *      rotation at once (as a load balancer would, eventually); reports the time until every shard is held again by
 *      an unexpired lease of a survivor (cluster.ownership()), and every request that failed (503/1402, the 500 of
 *      an API-key check that timed out, connections cut by the kill). Then the failed sends are retried with their
 *      Idempotency-Key, and every accepted send must answer GET /status and have reached the connector exactly once.
 *      Exit 1 otherwise.
 *
 * Options (`npm run bench:cluster -- --nodes 1,3 --duration-s 10`; each also as an environment variable):
 *   --nodes LIST              node counts, ascending (BENCH_NODES, 1,3)
 *   --duration-s S            measured seconds per node count (BENCH_DURATION_S, 15)
 *   --warmup-s S              unmeasured seconds before each (BENCH_WARMUP_S, 15: long enough for V8 to have
 *                             compiled the nodes' hot path, a new node's too, so the window sees their steady state)
 *   --concurrency C           requests in flight (BENCH_CONCURRENCY, 16)
 *   --rate R                  pace the throughput load: request i starts no earlier than i / R seconds into the run,
 *                             still at most --concurrency in flight (BENCH_RATE; default: unpaced, a closed loop).
 *                             The same offered load for every node count compares their CPU per send at equal load
 *                             (a closed loop compares them at saturation, where each node batches more per turn)
 *   --merchants M             merchants the load is spread over (BENCH_MERCHANTS, 12)
 *   --route R                 round-robin, owner or other: which node each throughput request goes to (BENCH_ROUTE,
 *                             round-robin; with one node every route is that node)
 *   --failover-rate R         sends/s of the failover load (BENCH_FAILOVER_RATE, 40)
 *   --failover-s S            length of the failover load (BENCH_FAILOVER_S, 30)
 *   --no-failover             skip the failover measurement (BENCH_NO_FAILOVER=1)
 *   --lease-ttl-ms MS         CLUSTER_LEASE_TTL_MS of the nodes (default: config/default.json's)
 *   --failover-deadline-ms MS CLUSTER_FAILOVER_DEADLINE_MS of the nodes (default: config/default.json's)
 *   --shards N                CLUSTER_SHARDS (default: config/default.json's)
 *
 * BENCH_NODE_ARGS, when set, are added to every gateway node's `node` arguments (space-separated), e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where their CPU goes.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { shardOf } from '../../src/cluster/shards.js';
import {
  runSendLoad,
  settleSends,
  startCluster,
  type ClusterNode,
  type LoadMerchant,
  type LoadSend,
  type SendAttempt,
  type TestCluster,
} from '../../test/helpers/cluster.js';
import { seedMerchant } from '../../test/helpers/gateway-fixture.js';
import { stopSharedPostgres } from '../../test/helpers/postgres.js';
import {
  deliverableNumbers,
  exitSoon,
  fmt,
  machineLine,
  percentile,
  sleep,
  parseBenchOptions,
  positiveOption,
  type BenchOptionSpec,
} from './bench-common.js';
import {
  between,
  cpuCounters,
  enableWalInspection,
  formatByTable,
  perSecond,
  perSend,
  readDatabaseCounters,
  readNatsCounters,
  readHopCounters,
  formatHops,
  readWalPosition,
  sendCosts,
  walCommits,
  withMovement,
  type CounterInterval,
  type CounterSample,
  type Query,
  type SendCosts,
} from './cluster-costs.js';
import { machineCpu, mainThreadSchedule, sampleCpu } from './process-cpu.js';

// ---------------------------------------------------------------------------------------------------------------
// Options

const USAGE =
  'usage: npm run bench:cluster -- [--nodes 1,3] [--duration-s S] [--warmup-s S] [--concurrency C] [--rate R] [--merchants M] ' +
  '[--route round-robin|owner|other] [--failover-rate R] [--failover-s S] [--no-failover] [--lease-ttl-ms MS] [--failover-deadline-ms MS] [--shards N]';

const OPTION_SPECS: readonly BenchOptionSpec[] = [
  { flag: 'nodes', env: 'BENCH_NODES', kind: 'value' },
  { flag: 'duration-s', env: 'BENCH_DURATION_S', kind: 'value' },
  { flag: 'warmup-s', env: 'BENCH_WARMUP_S', kind: 'value' },
  { flag: 'concurrency', env: 'BENCH_CONCURRENCY', kind: 'value' },
  { flag: 'rate', env: 'BENCH_RATE', kind: 'value' },
  { flag: 'merchants', env: 'BENCH_MERCHANTS', kind: 'value' },
  { flag: 'route', env: 'BENCH_ROUTE', kind: 'value' },
  { flag: 'failover-rate', env: 'BENCH_FAILOVER_RATE', kind: 'value' },
  { flag: 'failover-s', env: 'BENCH_FAILOVER_S', kind: 'value' },
  { flag: 'no-failover', env: 'BENCH_NO_FAILOVER', kind: 'boolean' },
  { flag: 'lease-ttl-ms', env: 'CLUSTER_LEASE_TTL_MS', kind: 'value' },
  { flag: 'failover-deadline-ms', env: 'CLUSTER_FAILOVER_DEADLINE_MS', kind: 'value' },
  { flag: 'shards', env: 'CLUSTER_SHARDS', kind: 'value' },
];

const given = parseBenchOptions(process.argv.slice(2), OPTION_SPECS, USAGE);

const numberOption = (flag: string, fallback: number): number => {
  const raw = given.get(flag);
  return raw === undefined ? fallback : positiveOption(flag, raw);
};

/** config/default.json (what a deployment runs with unless told otherwise; the harness's own defaults are test values). */
const DEFAULTS = JSON.parse(
  readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/default.json'), 'utf8'),
) as {
  cluster: { shards: number; leaseTtlMs: number; failoverDeadlineMs: number };
  actors: { askTimeoutMs: number };
};

const NODE_COUNTS = (given.get('nodes') ?? '1,3').split(',').map((n) => Math.floor(positiveOption('nodes', n.trim())));
const DURATION_S = numberOption('duration-s', 15);
const WARMUP_S = given.get('warmup-s') === '0' ? 0 : numberOption('warmup-s', 15);
const CONCURRENCY = Math.floor(numberOption('concurrency', 16));
/** Requests per second of the paced throughput load; null: a closed loop. */
const RATE = given.get('rate') === undefined ? null : numberOption('rate', 1);
const MERCHANTS = Math.floor(numberOption('merchants', 12));
const ROUTES = ['round-robin', 'owner', 'other'] as const;
type Route = (typeof ROUTES)[number];
/** Which node each request of the throughput load goes to: round-robin, its merchant's owner, or a node that is not. */
const ROUTE: Route = ((raw = 'round-robin') => {
  if (!(ROUTES as readonly string[]).includes(raw)) throw new Error(`--route must be one of ${ROUTES.join(', ')}, got ${raw}`);
  return raw as Route;
})(given.get('route'));
const FAILOVER_RATE = numberOption('failover-rate', 40);
const FAILOVER_S = numberOption('failover-s', 30);
const NO_FAILOVER = ((raw) => raw !== undefined && raw !== '0' && raw !== 'false')(given.get('no-failover'));
const LEASE_TTL_MS = Math.floor(numberOption('lease-ttl-ms', DEFAULTS.cluster.leaseTtlMs));
const FAILOVER_DEADLINE_MS = Math.floor(numberOption('failover-deadline-ms', DEFAULTS.cluster.failoverDeadlineMs));
const SHARDS = Math.floor(numberOption('shards', DEFAULTS.cluster.shards));
const ASK_TIMEOUT_MS = DEFAULTS.actors.askTimeoutMs;
const MANY = '10000000';

for (let i = 1; i < NODE_COUNTS.length; i++) {
  if ((NODE_COUNTS[i] ?? 0) <= (NODE_COUNTS[i - 1] ?? 0))
    throw new Error(`--nodes must be ascending (the cluster grows), got ${NODE_COUNTS.join(',')}`);
}
const LARGEST = NODE_COUNTS[NODE_COUNTS.length - 1] ?? 1;
const FAILOVER = !NO_FAILOVER && LARGEST >= 2;

// ---------------------------------------------------------------------------------------------------------------
// Cleanup: also on failure and on Ctrl-C (test/helpers/cluster.ts also SIGKILLs its children when this process exits)

/** The cluster once started (an object: main() sets it, the cleanup and the error report read it). */
const harness: { cluster: TestCluster | null } = { cluster: null };
let cleaning: Promise<void> | null = null;

function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    const running = harness.cluster;
    harness.cluster = null;
    await running?.stop().catch((error: unknown) => process.stderr.write(`cluster stop: ${String(error)}\n`));
    // the harness takes its database on the shared private PostgreSQL server, which it does not stop
    await stopSharedPostgres().catch((error: unknown) => process.stderr.write(`postgres stop: ${String(error)}\n`));
  })();
  return cleaning;
}

/** Set on Ctrl-C: what main() then throws (its resources vanish under it) is not worth reporting. */
const interrupted = { value: false };
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted.value = true;
    process.stderr.write(`${signal}: cleaning up\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Throughput: a closed loop of CONCURRENCY requests (paced at RATE when given), over the nodes by ROUTE and round-robin over the
// merchants; a paced request's latency counts from when it started, not from when it was due

interface LoadStats {
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly perNode: Readonly<Record<string, number>>;
}

/**
 * The node request `i` (for `merchant`) goes to, by --route; `ownerOf` maps each merchant to its shard's owner, as
 * read before the load (the candidates are worked out once per merchant, not per request).
 */
function targetOf(
  targets: readonly ClusterNode[],
  merchants: readonly LoadMerchant[],
  ownerOf: (merchantId: string) => string | undefined,
): (i: number, merchant: LoadMerchant) => ClusterNode | undefined {
  if (ROUTE === 'round-robin') return (i) => targets[i % targets.length];
  const candidates = new Map(
    merchants.map((m) => {
      const owner = ownerOf(m.merchantId);
      const owning = targets.filter((n) => n.id === owner);
      const others = targets.filter((n) => n.id !== owner);
      // a single node is every merchant's owner: it serves them all
      return [m.merchantId, ROUTE === 'owner' || others.length === 0 ? owning : others];
    }),
  );
  return (i, merchant) => {
    const nodes = candidates.get(merchant.merchantId) ?? [];
    return nodes[i % nodes.length];
  };
}

async function closedLoop(
  targets: readonly ClusterNode[],
  merchants: readonly LoadMerchant[],
  seconds: number,
  offset: number,
  nodeFor: (i: number, merchant: LoadMerchant) => ClusterNode | undefined,
): Promise<LoadStats> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const perNode: Record<string, number> = {};
  const numbers = deliverableNumbers(89, offset);
  let next = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const i = next++;
        if (RATE !== null) {
          const due = started + (i * 1000) / RATE;
          if (due >= until) break;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        const merchant = merchants[Math.floor(i / targets.length) % merchants.length];
        if (!merchant) throw new Error('no merchant');
        const node = nodeFor(i, merchant);
        if (!node) throw new Error(`no target node (--route ${ROUTE})`);
        const t0 = performance.now();
        let outcome: string;
        try {
          const response = await fetch(`${node.api}/send`, {
            method: 'POST',
            headers: { 'app-key': merchant.apiKey, 'content-type': 'application/json' },
            body: JSON.stringify({ to: [numbers[i % numbers.length]], message: `cluster bench ${offset + i}` }),
          });
          const text = await response.text();
          outcome = String(response.status);
          if (response.status !== 201) outcome = `${response.status} ${text.slice(0, 120)}`;
        } catch (error) {
          outcome = `network ${error instanceof Error ? error.message : String(error)}`;
        }
        latencies.push(performance.now() - t0);
        statuses[outcome] = (statuses[outcome] ?? 0) + 1;
        perNode[node.id] = (perNode[node.id] ?? 0) + 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    seconds: elapsed,
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? Number.NaN,
    statuses,
    perNode,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Costs: CPU of every process, the database's counters, NATS's totals (scripts/bench/cluster-costs.ts)

/** The idle stretch measured before each window: the background (pollers, lease renewals, heartbeats) to subtract. */
const IDLE_MS = 5_000;
/** PostgreSQL backends flush their statistics counters at most once a second while busy, and within a second of going idle. */
const STATS_FLUSH_MS = 1_200;

/** Queries on the cluster's database, as the operator. */
const queryOf =
  (running: TestCluster): Query =>
  <T extends object>(text: string, params?: readonly unknown[]) =>
    running.sql<T>(text, params);

interface Taken {
  readonly sample: CounterSample;
  /** The WAL position, for pg_walinspect. */
  readonly lsn: string;
}

/**
 * CPU (the node processes of `targets`, PostgreSQL with its backends, nats-server, the connector), NATS's totals and
 * the WAL position, now; the database's statistics counters too unless `withDatabase` is false (read them a second
 * later, once flushed).
 */
async function takeSample(running: TestCluster, targets: readonly ClusterNode[], withDatabase = true): Promise<Taken> {
  const atMs = performance.now();
  const simulator = running.simulatorPid();
  const cpu = cpuCounters(
    sampleCpu(
      simulator === null ? [] : [simulator],
      targets.map((n) => n.process.pid ?? -1),
    ),
  );
  const scheduling = schedulingCounters(targets);
  const monitorUrl = running.nats.monitorUrl;
  const [nats, wal, database, hops] = await Promise.all([
    monitorUrl === null ? Promise.resolve({}) : readNatsCounters(monitorUrl),
    readWalPosition(queryOf(running)),
    withDatabase ? readDatabaseCounters(queryOf(running)) : Promise.resolve({}),
    readHopCounters(targets.map((n) => n.metricsUrl)),
  ]);
  return { sample: { atMs, counters: { ...cpu, ...scheduling, ...nats, ...wal.counters, ...database, ...hops } }, lsn: wal.lsn };
}

/**
 * The machine's busy and idle time over all its CPUs, and the time the nodes' main threads (their event loops) spent
 * on a CPU and ready to run but waiting for one, summed over the nodes, in ms since boot (NaN where not readable).
 */
function schedulingCounters(targets: readonly ClusterNode[]): Record<string, number> {
  const machine = machineCpu();
  const threads = targets.map((n) => (n.process.pid === undefined ? null : mainThreadSchedule(n.process.pid)));
  const sum = (pick: (t: { runMs: number; waitMs: number }) => number): number =>
    threads.reduce((total, t) => (t === null ? Number.NaN : total + pick(t)), 0);
  return {
    'machine.busy': machine?.busyMs ?? Number.NaN,
    'machine.idle': machine?.idleMs ?? Number.NaN,
    'main.run': sum((t) => t.runMs),
    'main.wait': sum((t) => t.waitMs),
  };
}

/** How the window's CPU time was shared out: see schedulingCounters. */
interface Scheduling {
  /** The machine's busy share over all its CPUs (0–1). */
  readonly machineBusy: number;
  /** Each node's main thread, on average: ms per second on a CPU, and ms per second ready but waiting for one. */
  readonly mainRunMsPerS: number;
  readonly mainWaitMsPerS: number;
}

function schedulingIn(window: CounterInterval, nodes: number): Scheduling {
  const moved = (name: string): number => window.delta[name] ?? Number.NaN;
  const perNodePerSecond = (name: string): number => (window.ms > 0 ? (moved(name) * 1000) / window.ms / nodes : Number.NaN);
  return {
    machineBusy: moved('machine.busy') / (moved('machine.busy') + moved('machine.idle')),
    mainRunMsPerS: perNodePerSecond('main.run'),
    mainWaitMsPerS: perNodePerSecond('main.wait'),
  };
}

/** What one node count's run cost, per accepted send, in two scopes, and the background rate measured before it. */
interface PhaseCosts {
  /** The measured window only (the database's counters read STATS_FLUSH_MS after its end). */
  readonly window: SendCosts;
  /** From the window's start until its sends had drained through the pipeline, less the idle background. */
  readonly drained: SendCosts;
  readonly drainSeconds: number;
  /** False when the connector still lagged the window's sends after 60 s: the drained scope misses some. */
  readonly drainComplete: boolean;
  /** Every counter per second over the idle stretch. */
  readonly idlePerSecond: Readonly<Record<string, number>>;
  readonly idleWriteCommitsPerSecond: number | null;
}

/**
 * Waits until the connector has taken a dispatch for every send accepted so far, then 2 s more for their receipts,
 * so one run's pipeline work (dispatches, receipts) does not land in the next run's numbers.
 */
async function settle(running: TestCluster, acceptedSoFar: number): Promise<{ seconds: number; quiet: boolean }> {
  const started = performance.now();
  for (;;) {
    const sent = Object.keys((await running.simulatorReport(15_000)).sent).length;
    if (sent >= acceptedSoFar) break;
    if (performance.now() - started > 60_000) return { seconds: (performance.now() - started) / 1000, quiet: false };
    await sleep(250);
  }
  await sleep(2_000);
  return { seconds: (performance.now() - started) / 1000, quiet: true };
}

const acceptedIn = (stats: LoadStats): number => stats.statuses['201'] ?? 0;

// ---------------------------------------------------------------------------------------------------------------
// Failover

/** Sequential remote asks timed for the routing overhead. */
const HOP_SAMPLES = 500;

interface FailoverResult {
  readonly victim: string;
  readonly victimShards: number;
  readonly merchantsOnVictim: number;
  readonly killAfterS: number;
  /** Kill → every shard held by an unexpired lease of a survivor. */
  readonly takeoverMs: number | null;
  /** Kill → the first of the victim's shards held by a survivor. */
  readonly firstTakeoverMs: number | null;
  /** Kill → the first 201 to a send started after the kill for a merchant of the victim's shards. */
  readonly firstAffectedSuccessMs: number | null;
  readonly sends: number;
  readonly attempts: number;
  readonly firstTryAccepted: number;
  readonly failures: Readonly<Record<string, number>>;
  readonly failedFirstAttempts: number;
  /** First and last failed answer, ms after the kill. */
  readonly failureWindowMs: readonly [number, number] | null;
  readonly latencyBefore: { readonly p50: number; readonly p99: number };
  readonly latencyWindow: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly latencyAfter: { readonly p50: number; readonly p99: number };
  readonly acceptedAfterRetry: number;
  readonly neverReached: number;
  readonly visible: number;
  readonly dispatchedOnce: number;
  readonly problems: readonly string[];
}

function failureKind(a: SendAttempt): string | null {
  if (a.outcome === 201) return null;
  if (a.outcome === 503 && a.errorCode === '1402') return '503/1402 (shard without owner)';
  if (a.outcome === 500 && a.detail === JSON.stringify({ detail: 'Could not verify the API key; retry.' }))
    return '500 (API key check timed out)';
  if (a.outcome === 'network') return `connection cut (${a.errorCode ?? 'network'})`;
  if (a.outcome === 'refused') return 'connection refused';
  return `${String(a.outcome)} ${a.errorCode ?? ''} ${a.detail?.slice(0, 80) ?? ''}`.trim();
}

function latencyOf(attempts: readonly SendAttempt[]): number[] {
  return attempts.map((a) => a.endedAt - a.startedAt).sort((a, b) => a - b);
}

async function measureFailover(running: TestCluster, merchants: readonly LoadMerchant[]): Promise<FailoverResult> {
  const problems: string[] = [];
  const owners = await running.ownership();
  const ownerOf = (merchantId: string): string | undefined =>
    [...owners].find(([, shards]) => shards.includes(shardOf(merchantId, running.shards)))?.[0];
  const live = running.running();
  // the node with the most merchants: the kill then hits as much of the load as it can
  const victim = [...live].sort(
    (a, b) =>
      merchants.filter((m) => ownerOf(m.merchantId) === b.id).length - merchants.filter((m) => ownerOf(m.merchantId) === a.id).length,
  )[0];
  if (!victim) throw new Error('no node to kill');
  const victimShards = owners.get(victim.id) ?? [];
  const merchantsOnVictim = merchants.filter((m) => ownerOf(m.merchantId) === victim.id).length;
  const dead = new Set<ClusterNode>();
  const targets = (): string[] =>
    running
      .running()
      .filter((n) => !dead.has(n))
      .map((n) => n.api);

  const total = Math.round(FAILOVER_RATE * FAILOVER_S);
  const killAfterMs = (FAILOVER_S * 1000) / 3;
  // written by the killer task below, read once the load is over
  const watch: { killAt: number; takeoverAt: number | null; firstTakeoverAt: number | null } = {
    killAt: 0,
    takeoverAt: null,
    firstTakeoverAt: null,
  };
  const numbers = deliverableNumbers(total, 500_000);
  process.stderr.write(
    `failover: ${fmt(total)} sends at ${fmt(FAILOVER_RATE)}/s; SIGKILL ${victim.id} (${victimShards.length} shards, ${merchantsOnVictim} of ${merchants.length} merchants) after ${fmt(killAfterMs / 1000, 1)} s…\n`,
  );
  const loadStarted = Date.now();
  const killer = (async () => {
    await sleep(killAfterMs);
    const killAt = Date.now();
    watch.killAt = killAt;
    dead.add(victim);
    const exited = running.kill(victim, 'SIGKILL');
    const victimSet = new Set(victimShards);
    for (;;) {
      const current = await running.ownership();
      const held = [...current.values()].reduce((n, list) => n + list.length, 0);
      const now = Date.now();
      if (watch.firstTakeoverAt === null && [...current].some(([owner, list]) => owner !== victim.id && list.some((s) => victimSet.has(s))))
        watch.firstTakeoverAt = now;
      if (!current.has(victim.id) && held === running.shards) {
        watch.takeoverAt = now;
        break;
      }
      if (now - killAt > 120_000) {
        problems.push(
          `the shards were not all held again within 120 s of the kill: ${JSON.stringify(Object.fromEntries([...current].map(([o, l]) => [o, l.length])))}`,
        );
        break;
      }
      await sleep(25);
    }
    await exited;
  })();
  const sends: LoadSend[] = await runSendLoad({
    sends: total,
    concurrency: 16,
    ratePerSecond: FAILOVER_RATE,
    merchants,
    targets,
    recipients: (i) => [numbers[i] ?? ''],
    runId: `failover-${loadStarted.toString(36)}`,
  });
  await killer;
  const { killAt, takeoverAt, firstTakeoverAt } = watch;

  const attempts = sends.flatMap((s) => s.attempts);
  const firstAttempts = sends.map((s) => s.attempts[0]).filter((a): a is SendAttempt => a !== undefined);
  const failures: Record<string, number> = {};
  const failed = firstAttempts.filter((a) => failureKind(a) !== null);
  for (const a of failed) {
    const kind = failureKind(a) ?? '';
    failures[kind] = (failures[kind] ?? 0) + 1;
  }
  const failureTimes = failed.map((a) => a.endedAt - killAt).sort((a, b) => a - b);
  const windowEnd = (takeoverAt ?? killAt) + ASK_TIMEOUT_MS;
  const before = latencyOf(firstAttempts.filter((a) => a.endedAt < killAt));
  const during = latencyOf(firstAttempts.filter((a) => a.endedAt >= killAt && a.startedAt <= windowEnd));
  const after = latencyOf(firstAttempts.filter((a) => a.startedAt > windowEnd));
  const firstTryAccepted = sends.filter((s) => s.attempts[0]?.outcome === 201).length;
  const affected = new Set(merchants.filter((m) => ownerOf(m.merchantId) === victim.id).map((m) => m.merchantId));
  const affectedSuccesses = sends
    .filter((s) => affected.has(s.merchant.merchantId))
    .flatMap((s) => s.attempts)
    .filter((a) => a.outcome === 201 && a.startedAt >= killAt)
    .map((a) => a.endedAt - killAt);
  const firstAffectedSuccessMs = affectedSuccesses.length > 0 ? Math.min(...affectedSuccesses) : null;

  // retry what may have reached the gateway, with the same Idempotency-Key, on the survivors
  process.stderr.write(`failover: retrying ${fmt(failed.length)} failed sends with their Idempotency-Key…\n`);
  try {
    await settleSends(sends, targets, 120_000);
  } catch (error) {
    problems.push(`retries did not settle: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`);
  }
  const accepted = sends.filter((s) => s.accepted !== null);
  const neverReached = sends.filter((s) => s.accepted === null).length;
  if (neverReached > 0) problems.push(`${fmt(neverReached)} sends not accepted even on retry`);

  // every accepted send is visible on the survivors
  process.stderr.write(`failover: checking GET /status of ${fmt(accepted.length)} accepted sends…\n`);
  const invisible: string[] = [];
  let turn = 0;
  let nextCheck = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (nextCheck < accepted.length) {
        const send = accepted[nextCheck++];
        const messageId = send?.accepted?.messageId;
        if (!send || messageId === undefined) continue;
        const deadline = Date.now() + 30_000;
        for (;;) {
          const list = targets();
          const api = list[turn++ % list.length] ?? '';
          const status = await fetch(`${api}/status/${messageId}`, { headers: { 'app-key': send.merchant.apiKey } }).then(
            async (r) => {
              await r.arrayBuffer();
              return r.status;
            },
            () => 0,
          );
          if (status === 200) break;
          if (Date.now() > deadline) {
            invisible.push(`${messageId} (${status})`);
            break;
          }
          await sleep(250);
        }
      }
    }),
  );
  if (invisible.length > 0)
    problems.push(`${fmt(invisible.length)} accepted sends not visible in GET /status: ${invisible.slice(0, 3).join(', ')}`);

  // and reached the connector, each dispatch id once
  const expected = accepted.flatMap((s) => (s.accepted ? [`${s.accepted.messageId}:0:0`] : []));
  let sent: Readonly<Record<string, number>> = {};
  const dispatchDeadline = Date.now() + 60_000;
  for (;;) {
    sent = (await running.simulatorReport(15_000)).sent;
    if (expected.every((id) => sent[id] !== undefined) || Date.now() > dispatchDeadline) break;
    await sleep(500);
  }
  const missing = expected.filter((id) => sent[id] === undefined);
  const twice = expected.filter((id) => (sent[id] ?? 0) > 1);
  if (missing.length > 0)
    problems.push(`${fmt(missing.length)} accepted sends never reached the connector (first: ${missing.slice(0, 3).join(', ')})`);
  if (twice.length > 0)
    problems.push(`${fmt(twice.length)} dispatch ids reached the connector more than once (first: ${twice.slice(0, 3).join(', ')})`);

  return {
    victim: victim.id,
    victimShards: victimShards.length,
    merchantsOnVictim,
    killAfterS: (killAt - loadStarted) / 1000,
    takeoverMs: takeoverAt === null ? null : takeoverAt - killAt,
    firstTakeoverMs: firstTakeoverAt === null ? null : firstTakeoverAt - killAt,
    firstAffectedSuccessMs,
    sends: sends.length,
    attempts: attempts.length,
    firstTryAccepted,
    failures,
    failedFirstAttempts: failed.length,
    failureWindowMs: failureTimes.length > 0 ? [failureTimes[0] ?? 0, failureTimes[failureTimes.length - 1] ?? 0] : null,
    latencyBefore: { p50: percentile(before, 50), p99: percentile(before, 99) },
    latencyWindow: { p50: percentile(during, 50), p99: percentile(during, 99), max: during[during.length - 1] ?? Number.NaN },
    latencyAfter: { p50: percentile(after, 50), p99: percentile(after, 99) },
    acceptedAfterRetry: accepted.length,
    neverReached,
    visible: accepted.length - invisible.length,
    dispatchedOnce: expected.length - missing.length - twice.length,
    problems,
  };
}

// ---------------------------------------------------------------------------------------------------------------

const ms = (n: number): string => (Number.isFinite(n) ? `${fmt(n, n < 10 ? 1 : 0)} ms` : 'n/a');

interface Phase {
  readonly nodes: number;
  readonly stats: LoadStats;
  readonly merchantsPerNode: Record<string, number>;
  readonly settleS: number;
  /** CPU the gateway node processes used during the window, per request. */
  readonly nodeCpuMsPerRequest: number;
  /** The same less what the nodes use when idle (pollers, lease renewals), measured just before. */
  readonly nodeCpuMsPerRequestNet: number;
  /** The node processes' CPU when idle, in ms of CPU per ms (1 = one core), all nodes together. */
  readonly idleCpuShare: number;
  readonly costs: PhaseCosts;
  readonly scheduling: Scheduling;
}

function nodeCpu(
  stats: LoadStats,
  inWindow: CounterInterval,
  idle: CounterInterval,
): Pick<Phase, 'nodeCpuMsPerRequest' | 'nodeCpuMsPerRequestNet' | 'idleCpuShare'> {
  return {
    nodeCpuMsPerRequest: perSend(inWindow, stats.requests)['cpu.gateway'] ?? Number.NaN,
    nodeCpuMsPerRequestNet: perSend(inWindow, stats.requests, idle)['cpu.gateway'] ?? Number.NaN,
    idleCpuShare: idle.ms > 0 ? (idle.delta['cpu.gateway'] ?? Number.NaN) / idle.ms : Number.NaN,
  };
}

function phaseCosts(
  stats: LoadStats,
  idle: CounterInterval,
  inWindow: CounterInterval,
  throughDrain: CounterInterval,
  drain: { seconds: number; quiet: boolean },
): PhaseCosts {
  const accepted = acceptedIn(stats);
  const idlePerSecond = perSecond(idle);
  const idleCommits = idlePerSecond['wal.commits'];
  return {
    window: sendCosts(perSend(inWindow, accepted)),
    drained: sendCosts(perSend(throughDrain, accepted, idle)),
    drainSeconds: throughDrain.ms / 1000,
    drainComplete: drain.quiet,
    idlePerSecond,
    idleWriteCommitsPerSecond: idleCommits === undefined || Number.isNaN(idleCommits) ? null : idleCommits,
  };
}

const num = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const kb = (bytes: number): string => (Number.isFinite(bytes) ? (bytes / 1024).toFixed(2) : 'n/a');

/** One row of the costs table. */
function costsRow(nodes: number, scope: string, sends: number, c: SendCosts): string {
  return (
    `| ${nodes} | ${scope} | ${fmt(sends)} | ${num(c.rows.inserted)} / ${num(c.rows.updated)} / ${num(c.rows.deleted)} | ` +
    `${num(c.transactions)} (${c.writeCommits === null ? 'n/a' : num(c.writeCommits)}) | ${kb(c.walBytes)} | ` +
    `${num(c.nats.msgsIn)} / ${num(c.nats.msgsOut)} | ${kb(c.nats.bytesIn)} / ${kb(c.nats.bytesOut)} | ${num(c.nats.storedMsgs)} / ${kb(c.nats.storedBytes)} | ` +
    `${num(c.cpuMs.gateway)} | ${num(c.cpuMs.postgres)} | ${num(c.cpuMs.nats)} | ${num(c.cpuMs.connector)} |`
  );
}

const round2 = (n: number | null): number | null => (n !== null && Number.isFinite(n) ? Math.round(n * 100) / 100 : null);

function costsJson(c: SendCosts): Record<string, unknown> {
  return {
    rowsInserted: round2(c.rows.inserted),
    rowsUpdated: round2(c.rows.updated),
    rowsDeleted: round2(c.rows.deleted),
    byTable: Object.fromEntries(c.byTable.map((t) => [t.table, [round2(t.inserted), round2(t.updated), round2(t.deleted)]])),
    transactions: round2(c.transactions),
    writeCommits: round2(c.writeCommits),
    walBytes: round2(c.walBytes),
    natsMsgsIn: round2(c.nats.msgsIn),
    natsMsgsOut: round2(c.nats.msgsOut),
    natsBytesIn: round2(c.nats.bytesIn),
    natsBytesOut: round2(c.nats.bytesOut),
    jetStreamStoredMsgs: round2(c.nats.storedMsgs),
    jetStreamStoredBytes: round2(c.nats.storedBytes),
    cpuMs: {
      node: round2(c.cpuMs.gateway),
      postgres: round2(c.cpuMs.postgres),
      nats: round2(c.cpuMs.nats),
      connector: round2(c.cpuMs.connector),
    },
    remoteHops: Object.fromEntries(Object.entries(c.hops).map(([what, n]) => [what, round2(n)])),
  };
}

async function main(): Promise<void> {
  const first = NODE_COUNTS[0] ?? 1;
  const env: Record<string, string> = {
    RATE_LIMIT_SEND: MANY,
    RATE_LIMIT_STATUS: MANY,
    RATE_LIMIT_BALANCE: MANY,
    RATE_LIMIT_CALCULATE: MANY,
    RATE_LIMIT_MANAGEMENT: MANY,
  };
  process.stderr.write(`starting a cluster of ${first} node(s)…\n`);
  let t0 = performance.now();
  // no audit triggers: the database does the product's work only; NATS with its monitoring endpoint (/varz)
  const running = await startCluster({
    nodes: first,
    shards: SHARDS,
    leaseTtlMs: LEASE_TTL_MS,
    failoverDeadlineMs: FAILOVER_DEADLINE_MS,
    env,
    audit: false,
    natsMonitoring: true,
    nodeArgs: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== ''),
  });
  harness.cluster = running;
  const query = queryOf(running);
  const walInspection = await enableWalInspection(query);
  const startup: { nodes: number; seconds: number }[] = [{ nodes: first, seconds: (performance.now() - t0) / 1000 }];

  const merchants: LoadMerchant[] = [];
  for (let i = 0; i < MERCHANTS; i++) {
    const seeded = await seedMerchant(running.operator, { name: `Bench shop ${i + 1}`, prepaid: '100000000' });
    merchants.push(seeded);
  }

  const phases: Phase[] = [];
  let acceptedSoFar = 0;
  for (const [index, count] of NODE_COUNTS.entries()) {
    if (running.running().length < count) {
      process.stderr.write(`growing the cluster to ${count} nodes…\n`);
      t0 = performance.now();
      const have = running.nodes.length;
      await Promise.all(Array.from({ length: count - have }, (_, k) => running.startNode(`node-${have + k + 1}`)));
      await running.waitForBalance(
        running.running().map((n) => n.id),
        120_000,
      );
      startup.push({ nodes: count, seconds: (performance.now() - t0) / 1000 });
    }
    const owners = await running.ownership();
    const ownerOf = (merchantId: string): string | undefined =>
      [...owners].find(([, shards]) => shards.includes(shardOf(merchantId, running.shards)))?.[0];
    const merchantsPerNode: Record<string, number> = {};
    for (const m of merchants) {
      const owner = ownerOf(m.merchantId) ?? '?';
      merchantsPerNode[owner] = (merchantsPerNode[owner] ?? 0) + 1;
    }
    const targets = running.running();
    const nodeFor = targetOf(targets, merchants, ownerOf);
    let settled = await settle(running, acceptedSoFar);
    if (!settled.quiet)
      process.stderr.write(
        `${count} node(s): the connector still lags the earlier sends after ${fmt(settled.seconds)} s; measuring anyway\n`,
      );
    if (WARMUP_S > 0) {
      process.stderr.write(`${count} node(s): warm-up ${fmt(WARMUP_S)} s…\n`);
      acceptedSoFar += acceptedIn(await closedLoop(targets, merchants, WARMUP_S, index * 1_000_000, nodeFor));
      const after = await settle(running, acceptedSoFar);
      settled = { seconds: settled.seconds + after.seconds, quiet: settled.quiet && after.quiet };
    }
    process.stderr.write(`${count} node(s): ${fmt(DURATION_S)} s of POST /send, ${CONCURRENCY} in flight…\n`);
    const idleStart = await takeSample(running, targets);
    await sleep(IDLE_MS);
    const windowStart = await takeSample(running, targets);
    const stats = await closedLoop(targets, merchants, DURATION_S, index * 1_000_000 + 100_000, nodeFor);
    const windowEnd = await takeSample(running, targets, false);
    acceptedSoFar += acceptedIn(stats);
    process.stderr.write(`  ${fmt(stats.rps)} req/s, p50 ${ms(stats.p50)}, p99 ${ms(stats.p99)}; draining…\n`);
    await sleep(STATS_FLUSH_MS);
    const windowCounters: CounterSample = {
      atMs: windowEnd.sample.atMs,
      counters: { ...windowEnd.sample.counters, ...(await readDatabaseCounters(query)) },
    };
    const drain = await settle(running, acceptedSoFar);
    const drained = await takeSample(running, targets);
    // read from the WAL after the CPU samples, so that the reading's own work is outside them
    const idle = withMovement(
      between(idleStart.sample, windowStart.sample),
      'wal.commits',
      walInspection ? await walCommits(query, idleStart.lsn, windowStart.lsn) : null,
    );
    const inWindow = withMovement(
      between(windowStart.sample, windowCounters),
      'wal.commits',
      walInspection ? await walCommits(query, windowStart.lsn, windowEnd.lsn) : null,
    );
    const throughDrain = withMovement(
      between(windowStart.sample, drained.sample),
      'wal.commits',
      walInspection ? await walCommits(query, windowStart.lsn, drained.lsn) : null,
    );
    phases.push({
      nodes: count,
      stats,
      merchantsPerNode,
      settleS: settled.seconds,
      ...nodeCpu(stats, inWindow, idle),
      costs: phaseCosts(stats, idle, inWindow, throughDrain, drain),
      scheduling: schedulingIn(between(windowStart.sample, windowEnd.sample), count),
    });
  }

  // routing overhead: the operator is a cluster client (it owns no shard), so each of its asks is one NATS round trip
  // to the owner, which answers a wallet balance from memory; sequential, on an idle cluster
  await settle(running, acceptedSoFar);
  const hops: number[] = [];
  for (let i = 0; i < HOP_SAMPLES; i++) {
    const merchant = merchants[i % merchants.length];
    if (!merchant) break;
    const started = performance.now();
    await running.operator.useCases.wallets.getBalance(merchant.merchantId);
    hops.push(performance.now() - started);
  }
  hops.sort((a, b) => a - b);
  const hop = { p50: percentile(hops, 50), p99: percentile(hops, 99) };

  let failover: FailoverResult | null = null;
  if (FAILOVER) {
    await settle(running, acceptedSoFar);
    failover = await measureFailover(running, merchants);
  }

  // ---- report
  console.log(machineLine());
  console.log(`Command: \`npm run bench:cluster -- ${process.argv.slice(2).join(' ')}\``.replace(/ -- `$/, '`'));
  console.log(
    'Shape (test/helpers/cluster.ts): private PostgreSQL + private nats-server; gateway nodes as processes (`node --import tsx src/main.ts`, server mode, ' +
      'LOG_LEVEL=warn); the simulator connector as its own process; the load generator (fetch) in this process. Everything shares this machine, which other work may share too.',
  );
  console.log(
    `Settings: ${SHARDS} shards, CLUSTER_LEASE_TTL_MS ${fmt(LEASE_TTL_MS)}, CLUSTER_FAILOVER_DEADLINE_MS ${fmt(FAILOVER_DEADLINE_MS)}, ACTOR_ASK_TIMEOUT_MS ${fmt(ASK_TIMEOUT_MS)} (default), ` +
      `rate limits raised to ${MANY}/window; ${MERCHANTS} merchants; 1 recipient per send; requests to nodes by --route ${ROUTE}; ${CONCURRENCY} requests in flight, ${fmt(WARMUP_S)} s warm-up + ${fmt(DURATION_S)} s measured per node count.`,
  );
  console.log(
    `Cluster start-up (processes healthy and shards balanced): ${startup.map((s) => `${s.nodes} node(s) ${fmt(s.seconds, 1)} s`).join(', ')}.`,
  );
  console.log(
    `Before each measured run (and after its warm-up) the bench waited until the connector had taken every earlier send's dispatch, plus 2 s for receipts ` +
      `(${phases.map((p) => `${fmt(p.settleS, 1)} s`).join(', ')} in all), then measured the idle background for ${fmt(IDLE_MS / 1000)} s. Node CPU counts the gateway processes only (not PostgreSQL, NATS, the connector or the load generator). ` +
      "A request reaching a node that does not own its merchant's shard is forwarded to the owner over NATS: with N nodes about (N-1)/N of the requests take that hop.",
  );
  console.log('');
  console.log(
    '| Nodes | Requests | req/s | p50 | p99 | max | non-201 | Node CPU per request (less idle) | Idle node CPU | Requests per node | Merchants per owner |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|');
  for (const phase of phases) {
    const s = phase.stats;
    const non201 = Object.entries(s.statuses).filter(([status]) => status !== '201');
    console.log(
      `| ${phase.nodes} | ${fmt(s.requests)} | ${fmt(s.rps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.max)} | ${fmt(non201.reduce((n, [, c]) => n + c, 0))} | ${ms(phase.nodeCpuMsPerRequest)} (${ms(phase.nodeCpuMsPerRequestNet)}) | ${fmt(phase.idleCpuShare * 100)} % | ` +
        `${Object.entries(s.perNode)
          .map(([id, n]) => `${id} ${fmt(n)}`)
          .join(', ')} | ${Object.entries(phase.merchantsPerNode)
          .map(([id, n]) => `${id} ${n}`)
          .join(', ')} |`,
    );
  }
  console.log('');
  const percent = (share: number): string => (Number.isFinite(share) ? `${fmt(share * 100)} %` : 'n/a');
  console.log(
    `How the measured window's CPU was shared out (/proc/stat; each node's main thread, its event loop, from /proc/<pid>/task/<pid>/schedstat): ` +
      phases
        .map((p) => {
          const { machineBusy, mainRunMsPerS: run, mainWaitMsPerS: wait } = p.scheduling;
          return (
            `${p.nodes} node(s): the machine ${percent(machineBusy)} busy over its ${cpus().length} CPUs; each node's main thread on a CPU ` +
            `${ms(run)}/s and ready to run but waiting for a CPU ${ms(wait)}/s (${percent(wait / (run + wait))} of the time it could run)`
          );
        })
        .join('; ') +
      ". A main thread's wait for a CPU is part of the latency of the requests it serves.",
  );
  console.log('');
  console.log(
    'What a send costs, per accepted send (201). "window": the measured seconds only (CPU, NATS totals and the WAL position read at its end; ' +
      `the database's row and transaction counters ${fmt(STATS_FLUSH_MS / 1000, 1)} s later, once the backends have flushed them, so they hold up to that much of the pipeline's tail). ` +
      '"drained": from the window\'s start until the connector had taken every dispatch of its sends and 2 s more for their receipts, less the background measured over the ' +
      `idle ${fmt(IDLE_MS / 1000)} s before the window (pollers, lease renewals, heartbeats) at its rate: the whole pipeline of those sends. ` +
      "Rows: inserted / updated / deleted in the product's tables (pg_stat_user_tables; no audit triggers in this cluster). Transactions: pg_stat_database xact_commit, reads included; " +
      `in brackets the COMMIT records in the WAL (transactions that wrote; pg_walinspect${walInspection ? '' : ', not available here'}). WAL: bytes of WAL written, whole server. ` +
      "NATS: the server's /varz totals (in: messages published by clients, out: delivered to them; JetStream API requests and acknowledgements included); " +
      'JetStream stored: the growth of what /jsz says JetStream keeps (receipts and webhook jobs stay 7 days in their streams; dispatch jobs leave theirs once acknowledged). ' +
      'CPU: ms per send of the node processes, PostgreSQL (postmaster and backends), nats-server and the simulator connector.',
  );
  console.log('');
  console.log(
    '| Nodes | Scope | Sends | Rows ins / upd / del | Transactions (writing) | WAL KB | NATS msgs in / out | NATS KB in / out | JetStream stored msgs / KB | Node CPU ms | PostgreSQL CPU ms | NATS CPU ms | Connector CPU ms |',
  );
  console.log('|---:|---|---:|---|---:|---:|---|---|---|---:|---:|---:|---:|');
  for (const phase of phases) {
    const accepted = acceptedIn(phase.stats);
    console.log(costsRow(phase.nodes, 'window', accepted, phase.costs.window));
    console.log(
      costsRow(
        phase.nodes,
        `drained (${fmt(phase.costs.drainSeconds, 1)} s${phase.costs.drainComplete ? '' : ', connector still lagging'})`,
        accepted,
        phase.costs.drained,
      ),
    );
  }
  console.log('');
  for (const phase of phases) {
    const idle = phase.costs.idlePerSecond;
    const rate = (name: string, digits = 1): string => num(idle[name] ?? Number.NaN, digits);
    console.log(
      `${phase.nodes} node(s), rows per send by table (drained; inserted/updated/deleted): ${formatByTable(phase.costs.drained.byTable)}. ` +
        `Crossings to another node per send (drained, by what crossed): ${formatHops(phase.costs.drained.hops)}. ` +
        `Idle background: ${rate('db.transactions')} transactions/s (${phase.costs.idleWriteCommitsPerSecond === null ? 'n/a' : num(phase.costs.idleWriteCommitsPerSecond, 1)} writing), ` +
        `NATS ${rate('nats.in_msgs')} msgs/s in, ${rate('nats.out_msgs')} out; CPU ms/s: nodes ${rate('cpu.gateway')}, PostgreSQL ${rate('cpu.postgres')}, NATS ${rate('cpu.nats')}, connector ${rate('cpu.connector')}.`,
    );
  }
  console.log('');
  console.log(
    `Remote hop (routing overhead): ${fmt(HOP_SAMPLES)} sequential wallet-balance asks from a cluster client to the owning node over NATS, ` +
      `answered from the actor in memory: p50 ${ms(hop.p50)}, p99 ${ms(hop.p99)} per ask (a local ask is a few microseconds; a send reaching a non-owner is forwarded in one such hop).`,
  );
  const odd = phases.flatMap((p) =>
    Object.entries(p.stats.statuses)
      .filter(([status]) => status !== '201')
      .map(([status, n]) => `${p.nodes} nodes: ${n} × ${status}`),
  );
  if (odd.length > 0) console.log(`\nNon-201 answers: ${odd.slice(0, 10).join('; ')}`);

  const problems = failover?.problems ?? [];
  if (failover) {
    const f = failover;
    console.log('');
    console.log(
      `Failover: ${fmt(f.sends)} sends at ${fmt(FAILOVER_RATE)}/s (16 in flight at most, each with an Idempotency-Key) round-robin over the live nodes; ` +
        `${f.victim} (${f.victimShards} shards, ${f.merchantsOnVictim} of ${MERCHANTS} merchants) SIGKILLed ${fmt(f.killAfterS, 1)} s in and taken out of the rotation at once.`,
    );
    console.log('');
    console.log('| Failover measure | Result |');
    console.log('|---|---:|');
    console.log(`| Kill → first of its shards held by a survivor | ${f.firstTakeoverMs === null ? 'never' : ms(f.firstTakeoverMs)} |`);
    console.log(
      `| Kill → every shard held again (unexpired lease of a survivor) | ${f.takeoverMs === null ? 'never' : ms(f.takeoverMs)} |`,
    );
    console.log(
      `| Kill → first successful send (201) for a merchant of the killed node's shards | ${f.firstAffectedSuccessMs === null ? 'none' : ms(f.firstAffectedSuccessMs)} |`,
    );
    console.log(`| Sends failed on their first attempt | ${fmt(f.failedFirstAttempts)} of ${fmt(f.sends)} |`);
    for (const [kind, n] of Object.entries(f.failures)) console.log(`| … ${kind} | ${fmt(n)} |`);
    console.log(
      `| Failed answers, first → last, after the kill | ${f.failureWindowMs ? `${ms(f.failureWindowMs[0])} → ${ms(f.failureWindowMs[1])}` : 'none'} |`,
    );
    console.log(`| Latency before the kill, p50 / p99 | ${ms(f.latencyBefore.p50)} / ${ms(f.latencyBefore.p99)} |`);
    console.log(
      `| Latency from the kill to takeover + ask timeout, p50 / p99 / max | ${ms(f.latencyWindow.p50)} / ${ms(f.latencyWindow.p99)} / ${ms(f.latencyWindow.max)} |`,
    );
    console.log(`| Latency after that, p50 / p99 | ${ms(f.latencyAfter.p50)} / ${ms(f.latencyAfter.p99)} |`);
    console.log(
      `| Accepted after retrying failed sends with their Idempotency-Key | ${fmt(f.acceptedAfterRetry)} of ${fmt(f.sends)} (${fmt(f.firstTryAccepted)} at the first try) |`,
    );
    console.log(`| Accepted sends visible in GET /status on the survivors | ${fmt(f.visible)} of ${fmt(f.acceptedAfterRetry)} |`);
    console.log(`| Accepted sends at the connector exactly once | ${fmt(f.dispatchedOnce)} of ${fmt(f.acceptedAfterRetry)} |`);
    if (problems.length > 0) {
      console.log('');
      console.log('FAILED:');
      for (const problem of problems) console.log(`  - ${problem}`);
    }
  } else {
    console.log('');
    console.log(`Failover: skipped (${NO_FAILOVER ? '--no-failover' : 'needs at least 2 nodes'}).`);
  }
  const round = (n: number | null): number | null => (n !== null && Number.isFinite(n) ? Math.round(n * 10) / 10 : null);
  console.log('');
  console.log(
    JSON.stringify({
      bench: 'cluster',
      ok: problems.length === 0,
      settings: {
        shards: SHARDS,
        leaseTtlMs: LEASE_TTL_MS,
        failoverDeadlineMs: FAILOVER_DEADLINE_MS,
        askTimeoutMs: ASK_TIMEOUT_MS,
        merchants: MERCHANTS,
        concurrency: CONCURRENCY,
        rate: RATE,
        route: ROUTE,
        durationS: DURATION_S,
        warmupS: WARMUP_S,
      },
      startup: startup.map((s) => ({ nodes: s.nodes, seconds: round(s.seconds) })),
      throughput: phases.map((p) => ({
        nodes: p.nodes,
        requests: p.stats.requests,
        rps: round(p.stats.rps),
        p50Ms: round(p.stats.p50),
        p99Ms: round(p.stats.p99),
        maxMs: round(p.stats.max),
        non201: Object.entries(p.stats.statuses).reduce((n, [status, c]) => n + (status === '201' ? 0 : c), 0),
        nodeCpuMsPerRequest: round(p.nodeCpuMsPerRequest),
        nodeCpuMsPerRequestNet: round(p.nodeCpuMsPerRequestNet),
        idleNodeCpuPercent: round(p.idleCpuShare * 100),
        scheduling: {
          machineBusyPercent: round(p.scheduling.machineBusy * 100),
          mainThreadRunMsPerS: round(p.scheduling.mainRunMsPerS),
          mainThreadWaitMsPerS: round(p.scheduling.mainWaitMsPerS),
        },
        costs: {
          acceptedSends: acceptedIn(p.stats),
          window: costsJson(p.costs.window),
          drained: costsJson(p.costs.drained),
          drainSeconds: round(p.costs.drainSeconds),
          drainComplete: p.costs.drainComplete,
          idlePerSecond: {
            transactions: round2(p.costs.idlePerSecond['db.transactions'] ?? null),
            writeCommits: round2(p.costs.idleWriteCommitsPerSecond),
            natsMsgsIn: round2(p.costs.idlePerSecond['nats.in_msgs'] ?? null),
            natsMsgsOut: round2(p.costs.idlePerSecond['nats.out_msgs'] ?? null),
            cpuMs: {
              node: round2(p.costs.idlePerSecond['cpu.gateway'] ?? null),
              postgres: round2(p.costs.idlePerSecond['cpu.postgres'] ?? null),
              nats: round2(p.costs.idlePerSecond['cpu.nats'] ?? null),
              connector: round2(p.costs.idlePerSecond['cpu.connector'] ?? null),
            },
          },
        },
      })),
      failover: failover
        ? {
            victim: failover.victim,
            victimShards: failover.victimShards,
            rate: FAILOVER_RATE,
            sends: failover.sends,
            takeoverMs: failover.takeoverMs,
            firstTakeoverMs: failover.firstTakeoverMs,
            failedFirstAttempts: failover.failedFirstAttempts,
            failures: failover.failures,
            failureWindowMs: failover.failureWindowMs,
            latencyBeforeMs: { p50: round(failover.latencyBefore.p50), p99: round(failover.latencyBefore.p99) },
            latencyWindowMs: {
              p50: round(failover.latencyWindow.p50),
              p99: round(failover.latencyWindow.p99),
              max: round(failover.latencyWindow.max),
            },
            latencyAfterMs: { p50: round(failover.latencyAfter.p50), p99: round(failover.latencyAfter.p99) },
            accepted: failover.acceptedAfterRetry,
            visible: failover.visible,
            dispatchedOnce: failover.dispatchedOnce,
          }
        : null,
      problems,
    }),
  );
  if (problems.length > 0) process.exitCode = 1;
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  if (!interrupted.value) console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  const logs = harness.cluster?.nodes.map((n) => `--- ${n.id} (${n.state()})\n${n.output().slice(-3_000)}`).join('\n');
  if (logs) console.error(logs);
} finally {
  await cleanUp();
}
exitSoon();
