/**
 * npm run bench:kannel — this gateway and Kannel side by side, one recipient per message, on the same machine, with
 * the same load generator, the same kind of message centre and the same kind of report receiver.
 *
 * The two systems run alternately (Kannel, gateway, Kannel, gateway… --rounds), each started fresh for its round and
 * stopped after it:
 * - Kannel: bearerbox + smsbox (Debian's 1.4.5, not installed by the bench) from a kannel.conf written by
 *   test/helpers/kannel.ts: an `smpp` smsc (one transceiver bind, max-pending-submits BINDS × WINDOW) to the test
 *   SMSC, a sendsms-user, internal DLR storage, logs at warning level and no access logs. Load: GET
 *   /cgi-bin/sendsms with dlr-mask 31 and a dlr-url at the receiver, over at most --kannel-connections (10)
 *   keep-alive connections (smsbox listens with a backlog of 10).
 * - This gateway: one node (`src/main.ts`, server mode) on a private PostgreSQL and nats-server
 *   (test/helpers/cluster.ts), `connector:smpp` (BINDS binds × window WINDOW) to the test SMSC, a merchant whose
 *   webhook URL is the receiver. Load: POST /send, over one keep-alive connection per request in flight.
 * The test SMSC (scripts/bench/smsc-process.ts) answers every submit_sm at once and sends a DELIVRD receipt 10 ms
 * later; the receiver (scripts/bench/webhook-receiver-process.ts) answers at once (200 to Kannel, 204 to webhooks).
 * Both, and the load generator (this process), are outside the systems' CPU.
 *
 * Per system and round, after --warmup-s of the same loop (unmeasured; its reports awaited):
 *   (b) end to end, first (on a system that holds no backlog): --messages messages by a closed loop of --concurrency
 *       requests, time from the first request to the last final report (Kannel: dlr-url with type 1, 2 or 16;
 *       gateway: sms.delivered or sms.failed) → messages/s, and each message's request → final report p50/p99;
 *   (c) the CPU of every process of the system during (b), from /proc, per message (Kannel: bearerbox, smsbox;
 *       gateway: the node, PostgreSQL's server and backends, nats-server, the connector);
 *   (d) the gateway's database rows per message during (b) (pg_stat_database tup_inserted + tup_deleted of its
 *       database, read after the statistics are flushed); Kannel keeps no database;
 *   (e) the gateway's database transactions (pg_stat_database xact_commit) and NATS messages in and out (the
 *       server's /varz) per message during (b);
 *   (a) then submit throughput: the same closed loop for --duration-s: requests/s, p50/p99 latency (accepted into
 *       the system's queue: what it leaves queued is not awaited).
 * Prints a Markdown table (medians over the rounds, ratios gateway / Kannel, then each round) and a JSON line.
 * Measures and reports; exits 1 only when a system could not run or a round did not complete.
 *
 * Options (each also an environment variable):
 *   --rounds N              rounds, each system once per round (BENCH_ROUNDS, 2)
 *   --concurrency C         requests in flight (BENCH_CONCURRENCY, 32)
 *   --kannel-connections K  keep-alive connections to smsbox, at most 10 (BENCH_KANNEL_CONNECTIONS, 10)
 *   --duration-s S          measured seconds of (a) (BENCH_DURATION_S, 20)
 *   --warmup-s S            unmeasured seconds of the same loop first, reports awaited (BENCH_WARMUP_S, 15: long
 *                           enough for V8 to have compiled the gateway's hot path, so the measured runs see the
 *                           steady state of a server that runs for days; with 3 s the end-to-end run still paid for
 *                           the node's and the connector's compilation, about a fifth of the gateway's CPU)
 *   --messages M            messages of (b) (BENCH_MESSAGES, 5000)
 *   --only kannel|gateway   one system only (BENCH_ONLY)
 *   --timeout-s S           give up waiting for the reports of a phase after this long (BENCH_TIMEOUT_S, 300)
 *   --from-build            run the node and the connector from the compiled build, as the image does: the bench
 *                           runs `npm run build` (into dist/) first (BENCH_FROM_BUILD=1); by default both run their
 *                           TypeScript sources under tsx, as `npm start` does
 *
 * BENCH_NODE_ARGS, when set, are added to the gateway node's `node` arguments (space-separated), e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where its CPU goes.
 */
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import os from 'node:os';
import { REPO_ROOT, startCluster, type TestCluster } from '../../test/helpers/cluster.js';
import { seedMerchant } from '../../test/helpers/gateway-fixture.js';
import { kannelInstalled, startTestKannel, type TestKannel } from '../../test/helpers/kannel.js';
import { startTestPostgres, type TestPostgres } from '../../test/helpers/postgres.js';
import {
  API_ROOT,
  commandLine,
  deliverableNumbers,
  exitSoon,
  fmt,
  machineLine,
  parseBenchOptions,
  positiveOption,
  sleep,
  type BenchOptionSpec,
} from './bench-common.js';
import { startReceiver, startSmppConnector, startSmsc, type ReceiverProcess, type SmscProcess } from './bench-children.js';
import {
  comparisonTable,
  KANNEL_FINAL_TYPES,
  latencyPercentiles,
  sendsmsPath,
  summaryLine,
  type BenchSystem,
  type RowCounts,
  type SystemRound,
  type TrafficCounts,
  type TableShape,
} from './kannel-report.js';
import { between, perSend, readDatabaseCounters, readNatsCounters, sendCosts, type CounterSample } from './cluster-costs.js';
import { mainThreadCpu, sampleProcessCpu } from './process-cpu.js';

