import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { shardOf } from '../../src/cluster/shards.js';
import type { Lease } from '../../src/libraries/persistence/lease-port.js';
import { openPostgresPersistence, type Persistence } from '../../src/libraries/persistence/persistence.js';
import { natsNames } from '../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../src/libraries/transport/transport-port.js';
import { API_ROOT, call, type CallResult } from './http-fixture.js';
import { testConfig } from './gateway-fixture.js';
import { startTestNats, type TestNats } from './nats.js';
import { freePort } from './ports.js';
import { appendOutput } from './process-log.js';
import { testPostgres, type TestPostgres } from './postgres.js';
import { removeTemporaryDir, temporaryDir } from './temporary-dirs.js';

/**
 * A real cluster for the cluster tests (docs/architecture.md, "Cluster"): a fresh database on the private PostgreSQL server, a
 * private nats-server (or one shared with other deployments, each in its NATS_NAMESPACE), N gateway node processes (`src/main.ts`, exactly as deployed, on free ports), the simulator
 * connector as its own process, and an operator gateway in the test process that joins the cluster as a client
 * (owns no shard; every ask goes to the owner over NATS) to seed merchants.
 *
 * Every process started here is killed in `stop()`, and, should a test never get there, when the test process
 * exits.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, '../..');
/** tsx's loader, resolved from the repository (children run `node --import <it> <entry>.ts`). */
export const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

interface Spawned {
  readonly process: ChildProcess;
  readonly exited: Promise<ExitStatus>;
  output(): string;
}

function spawnTs(
  entry: string,
  env: Record<string, string>,
  tailChars = 40_000,
  logFile?: string,
  nodeArgs: readonly string[] = [],
): Spawned {
  // compiled JavaScript (the build an image runs) needs no loader; TypeScript sources go through tsx
  const loader = entry.endsWith('.ts') ? ['--import', TSX_LOADER] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, path.join(REPO_ROOT, entry)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const append = appendOutput(logFile, `${entry} started (pid ${String(child.pid)})`);
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-tailChars);
    append?.(chunk);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  return { process: child, exited, output: () => output };
}

/** Sends `signal` and waits for the exit; a process still there after `guardMs` is killed (and SIGCONTed). */
async function terminate(spawned: Spawned, signal: NodeJS.Signals, guardMs: number): Promise<ExitStatus> {
  const { process: child } = spawned;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
    if (signal !== 'SIGKILL') child.kill('SIGCONT');
  }
  let guard: NodeJS.Timeout | undefined;
  const forced = new Promise<void>((resolve) => {
    guard = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      resolve();
    }, guardMs);
  });
  await Promise.race([spawned.exited, forced]);
  clearTimeout(guard);
  return spawned.exited;
}

/** `starting` until GET /health first answers 200. */
export type NodeState = 'starting' | 'running' | 'paused' | 'exited';

/** One gateway node process. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  /** `${baseUrl}${API_ROOT}` */
  readonly api: string;
  /** Its operator port's `/metrics`. */
  readonly metricsUrl: string;
  readonly process: ChildProcess;
  readonly exited: Promise<ExitStatus>;
  state(): NodeState;
  /** The tail of its stdout and stderr (JSON log lines at LOG_LEVEL). */
  output(): string;
}

