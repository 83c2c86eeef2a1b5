/**
 * npm run bench:smpp — recipients per second end to end through the SMPP connector, beside the same run through the
 * simulator connector: POST /send (one recipient each) → the node (NATS transport, private PostgreSQL) → NATS →
 * the connector process → the carrier → receipt → NATS → the node → the merchant's webhook endpoint.
 *
 * Two runs on the same machine, each on a fresh database and a fresh nats-server:
 * - smpp: `connector:smpp` (src/carriers/smpp/smpp-main.ts) as its own process, SMPP_BINDS binds with a window of
 *   SMPP_WINDOW each, to the test message centre (scripts/bench/smsc-process.ts) in a process of its own, which
 *   accepts every part at once and sends a DELIVRD receipt 10 ms later;
 * - simulator: `connector:simulator` as its own process (its default outcomes for these numbers: delivered).
 * The node serves the sandbox, which routes every dispatch to the slug `simulator`; in the smpp run the SMPP
 * connector takes that slug and no simulator runs. The webhook receiver is a child process (204 at once).
 * Sends are a closed loop of BENCH_CONCURRENCY requests from this process (which is also the node: its CPU counts as
 * the gateway's). Prints a Markdown table for docs/performance.md. Measures and reports; asserts nothing.
 *
 * Environment:
 *   BENCH_RECIPIENTS     recipients per run (5 000)
 *   BENCH_PER_SEND       recipients per POST /send (1): more takes the API out of the way of the connector
 *   BENCH_CONCURRENCY    POST /send in flight at once (32)
 *   BENCH_SMPP_BINDS     SMPP binds of the connector (2)
 *   BENCH_SMPP_WINDOW    window per bind (10)
 *   BENCH_CONNECTOR_CONCURRENCY  CONNECTOR_CONCURRENCY of the SMPP connector (unset: its default, window size × weight;
 *                        the simulator always takes 64 jobs at once)
 *   BENCH_RUNS           which runs, comma-separated: smpp,simulator (both)
 *   BENCH_TIMEOUT_S      give up waiting for the last webhook of a run after this long (600)
 */
import os from 'node:os';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createGatewayNode } from '../../src/gateway-node.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import { STREAMS } from '../../src/libraries/transport/transport-port.js';
import { seedMerchant, testConfig } from '../../test/helpers/gateway-fixture.js';
import { startTestNats } from '../../test/helpers/nats.js';
import { startTestPostgres, type TestPostgres } from '../../test/helpers/postgres.js';
import { cpuPerUnit, formatCpuPerUnit, sampleCpu } from './process-cpu.js';
import { startReceiver, startSmppConnector, startSmsc, type SmscProcess } from './bench-children.js';
import {
  API_ROOT,
  commandLine,
  countingLogger,
  deliverableNumbers,
  envNumber,
  exitSoon,
  fmt,
  machineLine,
  percentile,
  sleep,
  startSimulatorProcess,
} from './bench-common.js';

const PER_SEND = envNumber('BENCH_PER_SEND', 1);
const RECIPIENTS = Math.ceil(envNumber('BENCH_RECIPIENTS', 5_000) / PER_SEND) * PER_SEND;
const SENDS = RECIPIENTS / PER_SEND;
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32);
const BINDS = envNumber('BENCH_SMPP_BINDS', 2);
const WINDOW = envNumber('BENCH_SMPP_WINDOW', 10);
const TIMEOUT_S = envNumber('BENCH_TIMEOUT_S', 600);
const RUNS = (process.env.BENCH_RUNS ?? 'smpp,simulator')
  .split(',')
  .map((r) => r.trim())
  .filter((r): r is RunKind => r === 'smpp' || r === 'simulator');
const CONNECTOR_CONCURRENCY = process.env.BENCH_CONNECTOR_CONCURRENCY ?? '';
const MANY = 10_000_000;

type RunKind = 'smpp' | 'simulator';

interface RunResult {
  readonly kind: RunKind;
  readonly delivered: number;
  readonly complete: boolean;
  readonly sendSeconds: number;
  readonly windowSeconds: number;
  readonly latencies: readonly number[];
  readonly cpu: string;
  readonly smscCpuMsPerRecipient: number | null;
  readonly receiptMessages: number;
  readonly failedEvents: number;
  readonly redeliveredDispatches: number;
  readonly centre: string;
  readonly warnings: string;
}

