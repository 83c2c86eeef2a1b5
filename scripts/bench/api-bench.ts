/**
 * npm run bench:api — merchant API throughput with autocannon, in two modes:
 *   embedded:   PGlite in a temp dir, the database bus, the in-process simulator (one process, as `npm start`);
 *   PostgreSQL: a private PostgreSQL server and a private nats-server, the simulator connector in its own process (the
 *               production shape).
 * Per mode one node in this process (rate limits raised, a merchant with large wallets), then one autocannon run per
 * endpoint: GET /health (the floor), GET /status/{id}, GET /balance, POST /send with 1 and with 1 000 recipients; and
 * POST /send with 1 recipient once more at a fixed offered rate (1 000 req/s), for the latency at the target's rate.
 * Prints a Markdown table for docs/performance.md. Measures and reports; asserts nothing.
 *
 * Environment:
 *   BENCH_DURATION_S    seconds per endpoint (10)
 *   BENCH_CONNECTIONS   connections of the light endpoints (32); BENCH_BULK_CONNECTIONS for 1 000 recipients (4)
 *   BENCH_SEND_RATE     requests/s offered in the fixed-rate POST /send run (1 000), over at most BENCH_RATE_CONNECTIONS (64),
 *                       after BENCH_RATE_WARMUP_S seconds at that rate that the summary leaves out (2; reported second by second)
 *   BENCH_SEPARATE      1 (default): autocannon in a child process (`npx autocannon --json`); 0: in this process
 *   BENCH_MODES         comma-separated subset of embedded,postgres (both)
 *   BENCH_SETTLE_MAX_S  longest wait for the pipeline to go quiet between runs (60)
 *   BENCH_ONLY          run only the endpoints whose name contains this text (e.g. "send, 1 recipient"); the floor always runs
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createGatewayNode, type GatewayNode } from '../../src/gateway-node.js';
import type { Config, DeepPartial } from '../../src/libraries/config/config.js';
import type { LeaseStore } from '../../src/libraries/persistence/lease-port.js';
import { openPglitePersistence, openPostgresPersistence, type Persistence } from '../../src/libraries/persistence/persistence.js';
import { createDatabaseBus } from '../../src/libraries/transport/database-bus.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../src/libraries/transport/transport-port.js';
import { seedMerchant, testConfig } from '../../test/helpers/gateway-fixture.js';
import { startTestNats } from '../../test/helpers/nats.js';
import { startTestPostgres } from '../../test/helpers/postgres.js';
import type { FixedRateSpec, SecondOfRun } from './fixed-rate-load.js';
import { cpuPerUnit, formatCpuPerUnit, sampleCpu } from './process-cpu.js';
import {
  API_ROOT,
  commandLine,
  runChildOutput,
  startSimulatorProcess,
  countingLogger,
  deliverableNumbers,
  envNumber,
  exitSoon,
  fmt,
  machineLine,
  sleep,
} from './bench-common.js';

const DURATION_S = envNumber('BENCH_DURATION_S', 10);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
const BULK_CONNECTIONS = envNumber('BENCH_BULK_CONNECTIONS', 4);
const SEND_RATE = envNumber('BENCH_SEND_RATE', 1_000);
const RATE_CONNECTIONS = envNumber('BENCH_RATE_CONNECTIONS', 64);
const RATE_WARMUP_S = envNumber('BENCH_RATE_WARMUP_S', 2);
const SEPARATE = process.env.BENCH_SEPARATE !== '0';
const SETTLE_MAX_S = envNumber('BENCH_SETTLE_MAX_S', 60);
const ONLY = process.env.BENCH_ONLY ?? '';
const MODES = (process.env.BENCH_MODES ?? 'embedded,postgres').split(',').map((m) => m.trim());
const MANY = 10_000_000;
const OVERRIDES: DeepPartial<Config> = {
  rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
};

interface LoadSpec {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly connections: number;
  /**
   * Requests per second started whether or not answered (the open-model generator, fixed-rate-load.ts), over at most
   * `connections`; absent: autocannon, each connection sending its next request when the last is answered.
   */
  readonly rate?: number;
}

interface LoadResult {
  readonly rps: number;
  readonly total: number;
  /** Every request answered, warm-up included: what the run's CPU is divided by. */
  readonly answered: number;
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  /** The open-model generator's run second by second (none from autocannon). */
  readonly seconds?: readonly SecondOfRun[];
}

/**
 * The part of a load generator's summary this report reads: autocannon's (in-process object or CLI `--json` output), or
 * fixed-rate-load.ts's, which adds the run second by second.
 */