export interface ClusterOptions {
  readonly nodes?: number;
  readonly shards?: number;
  readonly leaseTtlMs?: number;
  readonly failoverDeadlineMs?: number;
  /** Extra environment of every node (rate limits, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra arguments of every node's `node` (a benchmark's `--cpu-prof`, say). */
  readonly nodeArgs?: readonly string[];
  /** Run the nodes from the compiled build (`npm run build`: `dist/main.js`, as the image does) instead of the sources under tsx. */
  readonly fromBuild?: boolean;
  /** Start the simulator connector process (default true). */
  readonly simulator?: boolean;
  /** How much of each node's output `output()` keeps (the last 40 000 characters by default). */
  readonly outputTailChars?: number;
  /** The PostgreSQL server to use (a private one for tests that stop it); the shared test server by default. */
  readonly postgres?: TestPostgres;
  /** A nats-server to share with other deployments (left running by `stop()`); a private one by default. */
  readonly nats?: TestNats;
  /** Start the private nats-server with its monitoring endpoint (`nats.monitorUrl`); ignored with `nats`. */
  readonly natsMonitoring?: boolean;
  /** A configuration file for the private nats-server (`-c`); ignored with `nats`. */
  readonly natsConfigFile?: string;
  /**
   * Record every journal insert and lease change by triggers (default true), for `staleWrites`, `writesByNode` and
   * `journalAudit` checks. Off, the database does only the product's work (what bench:cluster measures).
   */
  readonly audit?: boolean;
  /** NATS_NAMESPACE of every process of the cluster (nodes, simulator, operator); none by default. */
  readonly namespace?: string;
  /**
   * A directory that receives the whole output of every process started here, one file each, appended across
   * restarts: `<node id>.log`, `simulator.log`, `nats-server.log` (kept by the caller; nothing when unset).
   */
  readonly logDir?: string;
}

/** A journal record written by a node that did not hold the current lease of its shard at that moment. */
export interface StaleWrite {
  readonly key: string;
  readonly seq: number;
  readonly shard: number;
  /** The NODE_ID of the writer (its connection's application_name). */
  readonly writer: string;
  /** Owner of the shard's latest lease epoch when the record was written (null: never leased). */
  readonly owner: string | null;
  readonly epoch: number | null;
  readonly at: string;
}

export interface SimulatorReport {
  /** dispatch id → deliveries the connector saw (it sends each dispatch id to the carrier once). */
  readonly sent: Readonly<Record<string, number>>;
  readonly writtenAt: number;
}

export interface SimulatorDelivery {
  /** Which simulator process saw it, counting from 1. */
  readonly process: number;
  readonly dispatchId: string;
  readonly taken: boolean;
}

/** `<message>:<occurrence>` → how many `occurrence_dispatched` events the cluster's journal holds for it. */
export async function journalDispatchesOf(cluster: Pick<TestCluster, 'sql'>): Promise<Map<string, number>> {
  const rows = await cluster.sql<{ id: string; n: number }>(
    `SELECT substr(j.key, 9) || ':' || (e->>'occurrence') AS id, count(*)::int AS n
     FROM journal j, jsonb_array_elements(j.events) e WHERE j.key LIKE 'message:%' AND e->>'type' = 'occurrence_dispatched' GROUP BY 1`,
  );
  return new Map(rows.map((row) => [row.id, row.n]));
}

