/**
 * npm run bench:schedule — N scheduled messages due in the same minute: are they all dispatched, once, and how
 * late? A private PostgreSQL and a private nats-server (server mode), one node in this process (Agenda on the
 * journal's database, NATS transport, the in-process sandbox simulator as the carrier connector). Seeds a funded
 * merchant, submits N sends of one recipient each, all with the same `scheduled_dates` entry (a minute boundary a
 * little ahead, in the merchant's local time), waits until every dispatch has reached the connector, then reports
 * submit throughput, how long registration (outbox → Agenda job) took, and the lateness of each occurrence
 * behind its due instant at three points: Agenda starts the job, the message actor records the dispatch, the
 * connector takes the dispatch job. Fails (exit 1) unless every message was dispatched exactly once.
 *
 * Options (`npm run bench:schedule -- --messages 500`; each also as an environment variable):
 *   --messages N            scheduled messages, one recipient each (BENCH_MESSAGES, 10 000)
 *   --concurrency C         POST /send requests in flight (BENCH_CONCURRENCY, 16)
 *   --direct                call the send use case in-process instead of POST /send (BENCH_DIRECT=1)
 *   --lead-s S              the due minute is the first boundary at least S seconds after the submission starts
 *                           (BENCH_LEAD_S, default 30 + messages / 75: room for ~75 sends/s on a busy 2-core machine)
 *   --process-every-ms MS   Agenda's processEvery (SCHEDULER_PROCESS_EVERY_MS; default: config/default.json's)
 *   --timezone TZ           the merchant's timezone (BENCH_TIMEZONE, Africa/Kinshasa)
 *   --timeout-s S           give up this long after the due instant (BENCH_TIMEOUT_S, 300)
 *   --quiet-s S             after the last dispatch, watch this long for duplicates (BENCH_QUIET_S, 3)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import moment from 'moment-timezone';
import pg from 'pg';
import { createGatewayNode } from '../../src/gateway-node.js';
import type { Config } from '../../src/libraries/config/config.js';
import { createMetrics, type Metrics } from '../../src/libraries/observability/metrics.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { connectNatsTransport } from '../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../src/libraries/transport/transport-port.js';
import { OCCURRENCE_JOB } from '../../src/entry-points/jobs/occurrence-scheduler.js';
import { seedMerchant, testConfig } from '../../test/helpers/gateway-fixture.js';
import { startTestNats } from '../../test/helpers/nats.js';
import { startTestPostgres } from '../../test/helpers/postgres.js';
import {
  API_ROOT,
  countingLogger,
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

// ---------------------------------------------------------------------------------------------------------------
// Options

const USAGE =
  'usage: npm run bench:schedule -- [--messages N] [--concurrency C] [--direct] [--lead-s S] [--process-every-ms MS] [--timezone TZ] [--timeout-s S] [--quiet-s S]';

const OPTION_SPECS: readonly BenchOptionSpec[] = [
  { flag: 'messages', env: 'BENCH_MESSAGES', kind: 'number' },
  { flag: 'concurrency', env: 'BENCH_CONCURRENCY', kind: 'number' },
  { flag: 'direct', env: 'BENCH_DIRECT', kind: 'boolean' },
  { flag: 'lead-s', env: 'BENCH_LEAD_S', kind: 'number' },
  { flag: 'process-every-ms', env: 'SCHEDULER_PROCESS_EVERY_MS', kind: 'number' },
  { flag: 'timezone', env: 'BENCH_TIMEZONE', kind: 'string' },
  { flag: 'timeout-s', env: 'BENCH_TIMEOUT_S', kind: 'number' },
  { flag: 'quiet-s', env: 'BENCH_QUIET_S', kind: 'number' },
];

const given = parseBenchOptions(process.argv.slice(2), OPTION_SPECS, USAGE);

function numberOption(flag: string, fallback: number): number {
  const raw = given.get(flag);
  if (raw === undefined) return fallback;
  return positiveOption(flag, raw);
}

const flagOption = (flag: string): boolean => {
  const raw = given.get(flag);
  return raw !== undefined && raw !== '0' && raw !== 'false';
};

/** config/default.json's scheduling.processEveryMs: the production default (the test profile lowers it to 200). */
function productionProcessEveryMs(): number {
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/default.json');
  const json = JSON.parse(readFileSync(file, 'utf8')) as { scheduling?: { processEveryMs?: unknown } };
  const value = json.scheduling?.processEveryMs;
  return typeof value === 'number' ? value : 1_000;
}