interface AutocannonSummary {
  readonly requests: { readonly average: number; readonly total: number; readonly answered?: number };
  readonly latency: { readonly p50: number; readonly p99: number };
  readonly non2xx: number;
  readonly errors: number;
  readonly seconds?: readonly SecondOfRun[];
}

const toLoadResult = (r: AutocannonSummary): LoadResult => ({
  rps: r.requests.average,
  total: r.requests.total,
  answered: r.requests.answered ?? r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
  ...(r.seconds ? { seconds: r.seconds } : {}),
});

/** Temp dir of the request bodies given to the child autocannon. */
let scratch: string | null = null;
const removeScratch = (): void => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = null;
};

/** Runs a load generator's command in a child process and reads the JSON summary it prints. */
async function runChild(command: string, args: readonly string[]): Promise<LoadResult> {
  const out = await runChildOutput(command, args);
  const json = out.slice(out.indexOf('{'));
  return toLoadResult(JSON.parse(json) as AutocannonSummary);
}

/** `npx autocannon --json …` in a child process, so the load generator does not share the server's event loop. */
function runSeparate(spec: LoadSpec): Promise<LoadResult> {
  const args = ['autocannon', '--json', '-n', '-c', String(spec.connections), '-d', String(DURATION_S), '-m', spec.method];
  for (const [name, value] of Object.entries(spec.headers)) args.push('-H', `${name}=${value}`);
  if (spec.body !== undefined) {
    scratch ??= mkdtempSync(path.join(tmpdir(), 'gw-bench-api-'));
    const file = path.join(scratch, `body-${Date.now()}.json`);
    writeFileSync(file, spec.body);
    args.push('-i', file);
  }
  args.push(spec.url);
  return runChild('npx', args);
}

/** The open-model generator (fixed-rate-load.ts) in a child process: requests start at `rate`, answered or not. */
function runFixedRate(spec: LoadSpec & { readonly rate: number }): Promise<LoadResult> {
  const fixed: FixedRateSpec = {
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    rate: spec.rate,
    durationS: DURATION_S,
    warmupS: RATE_WARMUP_S,
    connections: spec.connections,
  };
  const entry = fileURLToPath(new URL('./fixed-rate-load.ts', import.meta.url));
  return runChild(process.execPath, ['--import', 'tsx', entry, JSON.stringify(fixed)]);
}

async function runInProcess(spec: LoadSpec): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    connections: spec.connections,
    duration: DURATION_S,
  });
  return toLoadResult(result);
}

const load = (spec: LoadSpec): Promise<LoadResult> => {
  if (spec.rate !== undefined) return runFixedRate({ ...spec, rate: spec.rate });
  return SEPARATE ? runSeparate(spec) : runInProcess(spec);
};

interface RunningMode {
  readonly label: string;
  readonly node: GatewayNode;
  readonly persistence: Persistence;
  readonly baseUrl: string;
  /** Processes of the carrier connector, when it runs in its own (their CPU is reported as the connector's). */
  readonly connectorPids: readonly number[];
  stop(): Promise<void>;
}

async function startNode(
  label: string,
  config: Config,
  persistence: Persistence,
  transport: Transport,
  logger: ReturnType<typeof countingLogger>['logger'],
  inProcessSimulator: boolean,
) {
  const node = await createGatewayNode({ config, persistence, transport, inProcessSimulator, logger, announce: () => undefined });
  const port = await node.start();
  return { label, node, persistence, baseUrl: `http://127.0.0.1:${port}`, connectorPids: [] as number[] };
}

