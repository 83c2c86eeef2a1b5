/**
 * npm run bench:pipeline — end-to-end throughput of the delivery pipeline in the production shape: a private
 * PostgreSQL and a private nats-server, one node (NATS transport), the sandbox simulator connector and the merchant's
 * webhook receiver each in its own process (the receiver's URL as the merchant key's webhook_url). Sends K messages of 1 000 recipients each (numbers the simulator
 * delivers), then waits for every sms.delivered webhook. Prints a Markdown table for docs/performance.md, plus a
 * timeline of where the work stood each second (simulator, outbox, NATS consumers, webhooks) for profiling.
 * Measures and reports; asserts nothing.
 *
 * Environment:
 *   BENCH_MESSAGES            K, messages of 1 000 recipients (5)
 *   BENCH_STEP_DELAY_MS       simulator delay between two receipts of one dispatch (5)
 *   BENCH_TIMEOUT_S           give up waiting for the last webhook after this long (900)
 *   BENCH_WEBHOOK_PER_MERCHANT  override webhooks.concurrencyPerMerchant (the configured default otherwise)
 *   BENCH_WEBHOOK_CONCURRENCY   override webhooks.concurrency (the configured default otherwise)
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createGatewayNode } from '../../src/gateway-node.js';
import type { Config, DeepPartial } from '../../src/libraries/config/config.js';
import { openPostgresPersistence, type Persistence } from '../../src/libraries/persistence/persistence.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import { RECEIPTS_DURABLE, WEBHOOKS_DURABLE, connectorDurable } from '../../src/libraries/transport/nats-names.js';
import { STREAMS, type Transport } from '../../src/libraries/transport/transport-port.js';
import { seedMerchant, testConfig } from '../../test/helpers/gateway-fixture.js';
import { startTestNats } from '../../test/helpers/nats.js';
import { startTestPostgres } from '../../test/helpers/postgres.js';
import { cpuPerUnit, formatCpuPerUnit, sampleCpu } from './process-cpu.js';
import { startReceiver } from './bench-children.js';
import {
  API_ROOT,
  commandLine,
  startSimulatorProcess,
  countingLogger,
  deliverableNumbers,
  envNumber,
  exitSoon,
  fmt,
  machineLine,
  percentile,
  sleep,
} from './bench-common.js';

const MESSAGES = envNumber('BENCH_MESSAGES', 5);
const RECIPIENTS = 1_000;
const TOTAL = MESSAGES * RECIPIENTS;
const STEP_DELAY_MS = Number(process.env.BENCH_STEP_DELAY_MS ?? 5);
const TIMEOUT_S = envNumber('BENCH_TIMEOUT_S', 900);
/** Receipts the simulator sends for a delivered number: processing, accepted, enroute, delivered. */
const RECEIPTS_PER_RECIPIENT = 4;
const MANY = 10_000_000;

/** The durable consumers of the pipeline, by stream. */
const CONSUMERS = [
  { label: 'dispatch', stream: STREAMS.dispatch.name, durable: connectorDurable('simulator') },
  { label: 'receipts', stream: STREAMS.receipts.name, durable: RECEIPTS_DURABLE },
  { label: 'webhooks', stream: STREAMS.webhooks.name, durable: WEBHOOKS_DURABLE },
] as const;

interface Arrival {
  /** performance.now() of this process when the body had arrived at the receiver. */
  readonly at: number;
  readonly eventId: string;
  readonly type: string;
  readonly messageId: string;
  readonly recipientIndex: number | null;
}

/** Call counts and durations of one stage, from wrappers around the persistence and transport the node is given. */
class Timings {
  private readonly stages = new Map<string, number[]>();
  record(stage: string, ms: number): void {
    const list = this.stages.get(stage) ?? [];
    list.push(ms);
    this.stages.set(stage, list);
  }
  async time<T>(stage: string, work: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await work();
    } finally {
      this.record(stage, performance.now() - t0);
    }
  }
  rows(): string[] {
    return [...this.stages.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([stage, list]) => {
        const sorted = [...list].sort((a, b) => a - b);
        const mean = list.reduce((a, b) => a + b, 0) / list.length;
        return `| ${stage} | ${fmt(list.length)} | ${fmt(mean, 2)} | ${fmt(percentile(sorted, 50), 2)} | ${fmt(percentile(sorted, 99), 2)} |`;
      });
  }
}

const streamOf = (subject: string): string =>
  subject.startsWith('sms.dispatch.')
    ? 'dispatch'
    : subject.startsWith('sms.receipts.')
      ? 'receipts'
      : subject.startsWith('webhook.jobs.')
        ? 'webhook jobs'
        : subject;