export interface TestCluster {
  readonly databaseUrl: string;
  readonly nats: TestNats;
  readonly shards: number;
  readonly leaseTtlMs: number;
  readonly failoverDeadlineMs: number;
  /** Every node started so far, in start order (dead ones included). */
  readonly nodes: readonly ClusterNode[];
  /** Nodes that serve: healthy once, not paused, not exited. */
  running(): ClusterNode[];
  /** The node of that id started last. */
  node(id: string): ClusterNode;
  /** The operator: a cluster client in the test process (not started: it only runs use cases). */
  readonly operator: Gateway;
  /** The operator's store, for reads (leases, journal). */
  readonly persistence: Persistence;
  /** Starts a node (`node-<n+1>` unless named) and waits until GET /health answers 200. */
  startNode(id?: string, env?: Readonly<Record<string, string>>): Promise<ClusterNode>;
  /** Sends `signal` and waits for the exit (hang guard: SIGKILL after `guardMs`). */
  kill(node: ClusterNode, signal?: NodeJS.Signals, guardMs?: number): Promise<ExitStatus>;
  pause(node: ClusterNode): void;
  resume(node: ClusterNode): void;
  /** Every lease row (expired ones included). */
  leases(): Promise<readonly Lease[]>;
  /** owner → shards it holds by an unexpired lease (database time), sorted. */
  ownership(): Promise<Map<string, number[]>>;
  /**
   * Resolves once every shard is held by an unexpired lease, only by `owners`, none over its fair share
   * ceil(shards / owners) (so with 64 shards: 4 nodes own 16 each; 3 nodes 22, 22 and 20 or 21, 21, 22).
   */
  waitForBalance(owners: readonly string[], timeoutMs?: number): Promise<Map<string, number[]>>;
  /** The simulator's latest report written after this call (it writes one every 200 ms). */
  simulatorReport(timeoutMs?: number): Promise<SimulatorReport>;
  /**
   * Every job delivery the simulator processes saw, in order, across restarts (SIMULATOR_DELIVERY_LOG): `taken`
   * when the process sent it to its carrier, `again` when it acknowledged a dispatch id it had already taken.
   */
  simulatorDeliveries(): readonly SimulatorDelivery[];
  /** Stops the simulator process with `signal` (SIGKILL: a crash) and waits for its exit. */
  stopSimulator(signal?: NodeJS.Signals): Promise<ExitStatus>;
  /** The running simulator process's pid (null when none runs). */
  simulatorPid(): number | null;
  /** Starts a simulator process (after `stopSimulator`) and waits for its first report. */
  startSimulator(): Promise<void>;
  /** One query on the cluster's database (as the operator). */
  sql<T extends object>(text: string, params?: readonly unknown[]): Promise<readonly T[]>;
  /** The database's clock, ms since the epoch (the clock of leases and of the audit). */
  dbNow(): Promise<number>;
  /**
   * Journal records (since the cluster started; triggers record every insert) whose writer was not the owner of
   * the shard's latest lease epoch at that moment: a stale owner's write. Empty when fencing holds.
   */
  staleWrites(): Promise<readonly StaleWrite[]>;
  /** How many journal records each node wrote, by the audit (writer → count), optionally since `sinceMs`. */
  writesByNode(sinceMs?: number): Promise<Map<string, number>>;
  /** Journal keys whose sequence numbers are not exactly 1..n. */
  journalGaps(): Promise<readonly { key: string; min: number; max: number; count: number }[]>;
  stop(): Promise<void>;
}

/**
 * The triggers behind `journalAudit` and `leaseAudit`: each journal insert with its writer (the connection's
 * application_name, which the harness sets to the node id) and each change of a lease's owner or epoch, both with
 * the database's clock.
 */
const AUDIT_SQL = `
CREATE TABLE journal_audit (key text NOT NULL, seq bigint NOT NULL, writer text NOT NULL, at timestamptz NOT NULL);
CREATE FUNCTION journal_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO journal_audit (key, seq, writer, at) VALUES (NEW.key, NEW.seq, current_setting('application_name'), clock_timestamp());
  RETURN NEW;
END $$;
CREATE TRIGGER journal_audit_insert AFTER INSERT ON journal FOR EACH ROW EXECUTE FUNCTION journal_audit_row();
CREATE TABLE lease_audit (shard integer NOT NULL, owner text NOT NULL, epoch bigint NOT NULL, at timestamptz NOT NULL);
CREATE FUNCTION lease_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR OLD.epoch IS DISTINCT FROM NEW.epoch OR OLD.owner IS DISTINCT FROM NEW.owner THEN
    INSERT INTO lease_audit (shard, owner, epoch, at) VALUES (NEW.shard, NEW.owner, NEW.epoch, clock_timestamp());
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER lease_audit_change AFTER INSERT OR UPDATE ON shard_leases FOR EACH ROW EXECUTE FUNCTION lease_audit_row();
`;

const withApplicationName = (url: string, name: string): string =>
  `${url}${url.includes('?') ? '&' : '?'}application_name=${encodeURIComponent(name)}`;