async function startEmbedded(logger: ReturnType<typeof countingLogger>['logger']): Promise<RunningMode> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gw-bench-pglite-'));
  const config = testConfig({ mode: 'embedded', database: { dataDir }, ...OVERRIDES });
  const persistence = await openPglitePersistence({ dataDir });
  const sql = persistence.sql;
  if (!sql) throw new Error('PGlite persistence without SQL');
  const transport = createDatabaseBus({ db: sql });
  const running = await startNode('Embedded (PGlite + database bus, in-process simulator)', config, persistence, transport, logger, true);
  return {
    ...running,
    async stop() {
      await running.node.stop();
      await transport.close();
      await persistence.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function startServerMode(logger: ReturnType<typeof countingLogger>['logger']): Promise<RunningMode> {
  const pg = await startTestPostgres();
  const nats = await startTestNats().catch(async (error: unknown) => {
    await pg.stop();
    throw error;
  });
  // stopped in reverse order, also when starting fails half way
  const opened: (() => Promise<void>)[] = [() => pg.stop(), () => nats.stop()];
  const closeAll = async () => {
    for (const close of opened.reverse()) await close().catch((error: unknown) => process.stderr.write(`stop: ${String(error)}\n`));
  };
  try {
    const url = await pg.createDatabase('bench_api');
    const config = testConfig({ database: { url }, nats: { url: nats.url }, ...OVERRIDES });
    const persistence = withTimedRenewals(await openPostgresPersistence({ url, poolSize: config.database.poolSize }));
    opened.push(() => persistence.close());
    const transport = await connectNatsTransport({ servers: nats.url, name: 'bench-api' });
    opened.push(() => transport.close());
    const running = await startNode('PostgreSQL + NATS, simulator connector process', config, persistence, transport, logger, false);
    opened.push(() => running.node.stop());
    const simulator = await startSimulatorProcess(nats.url);
    opened.push(() => simulator.stop());
    return { ...running, connectorPids: [simulator.pid], stop: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** Share of one core this process used over `ms`. */
async function cpuShare(ms: number): Promise<number> {
  const before = process.cpuUsage();
  const t0 = performance.now();
  await sleep(ms);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / (performance.now() - t0);
}

/**
 * Waits until the outbox has stopped changing and this process is back to its idle CPU use (pollers included) for
 * a second, so one run's pipeline work (dispatches, receipts, webhook events) does not land in the next run's
 * numbers. (Not until the outbox is empty: some entries wait on purpose, e.g. the receipt deadline of a recipient
 * the carrier has not answered yet.) `backlog` is what the outbox then holds.
 */
async function settle(persistence: Persistence, idleShare: number): Promise<{ seconds: number; quiet: boolean; backlog: number }> {
  const started = performance.now();
  let quietSamples = 0;
  let lastBacklog = await persistence.outbox.backlog();
  while (performance.now() - started < SETTLE_MAX_S * 1000) {
    const share = await cpuShare(500);
    const backlog = await persistence.outbox.backlog();
    quietSamples = backlog === lastBacklog && share < idleShare + 0.1 ? quietSamples + 1 : 0;
    lastBacklog = backlog;
    if (quietSamples >= 2) break;
  }
  return { seconds: (performance.now() - started) / 1000, quiet: quietSamples >= 2, backlog: lastBacklog };
}

/** Lease renewals of the node: how long each took, and when the last one succeeded (performance.now()). */
const renewals = { longestMs: 0, longestGapMs: 0, lastAt: 0 };

/** The node's lease store, timed: a renewal that waits (for a busy loop or a queued pool) brings its lease near expiry. */
function withTimedRenewals(persistence: Persistence): Persistence {
  const leases: LeaseStore = {
    ...persistence.leases,
    async renew(nodeId, held, ttlMs) {
      const started = performance.now();
      const kept = await persistence.leases.renew(nodeId, held, ttlMs);
      const at = performance.now();
      renewals.longestMs = Math.max(renewals.longestMs, at - started);
      if (renewals.lastAt > 0) renewals.longestGapMs = Math.max(renewals.longestGapMs, at - renewals.lastAt);
      renewals.lastAt = at;
      return kept;
    },
  };
  return { ...persistence, leases };
}

/**
 * The node's event loop over a run and the drain after it: the longest and the 99th percentile delay of a timer
 * (monitorEventLoopDelay), the fewest shards the node held (fewer than it started with: a lease was lost), and its
 * lease renewals (server mode).
 */
function watchNode(node: GatewayNode): { stop(): string } {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const manager = node.gateway.shardManager;
  const held = manager?.ownedShards().length ?? 0;
  Object.assign(renewals, { longestMs: 0, longestGapMs: 0 });
  let fewest = held;
  const sampler = setInterval(() => {
    fewest = Math.min(fewest, manager?.ownedShards().length ?? 0);
  }, 100);
  return {
    stop() {
      delay.disable();
      clearInterval(sampler);
      const ms = (ns: number) => fmt(ns / 1e6);
      const shards = manager
        ? `; shards held ${fmt(fewest)}–${fmt(held)} of ${fmt(held)}; main thread's longest lease renewal ${fmt(renewals.longestMs)} ms, longest between two ${fmt(renewals.longestGapMs)} ms`
        : '';
      return `event-loop delay max ${ms(delay.max)} ms, p99 ${ms(delay.percentile(99))} ms${shards}`;
    },
  };
}

/** One request before the run: it must succeed, else the run would measure error answers. */
async function probe(spec: LoadSpec): Promise<unknown> {
  const response = await fetch(spec.url, {
    method: spec.method,
    headers: spec.headers,
    ...(spec.body !== undefined ? { body: spec.body } : {}),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${spec.method} ${spec.url} answered ${response.status}: ${text.slice(0, 500)}`);
  return text === '' ? null : (JSON.parse(text) as unknown);
}

interface Row {
  readonly name: string;
  readonly connections: number;
  readonly result: LoadResult;
  readonly target: string;
  readonly note: string;
  /** CPU ms per request by process, the pipeline work the run left behind included. */
  readonly cpu: string;
}

async function benchMode(mode: RunningMode): Promise<{ rows: Row[]; idleShare: number }> {
  const shop = await seedMerchant(mode.node.gateway, { prepaid: '100000000', postpaid: '100000000', timezone: 'Africa/Kinshasa' });
  const api = `${mode.baseUrl}${API_ROOT}`;
  const auth = { 'app-key': shop.apiKey };
  const json = { ...auth, 'content-type': 'application/json' };
  const one = JSON.stringify({ to: deliverableNumbers(1), message: 'Your code is 123456' });
  const thousand = JSON.stringify({ to: deliverableNumbers(1000), message: 'Your code is 123456' });
  const sent = (await probe({ url: `${api}/send`, method: 'POST', headers: json, body: one, connections: 1 })) as {
    data?: { message_id?: string };
  };
  const messageId = sent.data?.message_id;
  if (!messageId) throw new Error(`POST /send gave no message_id: ${JSON.stringify(sent)}`);
  const postgres = mode.persistence.kind === 'postgres';
  // what the idle node costs (its pollers): the settle threshold between runs
  await sleep(1_000);
  const idleShare = Math.max(await cpuShare(1_000), await cpuShare(1_000));
  process.stderr.write(`  ${mode.label}: idle CPU ${(idleShare * 100).toFixed(0)} % of a core\n`);

  const cases: { name: string; spec: LoadSpec; target: string }[] = [
    { name: 'GET /health (floor)', spec: { url: `${api}/health`, method: 'GET', headers: {}, connections: CONNECTIONS }, target: '' },
    {
      name: 'GET /status/{id}',
      spec: { url: `${api}/status/${messageId}`, method: 'GET', headers: auth, connections: CONNECTIONS },
      target: postgres ? '≥ 3 000 req/s' : '',
    },
    { name: 'GET /balance', spec: { url: `${api}/balance`, method: 'GET', headers: auth, connections: CONNECTIONS }, target: '' },
    {
      name: 'POST /send, 1 recipient',
      spec: { url: `${api}/send`, method: 'POST', headers: json, body: one, connections: CONNECTIONS },
      target: '≥ 1 000 req/s, p99 < 50 ms',
    },
    {
      // the target read as a service level: this many sends a second arriving evenly whatever the answers take, and
      // the p99 they get (latency from when each was due, so a stall counts for every request behind it)
      name: `POST /send, 1 recipient, ${fmt(SEND_RATE)} req/s offered`,
      spec: { url: `${api}/send`, method: 'POST', headers: json, body: one, connections: RATE_CONNECTIONS, rate: SEND_RATE },
      target: 'p99 < 50 ms',
    },
    {
      name: 'POST /send, 1 000 recipients',
      spec: { url: `${api}/send`, method: 'POST', headers: json, body: thousand, connections: BULK_CONNECTIONS },
      target: '',
    },
  ];

  const rows: Row[] = [];
  await settle(mode.persistence, idleShare);
  for (const c of cases.filter((candidate, i) => i === 0 || candidate.name.includes(ONLY))) {
    await probe({ ...c.spec, connections: 1 });
    process.stderr.write(`  ${mode.label}: ${c.name}…\n`);
    const cpuBefore = sampleCpu(mode.connectorPids);
    const watch = watchNode(mode.node);
    const result = await load(c.spec);
    // the pipeline work the run left behind, drained before the next run
    const after = await settle(mode.persistence, idleShare);
    const watched = watch.stop();
    const cpu = formatCpuPerUnit(cpuPerUnit(cpuBefore, sampleCpu(mode.connectorPids), result.answered));
    const notes = [
      after.quiet ? `pipeline busy ${after.seconds.toFixed(1)} s after` : `pipeline still busy ${fmt(SETTLE_MAX_S)} s after`,
      `outbox then holds ${fmt(after.backlog)}`,
    ];
    notes.push(watched);
    if (c.spec.method === 'POST') notes.push(`${fmt(result.answered * (c.spec.body === thousand ? 1000 : 1))} recipients submitted`);
    rows.push({ name: c.name, connections: c.spec.connections, result, target: c.target, note: notes.join('; '), cpu });
  }
  return { rows, idleShare };
}

async function main(): Promise<void> {
  const log = countingLogger();
  const sections: string[] = [];
  for (const mode of MODES) {
    if (mode !== 'embedded' && mode !== 'postgres') throw new Error(`unknown mode ${mode} in BENCH_MODES`);
    process.stderr.write(`starting ${mode}…\n`);
    const running = mode === 'embedded' ? await startEmbedded(log.logger) : await startServerMode(log.logger);
    let rows: Row[];
    let idleShare: number;
    try {
      ({ rows, idleShare } = await benchMode(running));
    } finally {
      process.stderr.write(`stopping ${mode}…\n`);
      await running.stop();
    }
    const floor = rows[0]?.result.rps ?? Number.NaN;
    const lines = [
      `### ${running.label}`,
      '',
      `Idle node: ${(idleShare * 100).toFixed(0)} % of a core (pollers).`,
      '',
      '| Endpoint | Connections | req/s | p50 ms | p99 ms | non-2xx | errors | × floor | Target | CPU ms per request | Notes |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.name} | ${r.connections} | ${fmt(r.result.rps)} | ${fmt(r.result.p50, 1)} | ${fmt(r.result.p99, 1)} | ${fmt(r.result.non2xx)} | ${fmt(r.result.errors)} | ${fmt(r.result.rps / floor, 2)} | ${r.target} | ${r.cpu} | ${r.note} |`,
      ),
    ];
    for (const row of rows.filter((r) => r.result.seconds)) {
      const seconds = row.result.seconds ?? [];
      lines.push(
        '',
        `${row.name}, second by second (latency ms of the requests due in that second; w: warm-up, not in the summary row):`,
        '',
        `| Second | ${seconds.map((s) => (s.warmup ? `w${s.second + 1}` : String(s.second + 1 - RATE_WARMUP_S))).join(' | ')} |`,
        `|---|${seconds.map(() => '---:').join('|')}|`,
        `| p50 | ${seconds.map((s) => fmt(s.p50)).join(' | ')} |`,
        `| p99 | ${seconds.map((s) => fmt(s.p99)).join(' | ')} |`,
        `| max | ${seconds.map((s) => fmt(s.max)).join(' | ')} |`,
      );
    }
    sections.push(lines.join('\n'));
  }
  console.log(machineLine());
  console.log(commandLine('bench:api'));
  console.log(
    `Load generator: ${SEPARATE ? 'autocannon in a child process (`npx autocannon --json`)' : 'autocannon in the server process (BENCH_SEPARATE=0)'}; ` +
      `${fmt(DURATION_S)} s per endpoint; server and load generator share this machine.`,
  );
  console.log(
    'Notes: "pipeline busy" is how long the node took after the run to go back to idle (outbox steady, CPU at its idle level, checked every 0.5 s, so at least 1 s): the dispatch, receipt and webhook work the run left behind. "outbox then holds": the entries left waiting on purpose (receipt deadlines of recipients not yet final), counted since the mode started.',
  );
  console.log(
    'GET /health pings the database and the transport (checks arriving while a ping is out share its answer): the floor of the HTTP stack with a little I/O.',
  );
  console.log(
    '"CPU ms per request": CPU time each process spent from the start of the run until the pipeline went quiet, divided by the requests answered: the gateway node (with the simulator in embedded mode), PostgreSQL, nats-server, the simulator connector process, the load generator. On 2 cores, 2 000 ms of CPU per second is all there is.',
  );
  console.log(
    `Targets (compared, not asserted): POST /send (1 recipient) ≥ 1 000 req/s at p99 < 50 ms (the closed run: as many as ${fmt(CONNECTIONS)} connections get; the offered run: p99 when ${fmt(SEND_RATE)} req/s arrive, over the ${fmt(DURATION_S)} s after ${fmt(RATE_WARMUP_S)} s of warm-up at that rate); GET /status ≥ 3 000 req/s with PostgreSQL.`,
  );
  console.log('');
  console.log(sections.join('\n\n'));
  if (log.count() > 0) {
    console.log('');
    console.log(`The node logged ${fmt(log.count())} warnings or errors; first: ${log.first().join(' | ')}`);
  }
}

try {
  await main();
} finally {
  removeScratch();
}
exitSoon();