/** The node's persistence with each journal append timed (the outbox and the rest untouched). */
function timedPersistence(persistence: Persistence, timings: Timings): Persistence {
  const journal = persistence.journal;
  return { ...persistence, journal: { ...journal, append: (append) => timings.time('journal append', () => journal.append(append)) } };
}

/** The node's transport with each publish and each consumer handler call timed, by stream and durable. */
function timedTransport(transport: Transport, timings: Timings): Transport {
  return {
    ...transport,
    publish: (subject, payload, options) =>
      timings.time(`publish → ${streamOf(subject)}`, () => transport.publish(subject, payload, options)),
    consume: (spec) =>
      transport.consume({ ...spec, handler: (delivery) => timings.time(`handler ${spec.durable}`, () => spec.handler(delivery)) }),
  };
}

interface ConsumerSample {
  readonly pending: number;
  readonly ackPending: number;
  readonly redelivered: number;
  /** Stream position delivered so far (the dispatch stream starts empty: dispatches the connector has taken). */
  readonly taken: number;
}

interface Sample {
  readonly t: number;
  readonly outboxBacklog: number;
  readonly consumers: Readonly<Record<string, ConsumerSample>>;
  readonly webhooks: Readonly<Record<string, number>>;
  readonly cpu: number;
}

async function consumerSamples(jsm: JetStreamManager): Promise<Record<string, ConsumerSample>> {
  const out: Record<string, ConsumerSample> = {};
  for (const c of CONSUMERS) {
    try {
      const info = await jsm.consumers.info(c.stream, c.durable);
      out[c.label] = {
        pending: info.num_pending,
        ackPending: info.num_ack_pending,
        redelivered: info.num_redelivered,
        taken: info.delivered.stream_seq,
      };
    } catch {
      out[c.label] = { pending: Number.NaN, ackPending: Number.NaN, redelivered: Number.NaN, taken: Number.NaN };
    }
  }
  return out;
}