const MESSAGES = Math.floor(numberOption('messages', 10_000));
const CONCURRENCY = Math.floor(numberOption('concurrency', 16));
const DIRECT = flagOption('direct');
const LEAD_S = numberOption('lead-s', 30 + MESSAGES / 75);
const PROCESS_EVERY_MS = Math.floor(numberOption('process-every-ms', productionProcessEveryMs()));
const TIMEZONE = given.get('timezone') ?? 'Africa/Kinshasa';
const TIMEOUT_S = numberOption('timeout-s', 300);
const QUIET_S = numberOption('quiet-s', 3);
const MANY = 10_000_000;
const MINUTE = 60_000;
/** The simulator's durable consumer: a delivery to it is a dispatch reaching the carrier connector. */
const CONNECTOR_DURABLE = 'connector-simulator';

/** Wall-clock ms with sub-ms resolution (same epoch as Date.now(), which the due instants use). */
const wallNow = (): number => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------------------------
// Cleanup: newest first, also on failure and on Ctrl-C

const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | null = null;

function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length > 0) {
      const cleanup = cleanups.shift();
      await cleanup?.().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
    }
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
// Instruments

interface Arrival {
  readonly at: number;
  readonly deliveryCount: number;
}

/**
 * The node's transport with the connector's deliveries timed: every delivery to the simulator's durable consumer is
 * recorded (dispatch id → arrivals) before the connector handles it.
 */
function instrumentedTransport(transport: Transport, arrivals: Map<string, Arrival[]>): Transport {
  return {
    ...transport,
    consume: (spec) => {
      if (spec.durable !== CONNECTOR_DURABLE) return transport.consume(spec);
      return transport.consume({
        ...spec,
        handler: (delivery) => {
          const at = wallNow();
          const payload = delivery.payload as { dispatch_id?: unknown } | null;
          const id = typeof payload?.dispatch_id === 'string' ? payload.dispatch_id : `?${delivery.id}`;
          const list = arrivals.get(id) ?? [];
          list.push({ at, deliveryCount: delivery.deliveryCount });
          arrivals.set(id, list);
          return spec.handler(delivery);
        },
      });
    },
  };
}

/** The node's metrics, with the scheduler's own lag samples (sms_gateway_scheduler_lag_seconds) kept for the report. */
function recordingMetrics(lagSamples: number[]): Metrics {
  const metrics = createMetrics({ defaultMetrics: false });
  return {
    ...metrics,
    schedulerTick(lagSeconds) {
      lagSamples.push(lagSeconds * 1000);
      metrics.schedulerTick(lagSeconds);
    },
  };
}

interface JobCounts {
  readonly total: number;
  readonly pending: number;
  readonly locked: number;
  readonly finished: number;
  readonly failed: number;
}

