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
import { eventually } from '../../helpers/eventually.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

const GRACE_MS = 20_000;
const SENDS = 16;
const RECIPIENTS = 1_000;
/** `seedMerchant` prices +243 81… at 0.02 per segment. */
const PRICE_PER_RECIPIENT = 0.02;
const PREPAID = 100_000;
const NODE_ID = 'graceful-node-1';
/** Long enough for a health check and a send after the signal on a machine kept busy; the test takes this long. */
const DRAIN_MS = 15_000;

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
          // the sends wait for the journal's lock for as long as this machine takes to get there: no deadline meets them
          {
            SHUTDOWN_GRACE_MS: String(GRACE_MS),
            RATE_LIMIT_SEND: '10000',
            ACTOR_ASK_TIMEOUT_MS: '60000',
            CLUSTER_FAILOVER_DEADLINE_MS: '60000',
          },
        ),
      );
      const created: string[] = [];
      const listening = await main.waitForLog((line) => line.msg === 'listening', 60_000);
      const api = `http://127.0.0.1:${String(listening.port)}${API_ROOT}`;
      const { rows: held } = await db.query<{ n: number }>(
        'SELECT count(*)::integer AS n FROM shard_leases WHERE owner = $1 AND expires_at > now()',
        [NODE_ID],
      );
      expect(held[0]?.n, 'leases held while running').to.be.greaterThan(0);

      // Act: the journal locked by this test, so sends reach the node and wait there for their charge's write; SIGTERM
      // once PostgreSQL shows the node waiting, then the lock released once the node says it is stopping
      await db.query('BEGIN');
      await db.query('LOCK TABLE journal IN SHARE MODE');
      let locked = true;
      try {
        const sends = Array.from({ length: SENDS }, (_, i) =>
          httpCall(`${api}/send`, {
            method: 'POST',
            headers: { 'app-key': merchant.apiKey },
            json: { to: recipientsOf(i), message: `shutdown test ${i}` },
          }),
        );
        // watched from another session: inside the locking transaction, pg_stat_activity keeps its first snapshot
        const watcher = new pg.Client({ connectionString: databaseUrl });
        await watcher.connect();
        try {
          await eventually(
            async () => {
              const { rows } = await watcher.query<{ n: number }>(
                // a wait for a table's lock: only this test takes one (row locks, Agenda's, wait on `transactionid`)
                "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'relation'",
              );
              return (rows[0]?.n ?? 0) > 0;
            },
            30_000,
            "the node waiting for the journal's lock",
          );
        } finally {
          await watcher.end();
        }
        const signalAt = Date.now();
        main.signal('SIGTERM');
        await main.waitForLog((line) => line.msg === 'shutting down', 10_000);
        const late = await httpCall(`${api}/health`);
        await db.query('COMMIT');
        locked = false;
        const outcomes = await Promise.all(sends);
        const exit = await main.exited;

        // Assert: the process
        expect(exit.code, main.lines.join('\n')).to.equal(0);
        // it ended by itself (exit code 0, "stopped"), not by its grace timer: how long it took depends on the machine
        expect(main.logs.some((line) => line.msg === 'stopped' && line.exit_code === 0)).to.equal(true);
        expect(late.status, 'a request after SIGTERM is not accepted').to.equal(null);
        // every answer is complete, and requests in the node's hands at the signal were answered, not cut
        for (const outcome of outcomes) expectComplete(outcome);
        for (const outcome of outcomes) {
          if (outcome.status === 201) created.push((JSON.parse(outcome.body) as { data: { message_id: string } }).data.message_id);
        }
        expect(created.length, JSON.stringify(outcomes.map((o) => o.status ?? o.error))).to.be.greaterThan(0);
        expect(outcomes.filter((o) => o.at >= signalAt && o.status === 201).length, 'sends answered after the signal').to.equal(
          created.length,
        );
        // and from the node's side: the sends it answered 201 came after it began stopping, before it said its
        // requests were finished
        const stopping = main.logs.findIndex((line) => line.msg === 'shutting down');
        const finished = main.logs.findIndex((line) => line.msg === 'requests finished; draining');
        const answeredWhileStopping = main.logs
          .slice(stopping + 1, finished)
          .filter((line) => line.msg === 'request' && line.method === 'POST' && line.route === 'send' && line.status === 201);
        expect(stopping, 'the node logged its stop').to.be.at.least(0);
        expect(finished, 'the node logged its requests finished').to.be.greaterThan(stopping);
        expect(answeredWhileStopping.length, 'sends the node answered after it began stopping').to.equal(created.length);
      } finally {
        if (locked) await db.query('ROLLBACK');
      }
      // its shards were handed over: no lease of this node is still live
      const { rows: leases } = await db.query<{ n: number }>(
        'SELECT count(*)::integer AS n FROM shard_leases WHERE owner = $1 AND expires_at > now()',
        [NODE_ID],
      );
      expect(leases[0]?.n, main.lines.filter((line) => !line.includes('"msg":"request"')).join('\n')).to.equal(0);

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

    it('with SHUTDOWN_DRAIN_MS, answers 503 "stopping" on /health and still serves during the drain, then stops accepting and exits 0', async () => {
      // Arrange: a drain long enough for this test's few calls on any machine
      main = startMain(
        serverNodeEnvironment(
          { databaseUrl, natsUrl: nats.url, nodeId: 'graceful-node-2' },
          { SHUTDOWN_GRACE_MS: '60000', SHUTDOWN_DRAIN_MS: String(DRAIN_MS), RATE_LIMIT_SEND: '10000' },
        ),
      );
      const listening = await main.waitForLog((line) => line.msg === 'listening', 60_000);
      const api = `http://127.0.0.1:${String(listening.port)}${API_ROOT}`;
      const before = await httpCall(`${api}/health`);
      expect(before.status, before.body).to.equal(200);
      expect((JSON.parse(before.body) as { data: { checks: Record<string, unknown> } }).data.checks).not.to.have.property('node');

      // Act: SIGTERM, then a health check and a send while the node drains
      main.signal('SIGTERM');
      await main.waitForLog((line) => line.msg === 'health answers 503; serving until the drain ends', 10_000);
      const health = await httpCall(`${api}/health`);
      const send = await httpCall(`${api}/send`, {
        method: 'POST',
        headers: { 'app-key': merchant.apiKey },
        json: { to: ['+243810000001'], message: 'sent while the node drains' },
      });
      const exit = await main.exited;
      const after = await httpCall(`${api}/health`);

      // Assert: unhealthy but serving during the drain; refused once it ended; a clean exit
      expect(health.status, health.body).to.equal(503);
      const report = JSON.parse(health.body) as { data: { status: string; checks: Record<string, unknown> } };
      expect(report.data.status).to.equal('degraded');
      expect(report.data.checks).to.include({ database: 'ok', transport: 'ok', node: 'stopping' });
      expect(send.status, send.body).to.equal(201);
      expect(exit.code, main.lines.join('\n')).to.equal(0);
      expect(after.status, 'no connection accepted after the stop').to.equal(null);
      // the node served the send after its drain began and before it stopped accepting
      const drained = main.logs.findIndex((line) => line.msg === 'health answers 503; serving until the drain ends');
      const finished = main.logs.findIndex((line) => line.msg === 'requests finished; draining');
      const served = main.logs.findIndex((line) => line.msg === 'request' && line.route === 'send' && line.status === 201);
      expect(drained).to.be.at.least(0);
      expect(served, 'the send logged during the drain').to.be.greaterThan(drained);
      expect(finished).to.be.greaterThan(served);
    });
  });

  describe('embedded mode (PGlite in DATA_DIR)', () => {
    let dataDir: string;
    let main: MainProcess | null = null;

    beforeEach(() => {
      dataDir = temporaryDir('gw-shutdown-');
    });

    afterEach(async () => {
      await main?.kill();
      main = null;
      removeTemporaryDir(dataDir);
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