async function main(): Promise<void> {
  const log = countingLogger();
  const pg = await startTestPostgres();
  // run newest first, also when starting fails half way
  const cleanups: (() => Promise<void>)[] = [() => pg.stop()];
  try {
    const nats = await startTestNats();
    cleanups.unshift(() => nats.stop());
    const url = await pg.createDatabase('bench_pipeline');
    const webhookOverrides: DeepPartial<Config['webhooks']> = {
      allowHttpLocalhost: true,
      ...(process.env.BENCH_WEBHOOK_PER_MERCHANT ? { concurrencyPerMerchant: envNumber('BENCH_WEBHOOK_PER_MERCHANT', 4) } : {}),
      ...(process.env.BENCH_WEBHOOK_CONCURRENCY ? { concurrency: envNumber('BENCH_WEBHOOK_CONCURRENCY', 64) } : {}),
    };
    const config = testConfig({
      database: { url },
      nats: { url: nats.url },
      simulator: { stepDelayMs: STEP_DELAY_MS },
      webhooks: webhookOverrides,
      rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
    });
    const persistence = await openPostgresPersistence({ url, poolSize: config.database.poolSize });
    cleanups.unshift(() => persistence.close());
    const transport = await connectNatsTransport({ servers: nats.url, name: 'bench-pipeline' });
    cleanups.unshift(() => transport.close());
    const timings = new Timings();
    const node = await createGatewayNode({
      config,
      persistence: timedPersistence(persistence, timings),
      transport: timedTransport(transport, timings),
      inProcessSimulator: false,
      logger: log.logger,
      announce: () => undefined,
    });
    const port = await node.start();
    cleanups.unshift(() => node.stop());
    const simulator = await startSimulatorProcess(nats.url, { SIMULATOR_STEP_DELAY_MS: String(STEP_DELAY_MS) });
    cleanups.unshift(() => simulator.stop());
    const monitor = await connect({ servers: nats.url, name: 'bench-monitor' });
    cleanups.unshift(() => monitor.close());
    const jsm = await jetstreamManager(monitor);

    // the merchant's endpoint
    const arrivals: Arrival[] = [];
    const delivered = new Map<string, number>(); // `${messageId}:${recipientIndex}` → first arrival
    let lastDeliveredAt = 0;
    let wake: (() => void) | null = null;
    const receiver = await startReceiver((webhook, at) => {
      const arrival: Arrival = { ...webhook, at };
      arrivals.push(arrival);
      if (arrival.type === 'sms.delivered') {
        const key = `${arrival.messageId}:${arrival.recipientIndex ?? -1}`;
        if (!delivered.has(key)) {
          delivered.set(key, arrival.at);
          lastDeliveredAt = arrival.at;
          if (delivered.size >= TOTAL) wake?.();
        }
      }
    });
    cleanups.unshift(() => receiver.close());

    const shop = await seedMerchant(node.gateway, { prepaid: '100000000', postpaid: '100000000', timezone: 'Africa/Kinshasa' });
    const set = await node.gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: receiver.url, username: null, password: null });
    if (!set) throw new Error('setWebhook failed');

    // timeline, each second
    const samples: Sample[] = [];
    let started = 0;
    let sampling = true;
    // read after awaits, where the main flow may have stopped it meanwhile
    const isSampling = (): boolean => sampling;
    const sampler = (async () => {
      while (isSampling()) {
        const before = process.cpuUsage();
        const t0 = performance.now();
        await sleep(1_000);
        if (!isSampling()) break;
        const used = process.cpuUsage(before);
        const byType: Record<string, number> = {};
        for (const a of arrivals) byType[a.type] = (byType[a.type] ?? 0) + 1;
        samples.push({
          t: (performance.now() - started) / 1000,
          outboxBacklog: await persistence.outbox.backlog(),
          consumers: await consumerSamples(jsm),
          webhooks: byType,
          cpu: (used.user + used.system) / 1000 / (performance.now() - t0),
        });
        const last = samples[samples.length - 1];
        process.stderr.write(`  t=${last?.t.toFixed(0) ?? '?'} s: ${fmt(delivered.size)} / ${fmt(TOTAL)} delivered webhooks\n`);
      }
    })();

    // submit every message at once, each POST /send timed from its start
    const api = `http://127.0.0.1:${port}${API_ROOT}`;
    const submittedAt = new Map<string, number>();
    started = performance.now();
    const finished = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const sendStatuses: number[] = [];
    const cpuBefore = sampleCpu([simulator.pid]);
    await Promise.all(
      Array.from({ length: MESSAGES }, async (_, k) => {
        const at = performance.now();
        const response = await fetch(`${api}/send`, {
          method: 'POST',
          headers: { 'app-key': shop.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ to: deliverableNumbers(RECIPIENTS, k * RECIPIENTS), message: `Bench message ${k}` }),
        });
        const body = (await response.json()) as { data?: { message_id?: string } };
        sendStatuses.push(response.status);
        const id = body.data?.message_id;
        if (response.status !== 201 || !id)
          throw new Error(`POST /send answered ${response.status}: ${JSON.stringify(body).slice(0, 500)}`);
        submittedAt.set(id, at);
      }),
    );
    const submitSeconds = (performance.now() - started) / 1000;
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
    const cpuAfter = sampleCpu([simulator.pid]);
    sampling = false;
    await sampler;

    // NATS messages actually stored per stream (publishes the stream kept; deduplicated ones are not stored)
    const streamMessages: Record<string, number> = {};
    for (const [label, s] of Object.entries(STREAMS)) streamMessages[label] = (await jsm.streams.info(s.name)).state.messages;
    const finalConsumers = await consumerSamples(jsm);

    // results
    const end = complete ? lastDeliveredAt : performance.now();
    const windowS = (end - started) / 1000;
    const inWindow = arrivals.filter((a) => a.at <= end);
    const byType = new Map<string, { deliveries: number; events: Set<string> }>();
    for (const a of inWindow) {
      const entry = byType.get(a.type) ?? { deliveries: 0, events: new Set<string>() };
      entry.deliveries++;
      entry.events.add(a.eventId);
      byType.set(a.type, entry);
    }
    const distinctEvents = [...byType.values()].reduce((n, e) => n + e.events.size, 0);
    const latencies: number[] = [];
    for (const [key, at] of delivered) {
      const submit = submittedAt.get(key.slice(0, key.lastIndexOf(':')));
      if (submit !== undefined) latencies.push(at - submit);
    }
    latencies.sort((a, b) => a - b);
    // first attempts travel in batches (up to 64 events to one URL per message), retries one per message: the
    // stream's own count is the number of job messages
    const webhookJobs = streamMessages.webhooks ?? 0;
    // receipts too travel in batches (SIMULATOR_RECEIPT_BATCH_MAX): the stream's count is the number of messages
    const receiptMessages = streamMessages.receipts ?? 0;
    const computedNats = TOTAL + receiptMessages + webhookJobs;
    const recipientsPerS = delivered.size / windowS;
    const cpu = formatCpuPerUnit(cpuPerUnit(cpuBefore, cpuAfter, delivered.size), { 'load generator': 'webhook receiver' });

    console.log(machineLine());
    console.log(commandLine('bench:pipeline'));
    console.log(
      `Shape: private PostgreSQL (pool ${config.database.poolSize}) + private nats-server, one node, simulator connector process (step ${STEP_DELAY_MS} ms), ` +
        `webhook receiver in a child process; webhooks.concurrency ${config.webhooks.concurrency}, concurrencyPerMerchant ${config.webhooks.concurrencyPerMerchant}.`,
    );
    console.log(
      `Sent ${fmt(MESSAGES)} × ${fmt(RECIPIENTS)} recipients (all POST /send answered within ${submitSeconds.toFixed(2)} s, statuses ${[...new Set(sendStatuses)].join(', ')}).`,
    );
    if (!complete)
      console.log(
        `**Incomplete:** ${fmt(delivered.size)} of ${fmt(TOTAL)} sms.delivered webhooks after ${fmt(TIMEOUT_S)} s; figures below are up to the timeout.`,
      );
    console.log('');
    console.log('| Measure | Result | Target |');
    console.log('|---|---:|---|');
    console.log(`| Recipients/s, first submit → last sms.delivered webhook (${fmt(windowS, 2)} s) | ${fmt(recipientsPerS)} | ≥ 1 000 |`);
    console.log(
      `| Webhook deliveries/s, all event types (${fmt(inWindow.length)} deliveries, ${fmt(distinctEvents)} distinct events) | ${fmt(inWindow.length / windowS)} | |`,
    );
    console.log(`| CPU ms per recipient by process | ${cpu} | |`);
    console.log(`| End-to-end latency per recipient, submit → sms.delivered arrival, p50 | ${fmt(percentile(latencies, 50))} ms | |`);
    console.log(`| End-to-end latency per recipient, p99 | ${fmt(percentile(latencies, 99))} ms | |`);
    console.log(
      `| NATS messages: ${fmt(TOTAL)} dispatch + ${fmt(receiptMessages)} receipt messages (for ${fmt(RECEIPTS_PER_RECIPIENT * TOTAL)} receipts) + ${fmt(webhookJobs)} webhook job messages (for ${fmt(inWindow.length)} deliveries) | ${fmt(computedNats)} | |`,
    );
    console.log(`| NATS messages/s (over the window) | ${fmt(computedNats / windowS)} | |`);
    console.log('');
    console.log(
      'Webhooks by type (deliveries / distinct events): ' +
        [...byType.entries()].map(([t, e]) => `${t} ${fmt(e.deliveries)} / ${fmt(e.events.size)}`).join(', '),
    );
    console.log(
      'Consumers at the end (pending / ack pending / redelivered): ' +
        Object.entries(finalConsumers)
          .map(([label, c]) => `${label} ${fmt(c.pending)} / ${fmt(c.ackPending)} / ${fmt(c.redelivered)}`)
          .join(', '),
    );
    console.log('');
    console.log('Stage timings (wall time per call, in-flight calls overlap; handler time includes the work it awaits):');
    console.log('');
    console.log('| Stage | Calls | Mean ms | p50 ms | p99 ms |');
    console.log('|---|---:|---:|---:|---:|');
    for (const row of timings.rows()) console.log(row);
    console.log('');
    console.log(
      'Timeline (each second: simulator dispatches taken, outbox backlog, NATS pending+ack-pending per consumer, webhooks arrived, CPU of this process):',
    );
    console.log('');
    console.log(
      '| t s | dispatches taken | outbox backlog | dispatch pend | receipts pend | webhook jobs pend (redelivered) | processing | sent | delivered | CPU |',
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const stride = Math.max(1, Math.ceil(samples.length / 40));
    samples.forEach((s, i) => {
      if (i % stride !== 0 && i !== samples.length - 1) return;
      const c = (label: string) => {
        const x = s.consumers[label];
        return x ? x.pending + x.ackPending : Number.NaN;
      };
      console.log(
        `| ${fmt(s.t, 1)} | ${fmt(s.consumers.dispatch?.taken ?? Number.NaN)} | ${fmt(s.outboxBacklog)} | ${fmt(c('dispatch'))} | ${fmt(c('receipts'))} | ${fmt(c('webhooks'))} (${fmt(s.consumers.webhooks?.redelivered ?? Number.NaN)}) | ` +
          `${fmt(s.webhooks['sms.processing'] ?? 0)} | ${fmt(s.webhooks['sms.sent'] ?? 0)} | ${fmt(s.webhooks['sms.delivered'] ?? 0)} | ${fmt(s.cpu * 100)} % |`,
      );
    });
    if (log.count() > 0) {
      console.log('');
      console.log(`The node logged ${fmt(log.count())} warnings or errors; first: ${log.first().join(' | ')}`);
    }
    if (!complete) process.exitCode = 1;
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
  }
}

await main();
exitSoon();