async function jobCounts(monitor: pg.Pool): Promise<JobCounts> {
  const { rows } = await monitor.query<JobCounts>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE next_run_at IS NOT NULL)::int AS pending,
            count(*) FILTER (WHERE locked_at IS NOT NULL)::int AS locked,
            count(*) FILTER (WHERE last_finished_at IS NOT NULL)::int AS finished,
            count(*) FILTER (WHERE failed_at IS NOT NULL OR fail_count > 0)::int AS failed
     FROM agenda_jobs WHERE name = $1`,
    [OCCURRENCE_JOB],
  );
  return rows[0] ?? { total: 0, pending: 0, locked: 0, finished: 0, failed: 0 };
}

interface Sample {
  /** Seconds relative to the due instant (negative before it). */
  readonly t: number;
  readonly jobs: JobCounts;
  readonly connector: number;
  readonly outbox: number;
}

interface Stats {
  readonly count: number;
  readonly min: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

function stats(values: readonly number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

const ms = (n: number): string => (Number.isFinite(n) ? `${fmt(n)} ms` : 'n/a');
const statsRow = (label: string, s: Stats): string =>
  `| ${label} | ${fmt(s.count)} | ${ms(s.min)} | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.p99)} | ${ms(s.max)} |`;

/** The date and time a merchant in `timezone` writes for `instant`. */
function localEntry(instant: number, timezone: string): { date: string; time: string } {
  const local = moment.tz(instant, timezone);
  return { date: local.format('YYYY-MM-DD'), time: local.format('HH:mm') };
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!moment.tz.zone(TIMEZONE)) throw new Error(`unknown timezone ${TIMEZONE}`);
  const log = countingLogger();
  process.stderr.write('starting PostgreSQL and nats-server…\n');
  const pgServer = await startTestPostgres();
  cleanups.unshift(() => pgServer.stop());
  const nats = await startTestNats();
  cleanups.unshift(() => nats.stop());
  const url = await pgServer.createDatabase('bench_schedule');
  const config: Config = testConfig({
    database: { url },
    nats: { url: nats.url },
    scheduling: { processEveryMs: PROCESS_EVERY_MS },
    rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
  });
  const persistence = await openPostgresPersistence({ url, poolSize: config.database.poolSize });
  cleanups.unshift(() => persistence.close());
  const natsTransport = await connectNatsTransport({ servers: nats.url, name: 'bench-schedule' });
  cleanups.unshift(() => natsTransport.close());
  const arrivals = new Map<string, Arrival[]>();
  const lagSamples: number[] = [];
  const node = await createGatewayNode({
    config,
    persistence,
    transport: instrumentedTransport(natsTransport, arrivals),
    inProcessSimulator: true,
    logger: log.logger,
    metrics: recordingMetrics(lagSamples),
    announce: () => undefined,
  });
  const port = await node.start();
  cleanups.unshift(() => node.stop());
  const simulator = node.simulator;
  if (!simulator) throw new Error('the node has no in-process simulator');
  // reads of Agenda's table and the journal, outside the node's pool
  const monitor = new pg.Pool({ connectionString: url, max: 2 });
  cleanups.unshift(() => monitor.end());

  const shop = await seedMerchant(node.gateway, { prepaid: '100000000', postpaid: '100000000', timezone: TIMEZONE });
  const api = `http://127.0.0.1:${port}${API_ROOT}`;
  const numbers = deliverableNumbers(MESSAGES);

  // the due instant: the first minute boundary at least LEAD_S ahead
  const submitStart = wallNow();
  const due = Math.ceil((Date.now() + LEAD_S * 1000) / MINUTE) * MINUTE;
  const entry = localEntry(due, TIMEZONE);
  process.stderr.write(
    `submitting ${fmt(MESSAGES)} scheduled sends due ${entry.date} ${entry.time} ${TIMEZONE} (${new Date(due).toISOString()}, in ${fmt((due - Date.now()) / 1000, 1)} s)…\n`,
  );

  // submit: CONCURRENCY workers, each send timed from its start
  const submitLatencies: number[] = [];
  const messageIds = new Set<string>();
  const failures: string[] = [];
  let next = 0;
  const submitOne = async (k: number): Promise<void> => {
    const body = { to: [numbers[k]], message: `Scheduled bench ${k}`, sending_type: 'scheduled', scheduled_dates: [entry] };
    const t0 = wallNow();
    let status: number;
    let id: string | undefined;
    let detail = '';
    if (DIRECT) {
      const result = await node.gateway.useCases.sendMessage({
        merchantId: shop.merchantId,
        keyId: shop.keyId,
        body,
        idempotencyKey: null,
      });
      status = result.ok ? 201 : 400;
      id = result.ok ? result.value.receipt.message_id : undefined;
      if (!result.ok) detail = JSON.stringify(result).slice(0, 300);
    } else {
      const response = await fetch(`${api}/send`, {
        method: 'POST',
        headers: { 'app-key': shop.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      status = response.status;
      id = status === 201 ? (JSON.parse(text) as { data?: { message_id?: string } }).data?.message_id : undefined;
      detail = text.slice(0, 300);
    }
    submitLatencies.push(wallNow() - t0);
    if (status !== 201 || id === undefined) failures.push(`send ${k}: ${status} ${detail}`);
    else messageIds.add(id);
  };
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, MESSAGES) }, async () => {
      while (next < MESSAGES && failures.length === 0) {
        const k = next++;
        await submitOne(k);
      }
    }),
  );
  const submitEnd = wallNow();
  if (failures.length > 0) {
    throw new Error(
      `submission failed (${failures.length} sends rejected${Date.now() >= due ? '; the due minute passed during the submission, raise --lead-s' : ''}): ${failures.slice(0, 3).join(' | ')}`,
    );
  }
  const submitSeconds = (submitEnd - submitStart) / 1000;
  process.stderr.write(
    `submitted in ${fmt(submitSeconds, 1)} s (${fmt(MESSAGES / submitSeconds)} sends/s); ${fmt((due - Date.now()) / 1000, 1)} s until due\n`,
  );

  // watch: Agenda's jobs, the connector, the outbox, every 500 ms until every dispatch arrived (or the timeout)
  const samples: Sample[] = [];
  let registeredAt: number | null = null;
  const dispatchIds = [...messageIds].map((id) => `${id}:0:0`);
  const arrived = (): number => dispatchIds.reduce((n, id) => n + (arrivals.has(id) ? 1 : 0), 0);
  const deadline = due + TIMEOUT_S * 1000;
  let lastProgress = 0;
  for (;;) {
    const jobs = await jobCounts(monitor);
    const connector = arrived();
    samples.push({ t: (Date.now() - due) / 1000, jobs, connector, outbox: await persistence.outbox.backlog() });
    if (registeredAt === null && jobs.total >= MESSAGES) registeredAt = wallNow();
    if (connector >= MESSAGES) break;
    if (Date.now() > deadline) break;
    if (Date.now() - lastProgress > 5_000) {
      lastProgress = Date.now();
      const t = (Date.now() - due) / 1000;
      process.stderr.write(
        `  ${t < 0 ? `T${fmt(t, 1)}` : `T+${fmt(t, 1)}`} s: ${fmt(jobs.total)} jobs (${fmt(jobs.finished)} finished, ${fmt(jobs.locked)} locked), ${fmt(connector)} / ${fmt(MESSAGES)} at the connector\n`,
      );
    }
    await sleep(500);
  }
  const complete = arrived() >= MESSAGES;
  // late duplicates (a second run of a job, a redelivery) would arrive after the last first arrival
  if (complete) await sleep(QUIET_S * 1000);
  const finalJobs = await jobCounts(monitor);
  const seenByConnector = simulator.dispatchesSeen();

  // ---- what each occurrence went through
  const jobRows = (
    await monitor.query<{ message_id: string; last_run: number | null; runs_failed: number | null }>(
      `SELECT data->>'messageId' AS message_id, (extract(epoch FROM last_run_at) * 1000)::float8 AS last_run, fail_count AS runs_failed
       FROM agenda_jobs WHERE name = $1`,
      [OCCURRENCE_JOB],
    )
  ).rows;
  const actorRows = (
    await monitor.query<{ message_id: string; occurrence: number; at: number }>(
      `SELECT substr(j.key, 9) AS message_id, (e->>'occurrence')::int AS occurrence, (e->>'at')::float8 AS at
       FROM journal j, jsonb_array_elements(j.events) e
       WHERE j.key LIKE 'message:%' AND e->>'type' = 'occurrence_dispatched'`,
    )
  ).rows;
  const jobsPerMessage = new Map<string, number>();
  for (const row of jobRows) jobsPerMessage.set(row.message_id, (jobsPerMessage.get(row.message_id) ?? 0) + 1);
  const actorDispatches = new Map<string, number>();
  for (const row of actorRows)
    actorDispatches.set(`${row.message_id}:${row.occurrence}`, (actorDispatches.get(`${row.message_id}:${row.occurrence}`) ?? 0) + 1);

  // ---- exactly once
  const problems: string[] = [];
  const missing = dispatchIds.filter((id) => !arrivals.has(id));
  if (missing.length > 0)
    problems.push(
      `${fmt(missing.length)} of ${fmt(MESSAGES)} dispatches never reached the connector (first: ${missing.slice(0, 3).join(', ')})`,
    );
  const expected = new Set(dispatchIds);
  const unexpected = [...arrivals.keys()].filter((id) => !expected.has(id));
  if (unexpected.length > 0)
    problems.push(
      `${fmt(unexpected.length)} dispatch ids at the connector that no submitted message should produce (first: ${unexpected.slice(0, 3).join(', ')})`,
    );
  const redelivered = [...arrivals].filter(([, list]) => list.length > 1);
  if (redelivered.length > 0) {
    problems.push(
      `${fmt(redelivered.length)} dispatch ids reached the connector more than once (first: ${redelivered
        .slice(0, 3)
        .map(([id, list]) => `${id} ×${list.length}`)
        .join(', ')})`,
    );
  }
  const seenTwice = [...seenByConnector].filter(([, count]) => count !== 1);
  if (seenTwice.length > 0)
    problems.push(`the connector's own count (dispatchesSeen) shows ${fmt(seenTwice.length)} ids delivered more than once`);
  if (complete && seenByConnector.size !== MESSAGES)
    problems.push(`the connector's dispatchesSeen() holds ${fmt(seenByConnector.size)} ids, expected ${fmt(MESSAGES)}`);
  const twiceByActor = [...actorDispatches].filter(([, count]) => count !== 1);
  if (twiceByActor.length > 0)
    problems.push(`${fmt(twiceByActor.length)} occurrences recorded as dispatched more than once in the journal`);
  if (actorDispatches.size !== MESSAGES)
    problems.push(`${fmt(actorDispatches.size)} occurrences recorded as dispatched in the journal, expected ${fmt(MESSAGES)}`);
  const jobDuplicates = [...jobsPerMessage].filter(([, n]) => n !== 1);
  if (jobDuplicates.length > 0 || jobsPerMessage.size !== MESSAGES)
    problems.push(
      `Agenda holds ${fmt(jobRows.length)} jobs for ${fmt(jobsPerMessage.size)} messages, expected one each for ${fmt(MESSAGES)}`,
    );
  const early = [...arrivals.values()].filter((list) => (list[0]?.at ?? Infinity) < due);
  if (early.length > 0) problems.push(`${fmt(early.length)} dispatches reached the connector before their due instant`);

  // ---- lateness behind the due instant, per occurrence
  const connectorLateness = dispatchIds.flatMap((id) => {
    const first = arrivals.get(id)?.[0];
    return first ? [first.at - due] : [];
  });
  const actorLateness = actorRows.map((row) => row.at - due);
  const agendaLateness = jobRows.flatMap((row) => (row.last_run === null ? [] : [row.last_run - due]));
  const connectorStats = stats(connectorLateness);
  const runsFailed = jobRows.reduce((n, row) => n + (row.runs_failed ?? 0), 0);
  const registrationLeadS = registeredAt === null ? null : (due - registeredAt) / 1000;

  // ---- report
  const settings = {
    processEveryMs: config.scheduling.processEveryMs,
    outboxPollIntervalMs: config.outbox.pollIntervalMs,
    agendaConcurrency: 64,
    databasePoolSize: config.database.poolSize,
    simulatorStepDelayMs: config.simulator.stepDelayMs,
    timezone: TIMEZONE,
    submitMode: DIRECT ? 'use case in-process' : `POST /send, ${CONCURRENCY} concurrent HTTP clients`,
  };
  const submit = stats(submitLatencies);
  console.log(machineLine());
  console.log(`Command: \`npm run bench:schedule -- ${process.argv.slice(2).join(' ')}\``.replace(/ -- `$/, '`'));
  console.log(
    `Shape: private PostgreSQL + private nats-server (server mode), one node in this process (Agenda on PostgreSQL with LISTEN/NOTIFY, ` +
      `the in-process sandbox simulator as the carrier connector). The machine may be shared with other work.`,
  );
  console.log(
    `Settings: scheduling.processEveryMs ${fmt(settings.processEveryMs)} ms (SCHEDULER_PROCESS_EVERY_MS), outbox.pollIntervalMs ${fmt(settings.outboxPollIntervalMs)} ms, ` +
      `Agenda: 3 instances on PostgreSQL (the main one and 2 extra lockers, SCHEDULER_EXTRA_LOCKERS), each with concurrency 64 and lock limit 500 (occurrence-scheduler.ts), database pool ${settings.databasePoolSize}, simulator step ${settings.simulatorStepDelayMs} ms.`,
  );
  console.log(
    `Submitted ${fmt(MESSAGES)} scheduled sends (1 recipient each) via ${settings.submitMode}, all due ${entry.date} ${entry.time} ${TIMEZONE} = ${new Date(due).toISOString()}.`,
  );
  console.log('');
  console.log('| Submission | Result |');
  console.log('|---|---:|');
  console.log(`| Wall time, first send → last 201 | ${fmt(submitSeconds, 2)} s |`);
  console.log(`| Throughput | ${fmt(MESSAGES / submitSeconds)} sends/s |`);
  console.log(`| Latency per send p50 / p95 / p99 / max | ${ms(submit.p50)} / ${ms(submit.p95)} / ${ms(submit.p99)} / ${ms(submit.max)} |`);
  console.log(
    `| All ${fmt(MESSAGES)} Agenda jobs registered (outbox → Agenda, seen every 0.5 s) | ${
      registeredAt === null || registrationLeadS === null
        ? 'never'
        : `${fmt((registeredAt - submitEnd) / 1000, 1)} s after the last 201, ${registrationLeadS >= 0 ? `${fmt(registrationLeadS, 1)} s before due` : `**${fmt(-registrationLeadS, 1)} s after due** (the lateness below includes it)`}`
    } |`,
  );
  console.log('');
  if (!complete)
    console.log(
      `**Incomplete:** ${fmt(arrived())} of ${fmt(MESSAGES)} dispatches reached the connector within ${fmt(TIMEOUT_S)} s of the due instant.`,
    );
  console.log('| Dispatch, measured from the due instant | Result |');
  console.log('|---|---:|');
  console.log(`| First dispatch at the connector | ${ms(connectorStats.min)} after due |`);
  console.log(`| Last dispatch at the connector | ${ms(connectorStats.max)} after due |`);
  console.log(
    `| Dispatch rate, first → last at the connector | ${fmt(connectorStats.count / Math.max(0.001, (connectorStats.max - connectorStats.min) / 1000))} /s |`,
  );
  console.log('');
  console.log('Lateness per occurrence behind its due instant, at each stage:');
  console.log('');
  console.log('| Stage | Occurrences | min | p50 | p95 | p99 | max |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  console.log(statsRow('Agenda starts the job (agenda_jobs.last_run_at)', stats(agendaLateness)));
  console.log(statsRow('Message actor records the dispatch (journal occurrence_dispatched.at)', stats(actorLateness)));
  console.log(statsRow('**Carrier connector takes the dispatch job**', connectorStats));
  console.log(statsRow('For comparison: sms_gateway_scheduler_lag_seconds samples the node reported', stats(lagSamples)));
  console.log('');
  console.log(
    'Between the stages: Agenda locks a due job then runs it (a `dispatch_due` ask to the message actor, which journals the dispatch with its outbox entry); ' +
      'the outbox relay then publishes the `carrier.dispatch` entries to NATS (batches of 200, woken by appends and polled every outbox.pollIntervalMs) and the connector consumes them.',
  );
  console.log('');
  console.log(
    `Agenda jobs at the end: ${fmt(finalJobs.total)} total, ${fmt(finalJobs.finished)} finished, ${fmt(finalJobs.pending)} with a next run, ${fmt(finalJobs.locked)} locked, ` +
      `${fmt(finalJobs.failed)} failed (fail_count sum ${fmt(runsFailed)}).`,
  );
  console.log(
    `Exactly once: ${fmt(arrivals.size)} distinct dispatch ids at the connector (${fmt([...arrivals.values()].reduce((n, l) => n + l.length, 0))} deliveries), ` +
      `dispatchesSeen() ${fmt(seenByConnector.size)} ids, ${fmt(actorDispatches.size)} occurrences dispatched in the journal; watched ${fmt(QUIET_S)} s more for duplicates. ` +
      (problems.length === 0 ? 'OK.' : `**FAILED** (below).`),
  );
  console.log('');
  console.log(
    'Timeline (T = seconds from the due instant; Agenda jobs total / finished / locked; dispatches at the connector; outbox backlog):',
  );
  console.log('');
  console.log('| T s | jobs | finished | locked | at connector | outbox |');
  console.log('|---:|---:|---:|---:|---:|---:|');
  const interesting = samples.filter((s, i) => {
    const prev = samples[i - 1];
    return (
      i === 0 ||
      i === samples.length - 1 ||
      !prev ||
      prev.jobs.total !== s.jobs.total ||
      prev.connector !== s.connector ||
      prev.jobs.locked !== s.jobs.locked
    );
  });
  const stride = Math.max(1, Math.ceil(interesting.length / 40));
  interesting.forEach((s, i) => {
    if (i % stride !== 0 && i !== interesting.length - 1) return;
    console.log(
      `| ${fmt(s.t, 1)} | ${fmt(s.jobs.total)} | ${fmt(s.jobs.finished)} | ${fmt(s.jobs.locked)} | ${fmt(s.connector)} | ${fmt(s.outbox)} |`,
    );
  });
  if (log.count() > 0) {
    console.log('');
    console.log(`The node logged ${fmt(log.count())} warnings or errors; first: ${log.first().join(' | ')}`);
  }
  if (problems.length > 0) {
    console.log('');
    console.log('FAILED: not every message was dispatched exactly once:');
    for (const problem of problems) console.log(`  - ${problem}`);
  }
  const round = (n: number): number | null => (Number.isFinite(n) ? Math.round(n * 10) / 10 : null);
  const roundStats = (s: Stats) => ({
    count: s.count,
    min: round(s.min),
    p50: round(s.p50),
    p95: round(s.p95),
    p99: round(s.p99),
    max: round(s.max),
  });
  console.log('');
  console.log(
    JSON.stringify({
      bench: 'schedule',
      ok: problems.length === 0 && complete,
      messages: MESSAGES,
      dueAt: new Date(due).toISOString(),
      settings,
      submit: {
        seconds: round(submitSeconds),
        perSecond: round(MESSAGES / submitSeconds),
        latencyMs: roundStats(submit),
        registeredBeforeDueS: registrationLeadS === null ? null : round(registrationLeadS),
      },
      dispatch: {
        complete,
        firstAfterDueMs: round(connectorStats.min),
        lastAfterDueMs: round(connectorStats.max),
        latenessMs: roundStats(connectorStats),
        agendaStartLatenessMs: roundStats(stats(agendaLateness)),
        actorLatenessMs: roundStats(stats(actorLateness)),
        schedulerLagMetricMs: roundStats(stats(lagSamples)),
      },
      agendaJobs: finalJobs,
      exactlyOnce: problems.length === 0,
      problems,
      nodeWarnings: log.count(),
    }),
  );
  if (problems.length > 0 || !complete) process.exitCode = 1;
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  if (!interrupted.value) console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
} finally {
  await cleanUp();
}
exitSoon();