// ---------------------------------------------------------------------------------------------------------------
// Options

const USAGE =
  'usage: npm run bench:kannel -- [--rounds N] [--concurrency C] [--kannel-connections K] [--duration-s S] [--warmup-s S] ' +
  '[--messages M] [--only kannel|gateway] [--timeout-s S] [--from-build]';

const OPTION_SPECS: readonly BenchOptionSpec[] = [
  { flag: 'rounds', env: 'BENCH_ROUNDS', kind: 'value' },
  { flag: 'concurrency', env: 'BENCH_CONCURRENCY', kind: 'value' },
  { flag: 'kannel-connections', env: 'BENCH_KANNEL_CONNECTIONS', kind: 'value' },
  { flag: 'duration-s', env: 'BENCH_DURATION_S', kind: 'value' },
  { flag: 'warmup-s', env: 'BENCH_WARMUP_S', kind: 'value' },
  { flag: 'messages', env: 'BENCH_MESSAGES', kind: 'value' },
  { flag: 'only', env: 'BENCH_ONLY', kind: 'value' },
  { flag: 'timeout-s', env: 'BENCH_TIMEOUT_S', kind: 'value' },
  { flag: 'from-build', env: 'BENCH_FROM_BUILD', kind: 'boolean' },
];

const options = parseBenchOptions(process.argv.slice(2), OPTION_SPECS, USAGE);
const numberOption = (flag: string, fallback: number): number => {
  const raw = options.get(flag);
  return raw === undefined ? fallback : positiveOption(flag, raw);
};
const ROUNDS = Math.floor(numberOption('rounds', 2));
const CONCURRENCY = Math.floor(numberOption('concurrency', 32));
const KANNEL_CONNECTIONS = Math.min(10, Math.floor(numberOption('kannel-connections', 10)), CONCURRENCY);
const DURATION_S = numberOption('duration-s', 20);
const WARMUP_S = numberOption('warmup-s', 15);
const MESSAGES = Math.floor(numberOption('messages', 5_000));
const TIMEOUT_S = numberOption('timeout-s', 300);
const ONLY = options.get('only');
if (ONLY !== undefined && ONLY !== 'kannel' && ONLY !== 'gateway')
  throw new Error(`--only takes kannel or gateway, got ${JSON.stringify(ONLY)}\n${USAGE}`);
const SYSTEMS: readonly BenchSystem[] = ONLY === undefined ? ['kannel', 'gateway'] : [ONLY];
/** The node and the connector from the compiled build (`npm run build` first, into dist/), as the image runs them. */
const FROM_BUILD = !['', '0', 'false'].includes(options.get('from-build') ?? '');

/** The gateway's connector binds and window; Kannel gets one bind with BINDS × WINDOW submits in flight. */
const BINDS = 2;
const WINDOW = 10;
/** PostgreSQL flushes an idle backend's statistics within 10 s: wait that long before reading pg_stat_database. */
const STATS_FLUSH_MS = 11_000;
const MANY = '10000000';

// ---------------------------------------------------------------------------------------------------------------
// Load generator: a closed loop of HTTP requests over a keep-alive agent

interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