async function run(kind: RunKind, pg: TestPostgres): Promise<RunResult> {
  const log = countingLogger();
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const nats = await startTestNats();
    cleanups.unshift(() => nats.stop());
    const url = await pg.createDatabase(`bench_smpp_${kind}`);
    const config = testConfig({
      database: { url },
      nats: { url: nats.url },
      webhooks: { allowHttpLocalhost: true },
      rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
    });
    const persistence = await openPostgresPersistence({ url, poolSize: config.database.poolSize });
    cleanups.unshift(() => persistence.close());
    const transport = await connectNatsTransport({ servers: nats.url, name: `bench-smpp-${kind}` });
    cleanups.unshift(() => transport.close());
    const node = await createGatewayNode({
      config,
      persistence,
      transport,
      inProcessSimulator: false,
      logger: log.logger,
      announce: () => undefined,
    });
    const port = await node.start();
    cleanups.unshift(() => node.stop());

    let smsc: SmscProcess | null = null;
    let connectorPid: number;
    if (kind === 'smpp') {
      const centre = await startSmsc();
      smsc = centre;
      cleanups.unshift(() => centre.stop());
      const connector = await startSmppConnector({
        natsUrl: nats.url,
        port: centre.port,
        binds: BINDS,
        window: WINDOW,
        connectorConcurrency: CONNECTOR_CONCURRENCY,
      });
      cleanups.unshift(() => connector.stop());
      connectorPid = connector.pid;
    } else {
      const simulator = await startSimulatorProcess(nats.url);
      cleanups.unshift(() => simulator.stop());
      connectorPid = simulator.pid;
    }

    const deliveredAt = new Map<string, number>();
    let failedEvents = 0;
    let lastDeliveredAt = 0;
    let wake: (() => void) | null = null;
    const receiver = await startReceiver(({ type, messageId, recipientIndex }, at) => {
      if (type === 'sms.failed') failedEvents++;
      const key = `${messageId}:${recipientIndex ?? -1}`;
      if (type !== 'sms.delivered' || deliveredAt.has(key)) return;
      deliveredAt.set(key, at);
      lastDeliveredAt = at;
      if (deliveredAt.size >= RECIPIENTS) wake?.();
    });
    cleanups.unshift(() => receiver.close());

    const shop = await seedMerchant(node.gateway, { prepaid: '100000000', postpaid: '100000000' });
    if (!(await node.gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: receiver.url, username: null, password: null })))
      throw new Error('setWebhook failed');

    const numbers = deliverableNumbers(RECIPIENTS);
    const api = `http://127.0.0.1:${port}${API_ROOT}`;
    const submittedAt = new Map<string, number>();
    const finished = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const smscCpuBefore = smsc ? (await smsc.ask('cpu')).ms : null;
    const cpuBefore = sampleCpu([connectorPid]);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SENDS) {
          const i = next++;
          const at = performance.now();
          const response = await fetch(`${api}/send`, {
            method: 'POST',
            headers: { 'app-key': shop.apiKey, 'content-type': 'application/json' },
            body: JSON.stringify({ to: numbers.slice(i * PER_SEND, (i + 1) * PER_SEND), message: `Bench ${kind} ${i}` }),
          });
          const body = (await response.json()) as { data?: { message_id?: string } };
          const id = body.data?.message_id;
          if (response.status !== 201 || !id)
            throw new Error(`POST /send answered ${response.status}: ${JSON.stringify(body).slice(0, 500)}`);
          submittedAt.set(id, at);
        }
      }),
    );
    const sendSeconds = (performance.now() - started) / 1000;
    let timer: NodeJS.Timeout | undefined;
    const complete = await Promise.race([
      finished.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => {
          resolve(false);
        }, TIMEOUT_S * 1000);
      }),
    ]);
    clearTimeout(timer);
    const cpuAfter = sampleCpu([connectorPid]);
    const smscCpuAfter = smsc ? (await smsc.ask('cpu')).ms : null;
    const end = complete ? lastDeliveredAt : performance.now();

    const monitor = await connect({ servers: nats.url, name: 'bench-monitor' });
    const jsm = await jetstreamManager(monitor);
    const receiptMessages = (await jsm.streams.info(STREAMS.receipts.name)).state.messages;
    const dispatchConsumer = await jsm.consumers.info(STREAMS.dispatch.name, 'connector-simulator');
    await monitor.close();
    let centre = '';
    if (smsc) {
      const counts = await smsc.ask('counts');
      centre = `${fmt(counts.submits)} submit_sm accepted, ${fmt(counts.throttled)} throttled, ${fmt(counts.answeredReceipts)} receipts answered`;
    }

    const latencies = [...deliveredAt].flatMap(([key, at]) => {
      const sent = submittedAt.get(key.slice(0, key.lastIndexOf(':')));
      return sent === undefined ? [] : [at - sent];
    });
    latencies.sort((a, b) => a - b);
    const smscShare =
      smscCpuBefore !== null && smscCpuAfter !== null && deliveredAt.size > 0 ? (smscCpuAfter - smscCpuBefore) / deliveredAt.size : null;
    return {
      kind,
      delivered: deliveredAt.size,
      complete,
      sendSeconds,
      windowSeconds: (end - started) / 1000,
      latencies,
      cpu: formatCpuPerUnit(cpuPerUnit(cpuBefore, cpuAfter, deliveredAt.size), {
        'load generator': kind === 'smpp' ? 'webhook receiver + SMSC' : 'webhook receiver',
      }),
      smscCpuMsPerRecipient: smscShare,
      receiptMessages,
      failedEvents,
      redeliveredDispatches: dispatchConsumer.num_redelivered,
      centre,
      warnings: log.count() > 0 ? `${fmt(log.count())} node warnings/errors; first: ${log.first().join(' | ')}` : '',
    };
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
  }
}

