/**
 * One chaos run: a private PostgreSQL and nats-server, gateway nodes in server mode (child processes running
 * src/main.ts), the simulator connector process and a webhook receiver (test/helpers/cluster.ts starts them); a mixed
 * load (chaos-load.ts) through every node while the faults of the profile happen one after the other; after each,
 * the time until the cluster serves again; then, once the load has ended and its scheduled sends have fallen due,
 * the verifications of chaos-verify.ts over the journal, the API, the connector's log and the webhooks.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { journalDispatchesOf, startCluster, type ClusterNode, type TestCluster } from '../../test/helpers/cluster.js';
import { seedMerchant } from '../../test/helpers/gateway-fixture.js';
import { startTestPostgres, type TestPostgres } from '../../test/helpers/postgres.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import { cyclic, startLoad, type Load, type LoadMerchant, type LoadTarget } from './chaos-load.js';
import type { ChaosProfile, FaultName } from './chaos-profiles.js';
import {
  missingTerminalEvents,
  verifyAll,
  type Evidence,
  type FaultRecord,
  type JournalCancel,
  type JournalMessage,
  type JournalMoney,
  type NodeDeath,
  type ReceivedWebhook,
  type StatusView,
  type VerificationResult,
} from './chaos-verify.js';

export interface ChaosOptions {
  readonly profile: ChaosProfile;
  /** Progress lines (stderr in the script, nothing in the test). */
  readonly log?: (line: string) => void;
  /**
   * Where the run keeps its evidence: the whole log of every process (each node, the simulator, nats-server,
   * PostgreSQL), kept whatever the outcome. Without it, a new directory under the OS temp dir, removed when every
   * verification held and kept when one failed.
   */
  readonly keepDir?: string;
}

export interface ChaosResult extends VerificationResult {
  readonly profile: ChaosProfile;
  readonly runId: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly faults: readonly FaultRecord[];
  readonly deaths: readonly NodeDeath[];
  readonly evidence: Evidence;
  /** The run's logs, or null when they were removed (every verification held and no directory was asked for). */
  readonly logDir: string | null;
}

const FUNDING = '1000';
const FUNDING_UNITS = 1000 * 10_000;
const TIMEZONE = 'Africa/Kinshasa';

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** The nodes' settings: the profile's lease and failover, limits that do not get in the way of the load. */
function nodeEnv(profile: ChaosProfile): Record<string, string> {
  return {
    RATE_LIMIT_SEND: '10000000',
    RATE_LIMIT_STATUS: '10000000',
    RATE_LIMIT_BALANCE: '10000000',
    RATE_LIMIT_MANAGEMENT: '10000000',
    SUSPEND_AFTER_REJECTIONS: '10000000',
    CLUSTER_LEASE_TTL_MS: String(profile.leaseTtlMs),
    CLUSTER_FAILOVER_DEADLINE_MS: String(profile.failoverDeadlineMs),
    RECEIPT_TIMEOUT_MS: String(profile.receiptTimeoutMs),
  };
}

/** A node's fatal log line: it crashed and is stopping (gracefully, for up to SHUTDOWN_GRACE_MS) to exit 1. */
const crashLine = (output: string): string | undefined => output.split('\n').find((line) => line.includes('"level":60'));

/** The lines of a node's log that say why it went (the fatal line, else errors), shortened. */
function whyItWent(output: string): string {
  const fatal = crashLine(output);
  if (fatal) {
    try {
      const line = JSON.parse(fatal) as { msg?: string; reason?: string; err?: { type?: string; message?: string; stack?: string } };
      const frame = line.err?.stack
        ?.split('\n')
        .find((l) => l.includes('/src/') || l.includes('node_modules/'))
        ?.trim();
      return `${line.msg ?? ''} (${line.reason ?? ''}): ${line.err?.type ?? ''}: ${line.err?.message ?? ''}${frame ? ` ${frame}` : ''}`;
    } catch {
      return fatal.slice(0, 500);
    }
  }
  const lines = output.split('\n').filter((line) => /"level":50|uncaught|Error:/i.test(line));
  return (lines.slice(-2).join(' | ') || output.slice(-400)).slice(0, 700);
}