function httpCall(agent: Agent, url: URL, method: 'GET' | 'POST', headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** What one system takes from the load generator: one message to one recipient. */
interface Submitter {
  readonly system: BenchSystem;
  readonly connections: number;
  /** Submits one message; resolves with the id its reports will carry, or null when it was refused. */
  submit(tag: string, index: number): Promise<string | null>;
}

/**
 * `concurrency` workers, each sending its next message as soon as its previous one was answered, while `more(i)`
 * holds for the next index; every accepted message's id, each request's latency (ms) and the refused count.
 */
async function closedLoop(
  submitter: Submitter,
  tag: string,
  more: (index: number) => boolean,
): Promise<{ ids: string[]; sentAt: Map<string, number>; latencies: number[]; failed: number }> {
  const ids: string[] = [];
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (more(next)) {
        const index = next++;
        const started = performance.now();
        const id = await submitter.submit(tag, index).catch((error: unknown) => {
          if (failed === 0) process.stderr.write(`${submitter.system}: a request failed: ${String(error)}\n`);
          return null;
        });
        latencies.push(performance.now() - started);
        if (id === null) failed++;
        else {
          ids.push(id);
          sentAt.set(id, started);
        }
      }
    }),
  );
  return { ids, sentAt, latencies, failed };
}

// ---------------------------------------------------------------------------------------------------------------
// Reports

/** Final reports by message id, with when they arrived (this process's performance.now()). */
class ReportBook {
  private readonly finals = new Map<string, { at: number; delivered: boolean }>();
  private readonly calls = new Map<string, number>();

  /** Any call of the receiver for message `id` (final or not). */
  called(id: string): void {
    this.calls.set(id, (this.calls.get(id) ?? 0) + 1);
  }

  /** The receiver's calls for `ids`, all told. */
  callsOf(ids: readonly string[]): number {
    return ids.reduce((sum, id) => sum + (this.calls.get(id) ?? 0), 0);
  }

  take(id: string, delivered: boolean, at: number): void {
    if (!this.finals.has(id)) this.finals.set(id, { at, delivered });
  }

  /** How many of `ids` have a final report, how many of them delivered, and when the last one came. */
  of(ids: readonly string[]): { finals: number; delivered: number; lastAt: number } {
    let finals = 0;
    let delivered = 0;
    let lastAt = 0;
    for (const id of ids) {
      const final = this.finals.get(id);
      if (!final) continue;
      finals++;
      if (final.delivered) delivered++;
      lastAt = Math.max(lastAt, final.at);
    }
    return { finals, delivered, lastAt };
  }

  /** Milliseconds from each message's request to its final report (those that have one). */
  latencies(sentAt: ReadonlyMap<string, number>): number[] {
    return [...sentAt].flatMap(([id, at]) => {
      const final = this.finals.get(id);
      return final ? [final.at - at] : [];
    });
  }