export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const shards = options.shards ?? 64;
  const leaseTtlMs = options.leaseTtlMs ?? 3_000;
  const failoverDeadlineMs = options.failoverDeadlineMs ?? 20_000;
  const nodes: ClusterNode[] = [];
  const spawnedOf = new Map<ClusterNode, Spawned>();
  const paused = new Set<ClusterNode>();
  const ready = new Set<ClusterNode>();
  // its processes are SIGKILLed at exit (above); the directory goes too unless stop() removed it first
  const workDir = temporaryDir('gw-cluster-');
  const reportFile = path.join(workDir, 'simulator-report.json');
  const deliveryLog = path.join(workDir, 'simulator-deliveries.log');
  let simulator: Spawned | null = null;
  let simulatorProcesses = 0;
  let operatorTransport: Transport | null = null;
  let persistence: Persistence | null = null;
  let operator: Gateway | null = null;

  const databaseUrl = await (options.postgres ?? (await testPostgres())).createDatabase('cluster');
  const logFile = (name: string): string | undefined =>
    options.logDir === undefined ? undefined : path.join(options.logDir, `${name}.log`);
  const ownsNats = options.nats === undefined;
  const nats =
    options.nats ??
    (await startTestNats({
      logFile: logFile('nats-server'),
      monitoring: options.natsMonitoring === true,
      ...(options.natsConfigFile === undefined ? {} : { configFile: options.natsConfigFile }),
    }));
  const audit = options.audit !== false;
  const needsAudit = (what: string): void => {
    if (!audit) throw new Error(`${what} needs the journal audit: start the cluster without audit: false`);
  };
  const namespace = options.namespace ?? '';

  async function stop(): Promise<void> {
    const all = [...nodes.map((node) => spawnedOf.get(node)), simulator].filter((s): s is Spawned => s !== undefined && s !== null);
    await Promise.all(all.map((s) => terminate(s, 'SIGTERM', 10_000)));
    await operator?.stop().catch(() => undefined);
    await operatorTransport?.close().catch(() => undefined);
    await persistence?.close().catch(() => undefined);
    if (ownsNats) await nats.stop().catch(() => undefined);
    removeTemporaryDir(workDir);
  }

  try {
    // migrations run here, once, before any node opens the database
    persistence = await openPostgresPersistence({ url: withApplicationName(databaseUrl, 'operator'), poolSize: 5 });
    const store = persistence;
    const db = store.sql;
    if (!db) throw new Error('the cluster harness needs PostgreSQL');
    if (audit) await db.query(AUDIT_SQL);
    operatorTransport = await connectNatsTransport({ servers: nats.url, name: 'operator', names: natsNames(namespace) });
    operator = await createGateway({
      config: testConfig({
        database: { url: databaseUrl },
        nats: { url: nats.url, namespace },
        cluster: { shards, leaseTtlMs, failoverDeadlineMs },
      }),
      persistence: store,
      transport: operatorTransport,
      role: 'client',
    });

    async function startNode(id = `node-${nodes.length + 1}`, env: Readonly<Record<string, string>> = {}): Promise<ClusterNode> {
      const port = await freePort();
      const metricsPort = await freePort();
      const spawned = spawnTs(
        options.fromBuild ? 'dist/main.js' : 'src/main.ts',
        {
          NODE_ENV: 'test',
          GATEWAY_MODE: 'server',
          GATEWAY_ENVIRONMENT: 'sandbox',
          DATABASE_URL: withApplicationName(databaseUrl, id),
          NATS_URL: nats.url,
          NATS_NAMESPACE: namespace,
          HOST: '127.0.0.1',
          PORT: String(port),
          METRICS_PORT: String(metricsPort),
          NODE_ID: id,
          CLUSTER_SHARDS: String(shards),
          CLUSTER_LEASE_TTL_MS: String(leaseTtlMs),
          CLUSTER_FAILOVER_DEADLINE_MS: String(failoverDeadlineMs),
          LOG_LEVEL: 'warn',
          SEED_DEMO_MERCHANT: 'false',
          WEBHOOK_ALLOW_HTTP_LOCALHOST: 'true',
          WEBHOOK_RETRY_DELAYS_MS: '30,120,600,3600',
          ...options.env,
          ...env,
        },
        options.outputTailChars,
        logFile(id),
        options.nodeArgs,
      );
      const baseUrl = `http://127.0.0.1:${port}`;
      const node: ClusterNode = {
        id,
        port,
        baseUrl,
        api: `${baseUrl}${API_ROOT}`,
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
        process: spawned.process,
        exited: spawned.exited,
        state: () => {
          if (spawned.process.exitCode !== null || spawned.process.signalCode !== null) return 'exited';
          return paused.has(node) ? 'paused' : ready.has(node) ? 'running' : 'starting';
        },
        output: () => spawned.output(),
      };
      nodes.push(node);
      spawnedOf.set(node, spawned);
      await waitForHealth(node, 60_000);
      ready.add(node);
      return node;
    }

    async function ownership(): Promise<Map<string, number[]>> {
      const rows = await store.sql!.query<{ owner: string; shard: number }>(
        'SELECT owner, shard FROM shard_leases WHERE expires_at > now() ORDER BY shard',
      );
      const owners = new Map<string, number[]>();
      for (const row of rows) owners.set(row.owner, [...(owners.get(row.owner) ?? []), row.shard]);
      return owners;
    }

    async function startSimulator(): Promise<void> {
      simulatorProcesses++;
      simulator = spawnTs(
        'src/carriers/simulator/simulator-main.ts',
        {
          NODE_ENV: 'test',
          NATS_URL: nats.url,
          NATS_NAMESPACE: namespace,
          LOG_LEVEL: 'warn',
          SIMULATOR_REPORT_FILE: reportFile,
          SIMULATOR_DELIVERY_LOG: deliveryLog,
          SIMULATOR_PROCESS: String(simulatorProcesses),
        },
        undefined,
        logFile('simulator'),
      );
      await cluster.simulatorReport(60_000);
    }

    const cluster: TestCluster = {
      databaseUrl,
      nats,
      shards,
      leaseTtlMs,
      failoverDeadlineMs,
      nodes,
      running: () => nodes.filter((n) => n.state() === 'running'),
      node(id) {
        const found = nodes.filter((n) => n.id === id).pop();
        if (!found) throw new Error(`no node ${id}`);
        return found;
      },
      operator,
      persistence: store,
      startNode,
      async kill(node, signal = 'SIGKILL', guardMs = 30_000) {
        paused.delete(node);
        return terminate(spawnedOf.get(node)!, signal, guardMs);
      },
      pause(node) {
        node.process.kill('SIGSTOP');
        paused.add(node);
      },
      resume(node) {
        node.process.kill('SIGCONT');
        paused.delete(node);
      },
      leases: () => store.leases.list(),
      ownership,
      async waitForBalance(owners, timeoutMs = 30_000) {
        const deadline = Date.now() + timeoutMs;
        const fair = Math.ceil(shards / owners.length);
        for (;;) {
          const current = await ownership();
          const held = [...current.values()].reduce((n, list) => n + list.length, 0);
          const balanced =
            held === shards &&
            [...current.keys()].every((owner) => owners.includes(owner)) &&
            owners.every((owner) => (current.get(owner)?.length ?? 0) <= fair);
          if (balanced) return current;
          if (Date.now() > deadline) {
            const seen = JSON.stringify(Object.fromEntries([...current].map(([owner, list]) => [owner, list.length])));
            throw new Error(`shards not balanced over ${owners.join(', ')} within ${timeoutMs} ms: ${seen}`);
          }
          await sleep(100);
        }
      },
      async simulatorReport(timeoutMs = 10_000) {
        const asked = Date.now();
        const deadline = asked + timeoutMs;
        for (;;) {
          if (existsSync(reportFile)) {
            try {
              const report = JSON.parse(readFileSync(reportFile, 'utf8')) as SimulatorReport;
              if (report.writtenAt > asked) return report;
            } catch {
              // being replaced: read again
            }
          }
          if (Date.now() > deadline) throw new Error(`no fresh simulator report within ${timeoutMs} ms:\n${simulator?.output() ?? ''}`);
          await sleep(50);
        }
      },
      simulatorDeliveries() {
        if (!existsSync(deliveryLog)) return [];
        return readFileSync(deliveryLog, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => {
            const [process, what, dispatchId] = line.split(' ');
            return { process: Number(process), dispatchId: dispatchId ?? '', taken: what === 'taken' };
          });
      },
      async stopSimulator(signal = 'SIGKILL') {
        const running = simulator;
        if (!running) throw new Error('no simulator process');
        simulator = null;
        return terminate(running, signal, 30_000);
      },
      startSimulator,
      simulatorPid: () => simulator?.process.pid ?? null,
      sql: (text, params = []) => db.query(text, [...params]),
      async dbNow() {
        const [row] = await db.query<{ now: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now');
        return row!.now;
      },
      async staleWrites() {
        needsAudit('staleWrites');
        // every journal key to its shard, by its merchant (wallet:<merchant>, apikey:<key>, message:<message>)
        const keys = await db.query<{ key: string; merchant_id: string | null }>(
          `SELECT DISTINCT j.key, CASE
             WHEN j.key LIKE 'wallet:%' THEN substr(j.key, 8)
             WHEN j.key LIKE 'apikey:%' THEN (SELECT k.merchant_id FROM api_keys k WHERE k.key_id = substr(j.key, 8))
             WHEN j.key LIKE 'message:%' THEN (SELECT o.merchant_id FROM message_owners o WHERE o.message_id = substr(j.key, 9))
           END AS merchant_id
           FROM journal_audit j`,
        );
        const unknown = keys.filter((k) => k.merchant_id === null).map((k) => k.key);
        if (unknown.length > 0) throw new Error(`journal keys of no known merchant: ${unknown.slice(0, 5).join(', ')}`);
        const shardsOfKeys = keys.map((k) => ({ key: k.key, shard: shardOf(k.merchant_id!, shards) }));
        return db.query<StaleWrite>(
          `SELECT j.key, j.seq::float8 AS seq, m.shard, j.writer, l.owner, l.epoch::float8 AS epoch, j.at::text AS at
           FROM journal_audit j
           JOIN jsonb_to_recordset($1::jsonb) AS m(key text, shard integer) ON m.key = j.key
           LEFT JOIN LATERAL (
             SELECT a.owner, a.epoch FROM lease_audit a WHERE a.shard = m.shard AND a.at <= j.at ORDER BY a.at DESC LIMIT 1
           ) l ON true
           WHERE l.owner IS DISTINCT FROM j.writer
           ORDER BY j.at`,
          [JSON.stringify(shardsOfKeys)],
        );
      },
      async writesByNode(sinceMs = 0) {
        needsAudit('writesByNode');
        const rows = await db.query<{ writer: string; n: number }>(
          'SELECT writer, count(*)::int AS n FROM journal_audit WHERE at >= to_timestamp($1::float8 / 1000) GROUP BY writer',
          [sinceMs],
        );
        return new Map(rows.map((r) => [r.writer, r.n]));
      },
      journalGaps: () =>
        db.query<{ key: string; min: number; max: number; count: number }>(
          `SELECT key, min(seq)::float8 AS min, max(seq)::float8 AS max, count(*)::float8 AS count FROM journal
           GROUP BY key HAVING min(seq) <> 1 OR max(seq) <> count(*)`,
        ),
      stop,
    };

    await Promise.all(Array.from({ length: options.nodes ?? 3 }, (_, i) => startNode(`node-${i + 1}`)));
    // nodes were registered in completion order; keep node-1..n in order
    nodes.sort((a, b) => Number(a.id.slice(5)) - Number(b.id.slice(5)));
    await cluster.waitForBalance(
      nodes.map((n) => n.id),
      60_000,
    );

    if (options.simulator !== false) await startSimulator();
    return cluster;
  } catch (error) {
    const logs = nodes.map((n) => `--- ${n.id} (${n.state()})\n${n.output()}`).join('\n');
    await stop();
    if (error instanceof Error) error.message = `${error.message}\n${logs}`;
    throw error;
  }
}