async function healthOk(node: ClusterNode): Promise<boolean> {
  try {
    const response = await fetch(`${node.api}/health`, { signal: AbortSignal.timeout(2_000) });
    const body = (await response.json()) as { data?: { status?: string } };
    return response.status === 200 && body.data?.status === 'ok';
  } catch {
    return false;
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const { profile } = options;
  const log = options.log ?? (() => undefined);
  const runId = randomUUID().slice(0, 8);
  const startedAt = Date.now();
  const logDir =
    options.keepDir === undefined
      ? mkdtempSync(path.join(tmpdir(), `gw-chaos-${runId}-`))
      : path.resolve(options.keepDir, `chaos-${runId}`);
  mkdirSync(logDir, { recursive: true });
  let passed = false;
  let postgres: TestPostgres | null = null;
  let cluster: TestCluster | null = null;
  let receiver: WebhookReceiver | null = null;
  let load: Load | null = null;
  try {
    log(`chaos ${runId}: profile ${profile.name}; faults ${profile.faults.join(', ')} × ${profile.rounds}`);
    log(`logs of every process: ${logDir}`);
    postgres = await startTestPostgres({ logFile: path.join(logDir, 'postgres.log') });
    const pg = postgres;
    cluster = await startCluster({
      nodes: profile.nodes,
      postgres: pg,
      leaseTtlMs: profile.leaseTtlMs,
      failoverDeadlineMs: profile.failoverDeadlineMs,
      env: nodeEnv(profile),
      logDir,
    });
    const c = cluster;
    log(`cluster up: ${c.nodes.map((n) => `${n.id} ${n.baseUrl}`).join(', ')}; postgres :${pg.port}, nats :${c.nats.port}`);
    receiver = await startWebhookReceiver();
    const merchants: LoadMerchant[] = [];
    const funding = new Map<string, number>();
    for (let i = 0; i < profile.merchants; i++) {
      const seeded = await seedMerchant(c.operator, { name: `Chaos shop ${i + 1}`, prepaid: FUNDING, timezone: TIMEZONE });
      if (!(await c.operator.useCases.apiKeys.setWebhook(seeded.keyId, { url: receiver.url, username: 'chaos', password: 'chaos' })))
        throw new Error('webhook not set');
      merchants.push({ merchantId: seeded.merchantId, apiKey: seeded.apiKey, timezone: TIMEZONE });
      funding.set(seeded.merchantId, FUNDING_UNITS);
    }

    // The nodes the run stopped on purpose; any other exit is a death, and the node is started again (an
    // orchestrator would) so the run goes on.
    const expectedExits = new Set<ClusterNode>();
    const deaths: NodeDeath[] = [];
    let phase = 'start';
    const restarting = new Set<string>();
    const crashed = new Set<ClusterNode>();
    const watchDeaths = async (): Promise<void> => {
      for (const node of c.nodes) {
        if (expectedExits.has(node) || c.node(node.id) !== node) continue;
        // a crash is logged at once; the exit follows the graceful stop
        if (!crashed.has(node) && crashLine(node.output())) {
          crashed.add(node);
          deaths.push({ node: node.id, during: phase, exit: 'crashed (logged fatal)', evidence: whyItWent(node.output()) });
          log(`  ${node.id} crashed during ${phase}: ${whyItWent(node.output()).slice(0, 300)}`);
        }
        if (node.state() !== 'exited' || restarting.has(node.id)) continue;
        const status = await node.exited;
        if (!crashed.has(node)) {
          crashed.add(node);
          deaths.push({
            node: node.id,
            during: phase,
            exit: status.signal ?? `code ${String(status.code)}`,
            evidence: whyItWent(node.output()),
          });
        }
        log(`  ${node.id} exited during ${phase} (${status.signal ?? String(status.code)}); starting it again`);
        restarting.add(node.id);
        void c
          .startNode(node.id, nodeEnv(profile))
          .catch((error: unknown) => {
            log(`  ${node.id} did not start again: ${String(error).slice(0, 300)}`);
          })
          .finally(() => restarting.delete(node.id));
      }
    };
    const watch = { on: true };
    const watcher = (async () => {
      while (watch.on) {
        await watchDeaths();
        await sleep(250);
      }
    })();

    // how many nodes should be serving (one fewer between a node-kill and its restart)
    let expectedNodes = profile.nodes;
    const targets = (): LoadTarget[] =>
      c.nodes.filter((n) => n.state() === 'running' || n.state() === 'paused').map((n) => ({ id: n.id, api: n.api }));
    load = startLoad({
      runId,
      merchants,
      ratePerSecond: profile.ratePerSecond,
      targets,
      scheduleLeadMs: profile.scheduleLeadMs,
      requestTimeoutMs: profile.requestTimeoutMs,
      retryForMs: profile.recoveryWindowMs,
    });
    const records = load.records;
    await sleep(profile.steadyMs);

    let simulatorProcess = 1;
    const killedSimulators = new Set<number>();
    const faults: FaultRecord[] = [];
    const plan: { name: FaultName; round: number }[] = [];
    for (let round = 1; round <= profile.rounds; round++) for (const name of profile.faults) plan.push({ name, round });

    const victim = (n: number): ClusterNode => {
      const running = c.running();
      return cyclic(running, n);
    };

    async function measureRecovery(
      endedAt: number,
      after?: () => boolean,
    ): Promise<Pick<FaultRecord, 'firstSendMs' | 'allMerchantsMs' | 'healthOkMs' | 'firstDispatchMs'>> {
      let healthOkMs: number | null = null;
      let firstDispatchMs: number | null = null;
      const deadline = endedAt + profile.recoveryWindowMs;
      const served = (): { first: number | null; all: number | null } => {
        const firstByMerchant = new Map<string, number>();
        for (const record of records) {
          for (const attempt of record.attempts) {
            if (attempt.outcome !== 201 || attempt.startedAt < endedAt) continue;
            const id = record.merchant.merchantId;
            firstByMerchant.set(id, Math.min(firstByMerchant.get(id) ?? Infinity, attempt.endedAt));
          }
        }
        const times = [...firstByMerchant.values()];
        return {
          first: times.length === 0 ? null : Math.min(...times) - endedAt,
          all: firstByMerchant.size === merchants.length ? Math.max(...times) - endedAt : null,
        };
      };
      for (;;) {
        if (healthOkMs === null) {
          const nodes = c.running().filter((n) => !crashed.has(n));
          const answers = await Promise.all(nodes.map(healthOk));
          if (nodes.length >= expectedNodes && answers.every(Boolean)) healthOkMs = Date.now() - endedAt;
        }
        if (after && firstDispatchMs === null && after()) firstDispatchMs = Date.now() - endedAt;
        const { all } = served();
        if ((healthOkMs !== null && all !== null && (!after || firstDispatchMs !== null)) || Date.now() > deadline) {
          const { first } = served();
          return { firstSendMs: first, allMerchantsMs: all, healthOkMs, firstDispatchMs };
        }
        await sleep(200);
      }
    }

    for (const [i, { name, round }] of plan.entries()) {
      // scheduled sends stop half way through the last round, so their minute falls before the run ends
      if (round === profile.rounds && i - (round - 1) * profile.faults.length >= Math.floor(profile.faults.length / 2))
        load.stopScheduling();
      phase = `${name} (round ${round})`;
      const started = Date.now();
      let target = '';
      let ended = started;
      let dispatchedAgain: (() => boolean) | undefined;
      let afterRecovery: (() => Promise<void>) | undefined;
      log(`fault ${i + 1}/${plan.length}: ${phase}`);
      switch (name) {
        case 'node-kill': {
          const node = victim(i);
          target = node.id;
          expectedExits.add(node);
          expectedNodes--;
          await c.kill(node, 'SIGKILL');
          ended = Date.now();
          // the last fault's victim stays dead: the verifications read through the survivors
          if (i < plan.length - 1) {
            afterRecovery = async () => {
              await c.startNode(node.id, nodeEnv(profile));
              expectedNodes++;
              await c
                .waitForBalance(
                  c.running().map((n) => n.id),
                  60_000,
                )
                .catch((error: unknown) => {
                  log(`  not balanced: ${String(error).slice(0, 200)}`);
                });
            };
          }
          break;
        }
        case 'node-freeze': {
          const node = victim(i);
          target = node.id;
          c.pause(node);
          await sleep(profile.freezeMs);
          c.resume(node);
          ended = Date.now();
          break;
        }
        case 'nats-kill':
          target = 'nats-server';
          await c.nats.kill('SIGKILL');
          await sleep(profile.natsDownMs);
          await c.nats.startServer();
          ended = Date.now();
          break;
        case 'postgres-restart':
          target = 'postgresql';
          await pg.restart('fast');
          ended = Date.now();
          break;
        case 'postgres-outage':
          target = 'postgresql';
          await pg.stopServer('fast');
          await sleep(profile.postgresOutageMs);
          await pg.startServer();
          ended = Date.now();
          break;
        case 'simulator-kill': {
          target = 'simulator';
          killedSimulators.add(simulatorProcess);
          await c.stopSimulator('SIGKILL');
          await sleep(profile.simulatorDownMs);
          simulatorProcess++;
          const next = simulatorProcess;
          await c.startSimulator();
          ended = Date.now();
          dispatchedAgain = () => c.simulatorDeliveries().some((d) => d.process === next && d.taken);
          break;
        }
      }
      const recovery = await measureRecovery(ended, dispatchedAgain);
      faults.push({ name, round, target, startedAt: started, endedAt: ended, ...recovery });
      log(
        `  ${target}: down ${ended - started} ms; first 201 after ${String(recovery.firstSendMs)} ms, every merchant after ${String(recovery.allMerchantsMs)} ms, ` +
          `health ok after ${String(recovery.healthOkMs)} ms${dispatchedAgain ? `, first dispatch after ${String(recovery.firstDispatchMs)} ms` : ''}`,
      );
      await afterRecovery?.();
      while (restarting.size > 0) await sleep(200);
      await sleep(profile.steadyMs);
    }

    phase = 'settling';
    log('load stopping; waiting for the answers still under way');
    await load.stop();
    // the API is read through healthy nodes: a node still crashing is waited for and started again
    const healthyBy = Date.now() + profile.recoveryWindowMs;
    while (Date.now() < healthyBy) {
      const nodes = c.running();
      if (
        restarting.size === 0 &&
        nodes.length >= expectedNodes &&
        nodes.every((n) => !crashed.has(n)) &&
        (await Promise.all(nodes.map(healthOk))).every(Boolean)
      )
        break;
      await sleep(500);
    }
    const lastScheduled = Math.max(0, ...records.map((r) => (r.accepted ? (r.scheduledFor ?? 0) : 0)));
    if (lastScheduled > Date.now()) {
      log(`waiting for the last scheduled minute (${new Date(lastScheduled).toISOString()})`);
      await sleep(lastScheduled - Date.now() + 2_000);
    }
    const settleDeadline = Date.now() + profile.settleMs;
    let evidence = await collectEvidence(c, receiver, records, funding, killedSimulators, deaths, faults, false);
    let result = verifyAll(evidence);
    log(
      `waiting up to ${profile.settleMs / 1000} s for the dispatches and webhooks still due (${result.webhooks.missing} webhooks missing now)`,
    );
    while (
      Date.now() < settleDeadline &&
      (result.webhooks.missing > 0 || !result.verifications.every((v) => v.ok || !v.name.startsWith('every occurrence')))
    ) {
      await sleep(2_000);
      evidence = await collectEvidence(c, receiver, records, funding, killedSimulators, deaths, faults, false);
      result = verifyAll(evidence);
    }
    log(`verifying (${result.webhooks.missing} webhooks missing)`);
    watch.on = false;
    await watcher;
    evidence = await collectEvidence(c, receiver, records, funding, killedSimulators, deaths, faults, true);
    result = verifyAll(evidence);
    passed = result.verifications.every((v) => v.ok);
    const kept = !passed || options.keepDir !== undefined;
    return { ...result, profile, runId, startedAt, endedAt: Date.now(), faults, deaths, evidence, logDir: kept ? logDir : null };
  } finally {
    await load?.stop().catch(() => undefined);
    await receiver?.close().catch(() => undefined);
    await cluster?.stop().catch((error: unknown) => {
      log(`cluster stop: ${String(error)}`);
    });
    await postgres?.stop().catch((error: unknown) => {
      log(`postgres stop: ${String(error)}`);
    });
    if (passed && options.keepDir === undefined) rmSync(logDir, { recursive: true, force: true });
    else log(`logs kept in ${logDir}`);
  }
}

/** Reads what the verifications judge: the journal, the connector's log, the webhooks; with `api`, GET /balance and /status too. */
async function collectEvidence(
  cluster: TestCluster,
  receiver: WebhookReceiver,
  records: Evidence['records'],
  funding: ReadonlyMap<string, number>,
  killedSimulators: ReadonlySet<number>,
  deaths: readonly NodeDeath[],
  faults: readonly FaultRecord[],
  api: boolean,
): Promise<Evidence> {
  const journalMessages = await cluster.sql<JournalMessage>(
    `SELECT substr(j.key, 9) AS "messageId", e->'spec'->>'merchantId' AS "merchantId", e->'spec'->>'text' AS text,
            (e->'spec'->>'totalCost')::float8 AS "totalCost", jsonb_array_length(e->'spec'->'recipients') AS recipients
     FROM journal j, jsonb_array_elements(j.events) e WHERE j.key LIKE 'message:%' AND e->>'type' = 'message_created'`,
  );
  const journalMoney = await cluster.sql<JournalMoney>(
    `SELECT substr(j.key, 8) AS "merchantId", e->>'type' AS type, e->>'chargeId' AS "chargeId",
            (CASE WHEN e->>'type' = 'topped_up' THEN (e->>'amount')::float8 ELSE (e->>'prepaid')::float8 + (e->>'postpaid')::float8 END) AS amount
     FROM journal j, jsonb_array_elements(j.events) e WHERE j.key LIKE 'wallet:%' AND e->>'type' IN ('topped_up', 'charged', 'refunded')`,
  );
  const journalCancels = await cluster.sql<JournalCancel>(
    `SELECT substr(j.key, 9) AS "messageId", (e->>'refund')::float8 AS refund
     FROM journal j, jsonb_array_elements(j.events) e WHERE j.key LIKE 'message:%' AND e->>'type' = 'schedule_cancelled'`,
  );
  const journalDispatches = await journalDispatchesOf(cluster);
  const webhooks: ReceivedWebhook[] = receiver.events().map((e) => ({
    eventId: e.event_id,
    type: e.event_type,
    messageId: e.message_id,
    recipientIndex: typeof e.data.recipient_index === 'number' ? e.data.recipient_index : null,
    errorCode: typeof e.data.error_code === 'string' ? e.data.error_code : null,
  }));
  const balances = new Map<string, number | null>();
  const statuses = new Map<string, StatusView>();
  let staleWrites = 0;
  let journalGaps = 0;
  if (api) {
    const nodes = cluster.running();
    if (nodes.length === 0) throw new Error('no node running to read the API through');
    const merchantsById = new Map(records.map((r) => [r.merchant.merchantId, r.merchant]));
    for (const [i, merchantId] of [...funding.keys()].entries()) {
      const merchant = merchantsById.get(merchantId);
      const answer = merchant ? await getJson(nodes, i, '/balance', merchant.apiKey) : null;
      const balance = (answer?.body as { data?: { balance?: number } } | undefined)?.data?.balance;
      balances.set(merchantId, answer?.status === 200 && typeof balance === 'number' ? Math.round(balance * 10_000) : null);
    }
    const accepted = records.flatMap((r) => (r.accepted ? [{ id: r.accepted.messageId, key: r.merchant.apiKey }] : []));
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < accepted.length) {
          const { id, key } = cyclic(accepted, next);
          const answer = await getJson(nodes, next++, `/status/${id}`, key);
          const data = (answer?.body as { data?: { message_id?: string; total_recipients?: number } } | undefined)?.data;
          statuses.set(id, {
            status: answer?.status ?? 0,
            messageId: data?.message_id ?? null,
            totalRecipients: data?.total_recipients ?? null,
          });
        }
      }),
    );
    staleWrites = (await cluster.staleWrites()).length;
    journalGaps = (await cluster.journalGaps()).length;
  }
  const dispatched = new Set(journalDispatches.keys());
  const undispatched = records.flatMap((r) => (r.accepted && !dispatched.has(`${r.accepted.messageId}:0`) ? [r.accepted.messageId] : []));
  const undispatchedDetail = new Map<string, string>();
  if (api && undispatched.length > 0 && undispatched.length <= 50) {
    for (const id of undispatched) {
      const outbox = await cluster.sql<{ id: string; topic: string }>('SELECT id, topic FROM outbox WHERE key = $1', [`message:${id}`]);
      const jobs = await cluster
        .sql<{ n: number }>("SELECT count(*)::int AS n FROM agenda_jobs WHERE data::text LIKE '%' || $1 || '%'", [id])
        .catch(() => [{ n: -1 }]);
      const events = await cluster.sql<{ type: string }>(
        "SELECT e->>'type' AS type FROM journal j, jsonb_array_elements(j.events) e WHERE j.key = $1 ORDER BY j.seq",
        [`message:${id}`],
      );
      undispatchedDetail.set(
        id,
        `journal: ${events.map((e) => e.type).join(', ')}; outbox: ${outbox.map((o) => o.topic).join(', ') || 'nothing'}; Agenda jobs naming it: ${jobs[0]?.n ?? 0}`,
      );
    }
  }
  const missingWebhookDetail = new Map<string, string>();
  if (api) {
    const missing = missingTerminalEvents({
      records,
      journalDispatches,
      webhooks,
      deliveries: cluster.simulatorDeliveries(),
      killedSimulators,
    });
    for (const { messageId, recipient } of missing.slice(0, 20)) {
      missingWebhookDetail.set(`${messageId}:${recipient}`, await whatIsKnownOf(cluster, receiver, messageId, recipient));
    }
  }
  return {
    missingWebhookDetail,
    records,
    funding,
    journalMessages,
    journalMoney,
    journalCancels,
    journalDispatches,
    balances,
    statuses,
    deliveries: cluster.simulatorDeliveries(),
    killedSimulators,
    webhooks,
    deaths,
    faults,
    staleWrites,
    journalGaps,
    undispatchedDetail,
  };
}

