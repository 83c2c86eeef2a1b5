/**
 * npm run bench:auth-flood — what a flood of unknown API keys costs the other clients of a node.
 *
 * One node in server mode (private PostgreSQL and nats-server, the simulator connector process), a merchant, and a
 * measured client sending GET /balance with its valid key at a fixed rate (autocannon in a child process, from
 * 127.0.0.1). Each phase runs the measured client for BENCH_DURATION_S seconds:
 *   - quiet: nothing else;
 *   - flood: at the same time, another process sends GET /balance with a fresh random (well formed) key on every
 *     request, over BENCH_FLOOD_CONNECTIONS connections from 127.0.0.2, as fast as the node answers.
 * Both phases run twice: with the unknown-key guards off (AUTH_NEGATIVE_CACHE_MS=0, AUTH_FAILURES_PER_ADDRESS very
 * large: every unknown key is a database lookup, as before the guards) and on (the defaults). Prints a Markdown table
 * for docs/performance.md. Measures and reports; asserts nothing.
 *
 * Environment: BENCH_DURATION_S (10), BENCH_RATE measured requests/s (200), BENCH_FLOOD_CONNECTIONS (32).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createGatewayNode } from '../../src/gateway-node.js';
import type { Config, DeepPartial } from '../../src/libraries/config/config.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import { seedMerchant, testConfig } from '../../test/helpers/gateway-fixture.js';
import { startTestNats } from '../../test/helpers/nats.js';
import { startTestPostgres } from '../../test/helpers/postgres.js';
import { sampleCpu, type CpuSample } from './process-cpu.js';
import {
  API_ROOT,
  commandLine,
  runChildOutput,
  countingLogger,
  envNumber,
  exitSoon,
  fmt,
  machineLine,
  startSimulatorProcess,
} from './bench-common.js';

const DURATION_S = envNumber('BENCH_DURATION_S', 10);
const RATE = envNumber('BENCH_RATE', 200);
const FLOOD_CONNECTIONS = envNumber('BENCH_FLOOD_CONNECTIONS', 32);
const MANY = 10_000_000;

interface Measured {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
}

interface FloodResult {
  readonly statuses: Readonly<Record<string, number>>;
  readonly requests: number;
}

const runChild = (args: readonly string[]): Promise<string> => runChildOutput(args[0] ?? 'npx', args.slice(1));

async function measuredClient(url: string, key: string): Promise<Measured> {
  const connections = 16;
  const out = await runChild([
    'npx',
    'autocannon',
    '--json',
    '-c',
    String(connections),
    '-d',
    String(DURATION_S),
    '--overallRate',
    String(RATE),
    '-H',
    `app-key=${key}`,
    url,
  ]);
  const summary = JSON.parse(out.slice(out.indexOf('{'))) as {
    requests: { average: number };
    latency: { p50: number; p99: number };
    non2xx: number;
  };
  return { rps: summary.requests.average, p50: summary.latency.p50, p99: summary.latency.p99, non2xx: summary.non2xx };
}

async function flood(base: string, prefix: string): Promise<FloodResult> {
  const entry = fileURLToPath(new URL('./unknown-key-flood-process.ts', import.meta.url));
  const out = await runChild([process.execPath, '--import', 'tsx', entry, base, String(FLOOD_CONNECTIONS), String(DURATION_S), prefix]);
  return JSON.parse(out.slice(out.indexOf('{'))) as FloodResult;
}

interface Row {
  readonly guards: string;
  readonly phase: string;
  readonly measured: Measured;
  readonly flood: FloodResult | null;
  /** CPU seconds the node (this process) and PostgreSQL used during the phase. */
  readonly cpu: { readonly node: number; readonly postgres: number } | null;
}

function cpuBetween(before: CpuSample | null, after: CpuSample | null): Row['cpu'] {
  if (!before || !after) return null;
  return { node: after.gateway - before.gateway, postgres: after.postgres - before.postgres };
}