  /** Resolves true once every one of `ids` has its final report, false after TIMEOUT_S. */
  async settle(ids: readonly string[]): Promise<boolean> {
    const deadline = performance.now() + TIMEOUT_S * 1000;
    while (this.of(ids).finals < ids.length) {
      if (performance.now() > deadline) return false;
      await sleep(20);
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The systems

interface RunningSystem {
  readonly submitter: Submitter;
  readonly book: ReportBook;
  /** CPU seconds of each of the system's processes now. */
  cpu(): Readonly<Record<string, number>> | null;
  /** CPU seconds of the gateway node's main thread now; null for Kannel (its threads are its own design). */
  mainThreadCpu(): number | null;
  /** The database's counters now (cluster-costs.ts names, and `db.tup_inserted`/`db.tup_deleted`); null: it has none. */
  rows(): Promise<CounterSample | null>;
}

type Cleanups = (() => Promise<void>)[];

/**
 * Rows per message between two readings: in all from pg_stat_database (tup_inserted, tup_deleted), by table from
 * pg_stat_user_tables (cluster-costs.ts).
 */
function rowsBetween(before: CounterSample, after: CounterSample, messages: number): RowCounts {
  const figures = perSend(between(before, after), messages);
  return {
    inserted: figures['db.tup_inserted'] ?? Number.NaN,
    deleted: figures['db.tup_deleted'] ?? Number.NaN,
    byTable: Object.fromEntries(sendCosts(figures).byTable.map((t) => [t.table, { inserted: t.inserted, deleted: t.deleted }])),
  };
}

/** Database transactions and NATS messages per message between two readings (NaN for a counter not read). */
function trafficBetween(before: CounterSample, after: CounterSample, messages: number): TrafficCounts {
  const figures = perSend(between(before, after), messages);
  return {
    dbTransactions: figures['db.transactions'] ?? Number.NaN,
    natsIn: figures['nats.in_msgs'] ?? Number.NaN,
    natsOut: figures['nats.out_msgs'] ?? Number.NaN,
  };
}

function cpuDelta(
  before: Readonly<Record<string, number>> | null,
  after: Readonly<Record<string, number>> | null,
  messages: number,
): Record<string, number> | null {
  if (!before || !after || messages <= 0) return null;
  return Object.fromEntries(Object.keys(after).map((name) => [name, (((after[name] ?? 0) - (before[name] ?? 0)) * 1000) / messages]));
}

async function startKannelSystem(round: number, cleanups: Cleanups): Promise<RunningSystem> {
  const book = new ReportBook();
  const receiver: ReceiverProcess = await startReceiver((report, at) => {
    const type = report.type.startsWith('kannel:') ? report.type.slice('kannel:'.length) : '';
    book.called(report.messageId);
    if (KANNEL_FINAL_TYPES.includes(type)) book.take(report.messageId, type === '1', at);
  });
  cleanups.unshift(() => receiver.close());
  const smsc: SmscProcess = await startSmsc();
  cleanups.unshift(() => smsc.stop());
  const kannel: TestKannel = await startTestKannel({
    smsc: { host: '127.0.0.1', port: smsc.port, systemId: 'smsc', password: 'secret' },
    logLevel: 2,
    accessLogs: false,
    maxPendingSubmits: BINDS * WINDOW,
  });
  cleanups.unshift(() => kannel.stop());
  await kannel.waitForSmscOnline();
  const agent = new Agent({ keepAlive: true, maxSockets: KANNEL_CONNECTIONS });
  cleanups.unshift(() => {
    agent.destroy();
    return Promise.resolve();
  });
  const base = `http://${kannel.sendsmsHost}:${kannel.sendsmsPort}`;
  return {
    book,
    submitter: {
      system: 'kannel',
      connections: KANNEL_CONNECTIONS,
      async submit(tag, index) {
        const id = `r${round}${tag}${index}`;
        const [to = ''] = deliverableNumbers(1, index);
        const path = sendsmsPath({
          username: kannel.username,
          password: kannel.password,
          from: 'Bench',
          to,
          text: `Bench kannel ${id}`,
          dlrMask: 31,
          dlrUrl: receiver.url,
          id,
        });
        const answer = await httpCall(agent, new URL(`${base}${path}`), 'GET', {});
        return answer.status === 202 ? id : null;
      },
    },
    cpu: () => sampleProcessCpu(['bearerbox', 'smsbox'], (_pid, comm) => (comm === 'bearerbox' || comm === 'smsbox' ? comm : null)),
    mainThreadCpu: () => null,
    rows: () => Promise.resolve(null),
  };
}

async function startGatewaySystem(pg: TestPostgres, cleanups: Cleanups): Promise<RunningSystem> {
  const book = new ReportBook();
  const receiver: ReceiverProcess = await startReceiver((report, at) => {
    book.called(report.messageId);
    if (report.type === 'sms.delivered' || report.type === 'sms.failed') book.take(report.messageId, report.type === 'sms.delivered', at);
  });
  cleanups.unshift(() => receiver.close());
  const smsc: SmscProcess = await startSmsc();
  cleanups.unshift(() => smsc.stop());
  const cluster: TestCluster = await startCluster({
    nodes: 1,
    simulator: false,
    postgres: pg,
    audit: false,
    env: {
      RATE_LIMIT_SEND: MANY,
      RATE_LIMIT_STATUS: MANY,
      RATE_LIMIT_BALANCE: MANY,
      RATE_LIMIT_CALCULATE: MANY,
      RATE_LIMIT_MANAGEMENT: MANY,
    },
    nodeArgs: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== ''),
    fromBuild: FROM_BUILD,
    // /varz: the NATS messages per message
    natsMonitoring: true,
  });
  cleanups.unshift(() => cluster.stop());
  const connector = await startSmppConnector({
    natsUrl: cluster.nats.url,
    port: smsc.port,
    binds: BINDS,
    window: WINDOW,
    fromBuild: FROM_BUILD,
  });
  cleanups.unshift(() => connector.stop());
  const shop = await seedMerchant(cluster.operator, { name: 'Bench shop', prepaid: '100000000' });
  if (!(await cluster.operator.useCases.apiKeys.setWebhook(shop.keyId, { url: receiver.url, username: null, password: null })))
    throw new Error('setWebhook failed');
  const node = cluster.nodes[0];
  if (!node) throw new Error('no node started');
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  cleanups.unshift(() => {
    agent.destroy();
    return Promise.resolve();
  });
  const sendUrl = new URL(`${node.baseUrl}${API_ROOT}/send`);
  const nodePid = node.process.pid ?? -1;
  return {
    book,
    submitter: {
      system: 'gateway',
      connections: CONCURRENCY,
      async submit(tag, index) {
        const [to = ''] = deliverableNumbers(1, index);
        const answer = await httpCall(
          agent,
          sendUrl,
          'POST',
          { 'app-key': shop.apiKey, 'content-type': 'application/json' },
          JSON.stringify({ to: [to], message: `Bench gateway ${tag}${index}` }),
        );
        if (answer.status !== 201) return null;
        const id = (JSON.parse(answer.body) as { data?: { message_id?: string } }).data?.message_id;
        return id ?? null;
      },
    },
    mainThreadCpu: () => mainThreadCpu(nodePid),
    cpu: () =>
      sampleProcessCpu(['node', 'postgres', 'nats-server', 'connector'], (pid, comm) => {
        if (pid === nodePid) return 'node';
        if (pid === connector.pid) return 'connector';
        if (comm === 'postgres') return 'postgres';
        if (comm === 'nats-server') return 'nats-server';
        return null;
      }),
    async rows() {
      const [total] = await cluster.sql<{ inserted: number; deleted: number }>(
        'SELECT tup_inserted::float8 AS inserted, tup_deleted::float8 AS deleted FROM pg_stat_database WHERE datname = current_database()',
      );
      if (!total) throw new Error('no pg_stat_database row for the cluster database');
      const counters = await readDatabaseCounters(<T extends object>(text: string, params?: readonly unknown[]) =>
        cluster.sql<T>(text, params),
      );
      const monitorUrl = cluster.nats.monitorUrl;
      const nats = monitorUrl === null ? {} : await readNatsCounters(monitorUrl);
      return {
        atMs: performance.now(),
        counters: { ...counters, ...nats, 'db.tup_inserted': total.inserted, 'db.tup_deleted': total.deleted },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// One round of one system

async function measure(system: BenchSystem, round: number, pg: TestPostgres): Promise<SystemRound> {
  const cleanups: Cleanups = [];
  try {
    process.stderr.write(`round ${round}, ${system}: starting…\n`);
    const running = system === 'kannel' ? await startKannelSystem(round, cleanups) : await startGatewaySystem(pg, cleanups);
    const { submitter, book } = running;

    // warm-up, and its reports
    const warmupEnd = performance.now() + WARMUP_S * 1000;
    const warmup = await closedLoop(submitter, 'w', () => performance.now() < warmupEnd);
    if (!(await book.settle(warmup.ids)))
      process.stderr.write(`round ${round}, ${system}: not every report of the warm-up came within ${TIMEOUT_S} s\n`);

    // (b) first, on a system that holds no backlog: MESSAGES as fast as the loop allows, until the last final report
    if (system === 'gateway') await sleep(STATS_FLUSH_MS);
    const rowsBefore = await running.rows();
    const cpuBefore = running.cpu();
    const mainThreadBefore = running.mainThreadCpu();
    const e2eStarted = performance.now();
    let sent = 0;
    const e2e = await closedLoop(submitter, 'b', () => sent++ < MESSAGES);
    const complete = await book.settle(e2e.ids);
    const cpuAfter = running.cpu();
    const mainThreadAfter = running.mainThreadCpu();
    const reports = book.of(e2e.ids);
    // the calls after the final one (none expected) have had the time of the database statistics' flush to come
    const receiverCalls = (): number => (e2e.ids.length === 0 ? 0 : book.callsOf(e2e.ids) / e2e.ids.length);
    const e2eSeconds = ((complete ? reports.lastAt : performance.now()) - e2eStarted) / 1000;
    let rowsPerMessage: SystemRound['dbRowsPerMessage'] = null;
    let trafficPerMessage: SystemRound['trafficPerMessage'] = null;
    if (rowsBefore !== null) {
      await sleep(STATS_FLUSH_MS);
      const rowsAfter = await running.rows();
      if (rowsAfter !== null && e2e.ids.length > 0) {
        rowsPerMessage = rowsBetween(rowsBefore, rowsAfter, e2e.ids.length);
        trafficPerMessage = trafficBetween(rowsBefore, rowsAfter, e2e.ids.length);
      }
    }

    // (a): a closed loop for DURATION_S (what it leaves queued is not awaited: the system is stopped after)
    const started = performance.now();
    const end = started + DURATION_S * 1000;
    const loop = await closedLoop(submitter, 'a', () => performance.now() < end);
    const seconds = (performance.now() - started) / 1000;
    const { p50Ms, p99Ms } = latencyPercentiles(loop.latencies);
    process.stderr.write(`round ${round}, ${system}: ${fmt(loop.ids.length / seconds)} req/s\n`);
    process.stderr.write(
      `round ${round}, ${system}: end to end ${fmt(reports.finals)} final reports of ${fmt(e2e.ids.length)} in ${fmt(e2eSeconds, 2)} s\n`,
    );
    return {
      system,
      round,
      submit: { requests: loop.ids.length, failed: loop.failed, seconds, p50Ms, p99Ms },
      endToEnd: {
        messages: e2e.ids.length,
        finals: reports.finals,
        delivered: reports.delivered,
        seconds: e2eSeconds,
        complete: complete && e2e.failed === 0,
        ...latencyPercentiles(book.latencies(e2e.sentAt)),
        receiverCallsPerMessage: receiverCalls(),
      },
      cpuMsPerMessage: cpuDelta(cpuBefore, cpuAfter, e2e.ids.length),
      mainThreadMsPerMessage:
        mainThreadBefore === null || mainThreadAfter === null || e2e.ids.length === 0
          ? null
          : ((mainThreadAfter - mainThreadBefore) * 1000) / e2e.ids.length,
      dbRowsPerMessage: rowsPerMessage,
      trafficPerMessage,
    };
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
  }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (SYSTEMS.includes('kannel') && !kannelInstalled()) {
    process.stderr.write('bench:kannel: Kannel is not installed (/usr/sbin/bearerbox, /usr/sbin/smsbox): apt-get install kannel\n');
    process.exitCode = 1;
    return;
  }
  if (FROM_BUILD && SYSTEMS.includes('gateway')) {
    process.stderr.write('bench:kannel: npm run build (the node and the connector run from dist/)\n');
    execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const loadBefore = os.loadavg();
  const pg = SYSTEMS.includes('gateway') ? await startTestPostgres() : null;
  const rounds: SystemRound[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const system of SYSTEMS) {
        if (system === 'gateway' && pg === null) throw new Error('no PostgreSQL');
        rounds.push(await measure(system, round, pg as TestPostgres));
        await sleep(1_000);
      }
    }
  } finally {
    await pg?.stop();
  }
  const loadAfter = os.loadavg();
  const shape: TableShape = {
    concurrency: CONCURRENCY,
    kannelConnections: KANNEL_CONNECTIONS,
    gatewayConnections: CONCURRENCY,
    durationS: DURATION_S,
    messages: MESSAGES,
  };
  const load = (l: number[]): string => l.map((n) => n.toFixed(2)).join(', ');
  console.log(machineLine());
  console.log(commandLine('bench:kannel'));
  console.log(
    `Shape: ${fmt(ROUNDS)} round(s), ${SYSTEMS.join(' then ')} in each; ${fmt(CONCURRENCY)} requests in flight over ${fmt(KANNEL_CONNECTIONS)} keep-alive connections to smsbox / ` +
      `${fmt(CONCURRENCY)} to the node; ${fmt(WARMUP_S)} s warm-up; test SMSC in its own process (receipts 10 ms after acceptance), gateway connector:smpp ${fmt(BINDS)} binds × window ${fmt(WINDOW)}, ` +
      `Kannel one bind with max-pending-submits ${fmt(BINDS * WINDOW)}; report receiver in its own process; ` +
      `the gateway's node and connector ${FROM_BUILD ? 'from the compiled build (dist/, as the image runs them)' : 'from their TypeScript sources under tsx (as npm start runs them)'}.`,
  );
  console.log(
    `Load average (1, 5, 15 min) at the start ${load(loadBefore)}, at the end ${load(loadAfter)} (${fmt(os.cpus().length)} CPUs; other work on the machine counts).`,
  );
  console.log('');
  console.log(comparisonTable(rounds, shape));
  console.log('');
  console.log(summaryLine(rounds, shape));
  if (rounds.some((r) => !r.endToEnd.complete)) process.exitCode = 1;
}

await main();
exitSoon();