const isoOf = (ms: unknown): string =>
  typeof ms === 'number' || typeof ms === 'string' ? new Date(Number(ms)).toISOString().slice(11, 23) : '?';

/**
 * What the cluster knows of one message whose recipient got no terminal webhook, one line per source: the journal
 * (each record, with the recipient's signals), the outbox (entries still pending), the webhook dead letters, and
 * the receiver (each event it got for the message).
 */
export async function whatIsKnownOf(
  cluster: TestCluster,
  receiver: WebhookReceiver,
  messageId: string,
  recipient: number,
): Promise<string> {
  const lines: string[] = [];
  const describe = (event: Record<string, unknown>): string => {
    if (event.type === 'recipient_signal') {
      const signal = event.signal as { type?: string; status?: string } | undefined;
      return `recipient_signal(o${String(event.occurrence)} r${String(event.recipient)} ${signal?.type ?? '?'}${signal?.status ? ` ${signal.status}` : ''})`;
    }
    return String(event.type);
  };
  try {
    const records = await cluster.sql<{ seq: number; at: number; events: Record<string, unknown>[] }>(
      'SELECT seq::int AS seq, at::float8 AS at, events FROM journal WHERE key = $1 ORDER BY seq',
      [`message:${messageId}`],
    );
    lines.push(`journal: ${records.map((r) => `#${r.seq} ${isoOf(r.at)} ${r.events.map(describe).join(' + ')}`).join('; ') || 'nothing'}`);
    const mine = records.flatMap((r) => r.events).filter((e) => e.type === 'recipient_signal' && e.recipient === recipient);
    lines.push(`recipient ${recipient}'s signals: ${mine.map((e) => JSON.stringify(e.signal)).join(', ') || 'none'}`);
  } catch (error) {
    lines.push(`journal: unreadable (${String(error).slice(0, 200)})`);
  }
  try {
    const outbox = await cluster.sql<{ id: string; topic: string; seq: number; created_at: number; type: string | null }>(
      "SELECT id, topic, seq::int AS seq, created_at::float8 AS created_at, payload->'event'->>'event_type' AS type FROM outbox WHERE key = $1 ORDER BY created_at",
      [`message:${messageId}`],
    );
    lines.push(
      `outbox (pending): ${outbox.map((o) => `${o.topic}${o.type ? ` ${o.type}` : ''} ${o.id} (record #${o.seq}, ${isoOf(o.created_at)})`).join('; ') || 'nothing'}`,
    );
  } catch (error) {
    lines.push(`outbox: unreadable (${String(error).slice(0, 200)})`);
  }
  try {
    const letters = await cluster.sql<{
      id: string;
      reason: string;
      attempts: number;
      last_status: number | null;
      last_error: string | null;
      type: string | null;
    }>(
      "SELECT id, reason, attempts, last_status, last_error, event->>'event_type' AS type FROM webhook_dead_letters WHERE event->>'message_id' = $1",
      [messageId],
    );
    lines.push(
      `dead letters: ${letters.map((l) => `${String(l.type)} ${l.id}: ${l.reason} after ${l.attempts} attempt(s), last ${String(l.last_status ?? l.last_error)}`).join('; ') || 'none'}`,
    );
  } catch (error) {
    lines.push(`dead letters: unreadable (${String(error).slice(0, 200)})`);
  }
  const received = receiver.events().filter((e) => e.message_id === messageId);
  lines.push(
    `receiver: ${received.map((e) => `${e.event_type}${typeof e.data.recipient_index === 'number' ? ` r${e.data.recipient_index}` : ''} ${e.event_id} (${e.timestamp})`).join('; ') || 'nothing for this message'}`,
  );
  return lines.map((line) => `          ${line}`).join('\n');
}

/** GET through `nodes[turn]`, then the next ones when a node does not answer or answers 5xx (three tries). */
async function getJson(
  nodes: readonly ClusterNode[],
  turn: number,
  path: string,
  key: string,
): Promise<{ status: number; body: unknown } | null> {
  let last: { status: number; body: unknown } | null = null;
  for (let n = 0; n < 3; n++) {
    try {
      const response = await fetch(`${cyclic(nodes, turn + n).api}${path}`, {
        headers: { 'app-key': key },
        signal: AbortSignal.timeout(15_000),
      });
      last = { status: response.status, body: await response.json() };
      if (response.status < 500) return last;
    } catch {
      // the next node
    }
  }
  return last;
}