async function runGuards(label: string, auth: DeepPartial<Config>['auth'], rows: Row[]): Promise<void> {
  const pg = await startTestPostgres();
  const nats = await startTestNats();
  const cleanups: (() => Promise<void>)[] = [() => pg.stop(), () => nats.stop()];
  try {
    const url = await pg.createDatabase('bench_auth_flood');
    const config = testConfig({
      database: { url },
      nats: { url: nats.url },
      rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
      auth,
    });
    const persistence = await openPostgresPersistence({ url, poolSize: config.database.poolSize });
    cleanups.push(() => persistence.close());
    const transport = await connectNatsTransport({ servers: nats.url, name: 'bench-auth-flood' });
    cleanups.push(() => transport.close());
    const node = await createGatewayNode({
      config,
      persistence,
      transport,
      inProcessSimulator: false,
      logger: countingLogger().logger,
      announce: () => undefined,
    });
    const port = await node.start();
    cleanups.push(() => node.stop());
    const simulator = await startSimulatorProcess(nats.url);
    cleanups.push(() => simulator.stop());
    const shop = await seedMerchant(node.gateway, { prepaid: '1000', postpaid: '0', timezone: 'Africa/Kinshasa' });
    const base = `http://127.0.0.1:${port}`;
    const balance = `${base}${API_ROOT}/balance`;
    const prefix = shop.apiKey.slice(0, shop.apiKey.length - 32);
    // warm-up: connections, caches, the key actor
    await measuredClient(balance, shop.apiKey);
    const quietFrom = sampleCpu();
    const quiet = await measuredClient(balance, shop.apiKey);
    rows.push({ guards: label, phase: 'quiet', measured: quiet, flood: null, cpu: cpuBetween(quietFrom, sampleCpu()) });
    const floodFrom = sampleCpu();
    const [measured, attack] = await Promise.all([measuredClient(balance, shop.apiKey), flood(base, prefix)]);
    rows.push({
      guards: label,
      phase: `flood of unknown keys (${FLOOD_CONNECTIONS} connections)`,
      measured,
      flood: attack,
      cpu: cpuBetween(floodFrom, sampleCpu()),
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => process.stderr.write(`stop: ${String(error)}\n`));
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  await runGuards('off', { negativeCacheMs: 0, failuresPerAddress: MANY }, rows);
  // the shipped defaults (the test settings the fixture starts from turn the per-address limit off)
  const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as { auth: Config['auth'] };
  await runGuards(
    `on (defaults: ${defaults.auth.failuresPerAddress} 401s per address per ${defaults.auth.failureWindowMs / 1000} s, unknown keys remembered ${defaults.auth.negativeCacheMs / 1000} s)`,
    defaults.auth,
    rows,
  );
  const lines = [
    machineLine(),
    `${commandLine('bench:auth-flood')} (BENCH_DURATION_S=${DURATION_S}, BENCH_RATE=${RATE}, BENCH_FLOOD_CONNECTIONS=${FLOOD_CONNECTIONS})`,
    '',
    '| guards | phase | measured client req/s | p50 ms | p99 ms | non-2xx | flood requests answered | flood answers by status | node CPU s | PostgreSQL CPU s |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.guards} | ${r.phase} | ${fmt(r.measured.rps)} | ${fmt(r.measured.p50)} | ${fmt(r.measured.p99)} | ${fmt(r.measured.non2xx)} | ${r.flood ? fmt(r.flood.requests) : '–'} | ${
          r.flood
            ? Object.entries(r.flood.statuses)
                .map(([status, n]) => `${status}: ${fmt(n)}`)
                .join(', ')
            : '–'
        } | ${r.cpu ? fmt(r.cpu.node, 2) : 'n/a'} | ${r.cpu ? fmt(r.cpu.postgres, 2) : 'n/a'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().then(exitSoon, (error: unknown) => {
  process.stderr.write(`bench:auth-flood failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