async function main(): Promise<void> {
  const pg = await startTestPostgres();
  const results: RunResult[] = [];
  const loadBefore = os.loadavg()[0] ?? 0;
  try {
    for (const kind of RUNS) {
      process.stderr.write(`bench:smpp: ${kind} run, ${fmt(RECIPIENTS)} recipients…\n`);
      results.push(await run(kind, pg));
      await sleep(1_000);
    }
  } finally {
    await pg.stop();
  }
  const loadAfter = os.loadavg()[0] ?? 0;

  console.log(machineLine());
  console.log(commandLine('bench:smpp'));
  console.log(
    `Shape: private PostgreSQL + private nats-server, one node (NATS transport) in the bench process with the load (${fmt(CONCURRENCY)} POST /send in flight, ${fmt(PER_SEND)} recipient(s) each), ` +
      `the connector in its own process (smpp: ${fmt(BINDS)} binds × window ${fmt(WINDOW)}${CONNECTOR_CONCURRENCY === '' ? '' : `, CONNECTOR_CONCURRENCY ${CONNECTOR_CONCURRENCY}`} to the test SMSC in its own process, receipts 10 ms after acceptance; simulator: its default settings, 64 jobs at once), webhook receiver in a child process.`,
  );
  console.log(
    `Machine load average (1 min) at the start ${loadBefore.toFixed(2)}, at the end ${loadAfter.toFixed(2)} (${fmt(os.cpus().length)} CPUs; other work on the machine counts).`,
  );
  console.log('');
  console.log(
    '| Connector | Recipients | Recipients/s, first POST → last sms.delivered | POST /send phase (requests/s) | Latency p50 / p99 (POST → sms.delivered) | CPU ms per recipient by process | Receipt messages | Dispatches redelivered |',
  );
  console.log('|---|---:|---:|---:|---:|---|---:|---:|');
  for (const r of results) {
    const cpu = r.smscCpuMsPerRecipient === null ? r.cpu : `${r.cpu} (SMSC alone ${r.smscCpuMsPerRecipient.toFixed(2)})`;
    console.log(
      `| ${r.kind === 'smpp' ? 'connector:smpp' : 'connector:simulator'} | ${fmt(r.delivered)}${r.complete ? '' : ` of ${fmt(RECIPIENTS)} (timeout)`} | ${fmt(r.delivered / r.windowSeconds)} (${fmt(r.windowSeconds, 2)} s) | ` +
        `${fmt(SENDS / r.sendSeconds)}/s (${fmt(r.sendSeconds, 2)} s) | ${fmt(percentile(r.latencies, 50))} / ${fmt(percentile(r.latencies, 99))} ms | ${cpu} | ${fmt(r.receiptMessages)} | ${fmt(r.redeliveredDispatches)} |`,
    );
  }
  for (const r of results) {
    const notes = [r.centre, r.failedEvents > 0 ? `${fmt(r.failedEvents)} sms.failed events` : '', r.warnings].filter((n) => n !== '');
    if (notes.length > 0) console.log(`\n${r.kind}: ${notes.join('; ')}`);
  }
  if (results.some((r) => !r.complete)) process.exitCode = 1;
}

await main();
exitSoon();