async function waitForHealth(node: ClusterNode, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (node.state() === 'exited') throw new Error(`${node.id} exited before serving:\n${node.output()}`);
    const answer = await call(`${node.api}/health`).catch(() => null);
    if (answer?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${node.id} not healthy within ${timeoutMs} ms:\n${node.output()}`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Load: sends spread round-robin over the nodes' ports, each with its own Idempotency-Key

export interface LoadMerchant {
  readonly merchantId: string;
  readonly keyId: string;
  readonly apiKey: string;
}

export type AttemptOutcome = number | 'refused' | 'network';

export interface SendAttempt {
  readonly target: string;
  readonly outcome: AttemptOutcome;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly errorCode?: string;
  /** The body of a non-201 answer (truncated), for failure messages. */
  readonly detail?: string;
}

export interface Accepted {
  readonly messageId: string;
  /** In ten-thousandths of the currency unit. */
  readonly totalCost: number;
  readonly totalRecipients: number;
}

/** One logical send: its body, its Idempotency-Key, every attempt, and what the gateway accepted. */
export interface LoadSend {
  readonly index: number;
  readonly merchant: LoadMerchant;
  readonly idempotencyKey: string;
  readonly body: { readonly to: readonly string[]; readonly message: string };
  readonly attempts: SendAttempt[];
  accepted: Accepted | null;
}

/** Money of the API (a decimal number of the currency) in ten-thousandths, exactly. */
export const toUnits = (amount: number): number => Math.round(amount * 10_000);

async function attempt(send: LoadSend, target: string): Promise<void> {
  const startedAt = Date.now();
  let result: CallResult;
  try {
    result = await call(`${target}/send`, {
      method: 'POST',
      key: send.merchant.apiKey,
      json: send.body,
      headers: { 'idempotency-key': send.idempotencyKey },
    });
  } catch (error) {
    const code = networkCode(error);
    send.attempts.push({
      target,
      outcome: code === 'ECONNREFUSED' ? 'refused' : 'network',
      startedAt,
      endedAt: Date.now(),
      errorCode: code,
    });
    return;
  }
  const body = result.body as
    { data?: { message_id: string; total_cost: number; total_recipients: number }; error_code?: string } | undefined;
  send.attempts.push({
    target,
    outcome: result.status,
    startedAt,
    endedAt: Date.now(),
    ...(body?.error_code ? { errorCode: body.error_code } : {}),
    ...(result.status === 201 ? {} : { detail: result.text.slice(0, 300) }),
  });
  if (result.status === 201 && body?.data) {
    const accepted: Accepted = {
      messageId: body.data.message_id,
      totalCost: toUnits(body.data.total_cost),
      totalRecipients: body.data.total_recipients,
    };
    if (send.accepted && send.accepted.messageId !== accepted.messageId) {
      throw new Error(`send ${send.idempotencyKey} accepted twice: ${send.accepted.messageId} then ${accepted.messageId}`);
    }
    send.accepted = accepted;
  }
}

function networkCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return error instanceof Error ? error.message : String(error);
}

export interface LoadOptions {
  readonly sends: number;
  /** Requests in flight at once. */
  readonly concurrency: number;
  readonly merchants: readonly LoadMerchant[];
  /** The API roots to spread over, round-robin, read at each request (a test may change them mid-load). */
  readonly targets: () => readonly string[];
  /** Recipients of send `i` (1–3 numbers). */
  readonly recipients: (i: number) => readonly string[];
  /** Unique per run; prefixes the Idempotency-Keys. */
  readonly runId?: string;
  /** Paces the sends: send `i` leaves no earlier than i / rate seconds after the start (default: as fast as possible). */
  readonly ratePerSecond?: number;
  /** Checked before each send: once true, no further send leaves (the result holds only the sends made). */
  readonly shouldStop?: () => boolean;
  /** Called after each request (the test may kill a node at some point of the load). */
  readonly onProgress?: (done: number) => void;
}

/** Sends `sends` messages, `concurrency` at a time, round-robin over `targets()`. One attempt each. */
export async function runSendLoad(options: LoadOptions): Promise<LoadSend[]> {
  const runId = options.runId ?? randomUUID().slice(0, 8);
  const sends: LoadSend[] = Array.from({ length: options.sends }, (_, index) => ({
    index,
    merchant: options.merchants[index % options.merchants.length]!,
    idempotencyKey: `load-${runId}-${index}`,
    body: { to: options.recipients(index), message: `cluster load ${runId} #${index}` },
    attempts: [],
    accepted: null,
  }));
  let next = 0;
  let done = 0;
  const startedAt = Date.now();
  async function worker(): Promise<void> {
    while (next < sends.length && !options.shouldStop?.()) {
      const send = sends[next]!;
      next++;
      if (options.ratePerSecond) {
        const due = startedAt + (send.index * 1_000) / options.ratePerSecond;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      const targets = options.targets();
      const target = targets[send.index % targets.length]!;
      await attempt(send, target);
      done++;
      options.onProgress?.(done);
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, () => worker()));
  return sends.filter((send) => send.attempts.length > 0);
}

