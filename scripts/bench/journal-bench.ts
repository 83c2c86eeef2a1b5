/**
 * npm run bench:journal — journal append throughput (PostgreSQL and PGlite, with and without group commit),
 * charges per second on one hot wallet, and memory per active vs passivated message actor.
 * Starts its own private PostgreSQL; prints a Markdown table for docs/performance.md.
 */
import os from 'node:os';
import { createActorRuntime } from '../../src/libraries/actors/actor-runtime.js';
import { createDomainHosts } from '../../src/cluster/actor-router.js';
import { systemClock } from '../../src/libraries/clock/clock.js';
import { openPglitePersistence, openPostgresPersistence, type Persistence } from '../../src/libraries/persistence/persistence.js';
import type { SqlJournalOptions } from '../../src/libraries/persistence/sql/sql-journal.js';
import { fromUnits } from '../../src/pricing/money.js';
import type { MessageSpec } from '../../src/messaging/message-behaviour.js';
import { DEFAULT_IDS } from '../../src/composition/ids.js';
import { startTestPostgres } from '../../test/helpers/postgres.js';

const GROUP: SqlJournalOptions = { groupCommit: true, maxBatch: 256, maxConcurrentBatches: 4 };
const SINGLE: SqlJournalOptions = { groupCommit: false, maxBatch: 1, maxConcurrentBatches: 1 };
const rows: string[] = [];

async function appendThroughput(store: Persistence, total: number, inFlight: number): Promise<number> {
  const keys = 1000;
  const seq = new Map<string, number>();
  let next = 0;
  const started = performance.now();
  async function worker(): Promise<void> {
    while (next < total) {
      const i = next++;
      const key = `bench:${i % keys}`;
      const s = (seq.get(key) ?? 0) + 1;
      seq.set(key, s);
      await store.journal.append({
        key,
        seq: s,
        events: [{ type: 'charged', amount: 100, chargeId: `c-${i}` }],
        outbox: [],
        at: Date.now(),
      });
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker));
  return total / ((performance.now() - started) / 1000);
}

function hosts(store: Persistence, idleShutdownMs: number) {
  const runtime = createActorRuntime({ journal: store.journal, clock: systemClock, newId: DEFAULT_IDS.eventId });
  const domain = createDomainHosts(runtime, {
    host: { askTimeoutMs: 30_000, idleShutdownMs, snapshotEvery: 1000 },
    ratePolicy: {
      windowMs: 60_000,
      limits: { send: 60, status: 120, balance: 30, calculate: 60, management: 60 },
      suspendAfterRejections: 20,
      suspensionMs: 900_000,
    },
    idempotencyTtlMs: 86_400_000,
  });
  return { runtime, domain };
}

async function hotWallet(store: Persistence, total: number): Promise<number> {
  const { runtime, domain } = hosts(store, 600_000);
  const wallet = domain.wallets.ref('mer_hot', 0);
  await wallet.ask({ type: 'open', wallet: 'prepaid' });
  await wallet.ask({ type: 'top_up', wallet: 'prepaid', amount: fromUnits(total * 100), reference: 'bench' });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: total }, (_, i) =>
      wallet.ask({ type: 'charge', chargeId: `hot-${i}`, amount: fromUnits(100), refundable: false, idempotency: null, followUp: null }),
    ),
  );
  const perSecond = total / ((performance.now() - started) / 1000);
  runtime.stop();
  return perSecond;
}

function spec(i: number): MessageSpec {
  return {
    messageId: `msg_bench_${i}`,
    merchantId: 'mer_bench',
    keyId: 'key_bench',
    text: 'Your code is 123456',
    senderId: null,
    encoding: 'GSM-7',
    segments: 1,
    callbackUrl: null,
    currency: 'USD',
    sendingType: 'immediate',
    recipients: [{ index: 0, phone: '+243812345678', price: fromUnits(200), carrier: 'simulator' }],
    occurrences: [],
    recurrence: null,
    totalMessages: 1,
    totalCost: fromUnits(200),
    costPerOccurrence: fromUnits(200),
  };
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function actorMemory(
  store: Persistence,
  count: number,
): Promise<{ activeBytes: number; passivatedBytes: number; createPerSecond: number }> {
  const { runtime, domain } = hosts(store, 3_600_000);
  const baseline = heapMb();
  const started = performance.now();
  const batch = 500;
  for (let i = 0; i < count; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, (_, j) =>
        domain.messages.ref(`msg_bench_${i + j}`, 0).ask({ type: 'create', spec: spec(i + j) }),
      ),
    );
  }
  const createPerSecond = count / ((performance.now() - started) / 1000);
  const active = heapMb();
  domain.messages.passivate();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const passivated = heapMb();
  runtime.stop();
  return {
    activeBytes: ((active - baseline) * 1024 * 1024) / count,
    passivatedBytes: Math.max(0, ((passivated - baseline) * 1024 * 1024) / count),
    createPerSecond,
  };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const pg = await startTestPostgres();
  try {
    for (const [label, options] of [
      ['group commit', GROUP],
      ['one append per round trip', SINGLE],
    ] as const) {
      const url = await pg.createDatabase('bench');
      const store = await openPostgresPersistence({ url, poolSize: 10, journal: options });
      rows.push(`| PostgreSQL appends/s, ${label}, 64 in flight | ${fmt(await appendThroughput(store, 20_000, 64))} |`);
      await store.close();
    }
    for (const [label, options] of [
      ['group commit', GROUP],
      ['one append per round trip', SINGLE],
    ] as const) {
      const store = await openPglitePersistence({ journal: options });
      rows.push(`| PGlite (in memory) appends/s, ${label}, 64 in flight | ${fmt(await appendThroughput(store, 5_000, 64))} |`);
      await store.close();
    }
    {
      const url = await pg.createDatabase('bench');
      const store = await openPostgresPersistence({ url, poolSize: 10 });
      rows.push(`| Charges/s on one hot wallet (PostgreSQL, 10 000 concurrent callers) | ${fmt(await hotWallet(store, 10_000))} |`);
      const count = Number(process.env.BENCH_ACTORS ?? 100_000);
      const memory = await actorMemory(store, count);
      rows.push(`| Message creations/s (${fmt(count)} immediate messages, PostgreSQL) | ${fmt(memory.createPerSecond)} |`);
      rows.push(`| Heap per active message actor (1 recipient) | ${fmt(memory.activeBytes)} bytes |`);
      rows.push(`| Heap per passivated message actor | ${fmt(memory.passivatedBytes)} bytes |`);
      await store.close();
    }
  } finally {
    await pg.stop();
  }
  console.log(
    `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  console.log('| Measure | Result |\n|---|---|');
  for (const row of rows) console.log(row);
}

await main();
