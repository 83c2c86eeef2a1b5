import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { expect } from 'chai';
import pg from 'pg';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { STREAMS } from '../../../src/libraries/transport/transport-port.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { API_ROOT, call, startApi } from '../../helpers/http-fixture.js';
import { httpCall, serverNodeEnvironment, startMain, type HttpOutcome, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/webhook-receiver.js';

const GRACE_MS = 20_000;
const SENDS = 16;
const RECIPIENTS = 1_000;
/** `seedMerchant` prices +243 81… at 0.02 per segment. */
const PRICE_PER_RECIPIENT = 0.02;
const PREPAID = 100_000;
const NODE_ID = 'graceful-node-1';

/** 1 000 distinct Vodacom DR Congo numbers, different for every send. */
const recipientsOf = (send: number): string[] =>
  Array.from({ length: RECIPIENTS }, (_, i) => `+24381${String(send * RECIPIENTS + i).padStart(7, '0')}`);

/** A complete response: a 201 with the send's receipt, or a clean error envelope; never a cut or a stack trace. */
function expectComplete(outcome: HttpOutcome): void {
  if (outcome.status === null) return;
  const body = JSON.parse(outcome.body) as Record<string, unknown>;
  expect(outcome.body).not.to.match(/\bat .*\.ts:\d+/);
  if (outcome.status === 201) {
    const data = body.data as Record<string, unknown>;
    expect(data.message_id).to.be.a('string');
    expect(data.total_recipients).to.equal(RECIPIENTS);
  } else {
    expect(outcome.status, outcome.body).to.be.at.least(400);
    expect(body.success ?? false).to.equal(false);
  }
}

describe('graceful shutdown of src/main.ts', function () {
  this.timeout(180_000);

  describe('server mode (PostgreSQL, NATS): SIGTERM with sends in flight', () => {
    let nats: TestNats;
    let databaseUrl: string;
    let merchant: SeededMerchant;
    let main: MainProcess | null = null;
    let db: pg.Client;

    before(async () => {
      nats = await startTestNats();
      databaseUrl = await (await testPostgres()).createDatabase('shutdown');
      const seeding = await gatewayOnPostgres(databaseUrl);
      try {
        merchant = await seedMerchant(seeding, { name: 'Shutdown shop', prepaid: String(PREPAID) });
      } finally {
        await seeding.stop();
      }
      db = new pg.Client({ connectionString: databaseUrl });
      await db.connect();
    });

    after(async () => {
      await main?.kill();
      await db.end();
      await nats.stop();
    });

    it('finishes the requests in flight, refuses new ones, releases its leases and exits 0; a fresh node finds every acknowledged send and relays its dispatches', async () => {
      // Arrange: the node as operators run it
      main = startMain(
        serverNodeEnvironment(
          { databaseUrl, natsUrl: nats.url, nodeId: NODE_ID },
          { SHUTDOWN_GRACE_MS: String(GRACE_MS), RATE_LIMIT_SEND: '10000' },
        ),
      );
      const listening = await main.waitForLog((line) => line.msg === 'listening', 60_000);
      const api = `http://127.0.0.1:${String(listening.port)}${API_ROOT}`;
      const { rows: held } = await db.query<{ n: number }>(
        'SELECT count(*)::integer AS n FROM shard_leases WHERE owner = $1 AND expires_at > now()',
        [NODE_ID],
      );
      expect(held[0]?.n, 'leases held while running').to.be.greaterThan(0);

      // Act: many slow-ish sends at once; SIGTERM as soon as the first one is answered (the others are in flight)
      let answered = 0;
      let signalled: () => void = () => undefined;
      const firstAnswer = new Promise<void>((resolve) => {
        signalled = resolve;
      });
      const sends = Array.from({ length: SENDS }, (_, i) =>
        httpCall(`${api}/send`, {
          method: 'POST',
          headers: { 'app-key': merchant.apiKey },
          json: { to: recipientsOf(i), message: `shutdown test ${i}` },
        }).then((outcome) => {
          answered++;
          signalled();
          return outcome;
        }),
      );
      await firstAnswer;
      const answeredBeforeSignal = answered;
      const signalAt = Date.now();
      main.signal('SIGTERM');
      await main.waitForLog((line) => line.msg === 'shutting down', 10_000);
      const late = await httpCall(`${api}/health`);
      const outcomes = await Promise.all(sends);
      const exit = await main.exited;

      // Assert: the process
      expect(exit.code, main.lines.join('\n')).to.equal(0);
      // it ended by itself (exit code 0, "stopped"), not by its grace timer: how long it took depends on the machine
      expect(main.logs.some((line) => line.msg === 'stopped' && line.exit_code === 0)).to.equal(true);
      expect(late.status, 'a request after SIGTERM is not accepted').to.equal(null);
      // every answer is complete, and requests still in flight at the signal were answered, not cut
      for (const outcome of outcomes) expectComplete(outcome);
      const created = outcomes
        .filter((o) => o.status === 201)
        .map((o) => (JSON.parse(o.body) as { data: { message_id: string } }).data.message_id);
      expect(answeredBeforeSignal).to.be.below(SENDS);
      expect(created.length, JSON.stringify(outcomes.map((o) => o.status ?? o.error))).to.be.greaterThan(answeredBeforeSignal);
      // `at` is in whole milliseconds: a send answered in the very millisecond of the signal (a fast node answers
      // its batch together) counts as after it, as its answer reached this process after the signal was sent
      expect(outcomes.filter((o) => o.at >= signalAt && o.status === 201).length, 'sends answered after the signal').to.be.greaterThan(0);
      // its shards were handed over: no lease of this node is still live
      const { rows: leases } = await db.query<{ n: number }>(
        'SELECT count(*)::integer AS n FROM shard_leases WHERE owner = $1 AND expires_at > now()',
        [NODE_ID],
      );
      expect(leases[0]?.n).to.equal(0);

      // Assert: a fresh node (in this process) finds every acknowledged send and relays what they left
      const transport = await connectNatsTransport({ servers: nats.url, name: 'shutdown-fresh-node' });
      const fresh = await startApi(databaseUrl, { transport, config: { rateLimits: { status: 100_000 } } });
      try {
        for (const messageId of created) {
          const status = await call(`${fresh.api}/status/${messageId}`, { key: merchant.apiKey });
          expect(status.status, status.text).to.equal(200);
          expect((status.body as { data: { total_recipients: number } }).data.total_recipients).to.equal(RECIPIENTS);
        }
        // nothing a send wrote is left unrelayed: its creation (message.create) and its dispatch (carrier.dispatch)
        await eventually(
          async () => {
            const { rows } = await db.query<{ n: number }>(
              "SELECT count(*)::integer AS n FROM outbox WHERE topic IN ('message.create', 'carrier.dispatch')",
            );
            return rows[0]?.n === 0;
          },
          30_000,
          'outbox drained of creations and dispatches',
        );
        const { rows: messages } = await db.query<{ n: number }>(
          "SELECT count(DISTINCT key)::integer AS n FROM journal WHERE key LIKE 'message:%'",
        );
        const messageCount = messages[0]?.n ?? 0;
        expect(messageCount).to.be.at.least(created.length);
        // one dispatch job per recipient of every message created, on the broker
        const admin = await connect({ servers: nats.url });
        try {
          const jsm = await jetstreamManager(admin);
          const dispatched = await eventually(
            async () => {
              const n = (await jsm.streams.info(STREAMS.dispatch.name)).state.messages;
              return n === messageCount * RECIPIENTS ? n : false;
            },
            30_000,
            'every dispatch job on the broker',
          );
          expect(dispatched).to.equal(messageCount * RECIPIENTS);
        } finally {
          await admin.close();
        }
        // no charge without its message: the wallet paid exactly for the messages that exist
        const balance = await call(`${fresh.api}/balance`, { key: merchant.apiKey });
        const prepaid = (balance.body as { data: { sms_wallet_balance: number } }).data.sms_wallet_balance;
        expect(prepaid).to.be.closeTo(PREPAID - messageCount * RECIPIENTS * PRICE_PER_RECIPIENT, 1e-6);
      } finally {
        await fresh.stop();
        await transport.close();
      }
    });
  });

  describe('embedded mode (PGlite in DATA_DIR)', () => {
    let dataDir: string;
    let main: MainProcess | null = null;

    beforeEach(() => {
      dataDir = mkdtempSync(path.join(tmpdir(), 'gw-shutdown-'));
    });

    afterEach(async () => {
      await main?.kill();
      main = null;
      rmSync(dataDir, { recursive: true, force: true });
    });

    const embedded = (extra: Record<string, string> = {}): MainProcess =>
      startMain({ DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...extra });

    it('serves, then exits 0 on SIGINT', async () => {
      main = embedded();
      const listening = await main.waitForLog((line) => line.msg === 'listening', 60_000);
      expect(listening.mode).to.equal('embedded');
      const health = await httpCall(`http://127.0.0.1:${String(listening.port)}${API_ROOT}/health`);
      expect(health.status).to.equal(200);
      const metrics = await httpCall(`http://127.0.0.1:${String(listening.metrics_port)}/metrics`);
      expect(metrics.status).to.equal(200);
      expect(metrics.body).to.include('sms_gateway_http_requests_total{route="health",method="GET",status="200"} 1');

      main.signal('SIGINT');
      const exit = await main.exited;

      expect(exit.code, main.lines.join('\n')).to.equal(0);
      expect(main.logs.map((line) => line.msg)).to.include.members(['shutting down', 'stopped']);
    });

    it('exits 1 with a log line when stopping outlasts SHUTDOWN_GRACE_MS', async () => {
      main = embedded({ SHUTDOWN_GRACE_MS: '1', SEED_DEMO_MERCHANT: 'false' });
      await main.waitForLog((line) => line.msg === 'listening', 60_000);

      main.signal('SIGTERM');
      const exit = await main.exited;

      expect(exit.code).to.equal(1);
      const line = main.logs.find((l) => l.msg === 'shutdown did not finish within the grace period');
      expect(line, main.lines.join('\n')).to.include({ level: 50, grace_ms: 1 });
    });
  });
});