/**
 * A send that may have reached the gateway without a 201 (the connection broke, or 5xx) is sent again with the
 * same Idempotency-Key to `targets()` until it is accepted, so the ledger can be checked exactly. A send only ever
 * refused a connection never reached anything: it stays not accepted.
 */
export async function settleSends(sends: readonly LoadSend[], targets: () => readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const unsettled = (): LoadSend[] =>
    sends.filter(
      (s) => s.accepted === null && s.attempts.some((a) => a.outcome !== 'refused' && (a.outcome === 'network' || a.outcome >= 500)),
    );
  let round = 0;
  for (let pending = unsettled(); pending.length > 0; pending = unsettled()) {
    if (Date.now() > deadline)
      throw new Error(
        `${pending.length} sends not accepted on retry within ${timeoutMs} ms: ${JSON.stringify(pending.slice(0, 3).map((s) => s.attempts))}`,
      );
    const list = targets();
    await Promise.all(pending.map((send, i) => attempt(send, list[(i + round) % list.length]!)));
    round++;
    if (unsettled().length > 0) await sleep(500);
  }
  const wrong = sends.filter((s) => s.attempts.some((a) => typeof a.outcome === 'number' && a.outcome !== 201 && a.outcome < 500));
  if (wrong.length > 0) throw new Error(`sends answered with a 4xx: ${JSON.stringify(wrong.slice(0, 3).map((s) => s.attempts))}`);
}

/** Numbers of the DR Congo network priced 0.02 in `seedMerchant`, the last two digits choosing the simulator's outcome. */
export const loadNumber = (ending: '00' | '90' | '91' | '01', n: number): string =>
  `+24381${String(n % 100_000).padStart(5, '0')}${ending}`;

/** GET with a key on one of the given API roots. */
export const getOn = (api: string, pathName: string, key: string): Promise<CallResult> => call(`${api}${pathName}`, { key });
