import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import pg from 'pg';
import { shardOf } from '../../../src/cluster/shards.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { API_ROOT } from '../../helpers/http-fixture.js';
import { httpCall, serverNodeEnvironment, startMain, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SHARDS = 32;
/** The first node holds shards 0-15 once the second joins (a node over its share hands its highest shards over). */
const FIRST_NODE_SHARDS = SHARDS / 2;
const MERCHANTS_ON_STOPPING_NODE = 3;
const SENDS_PER_MERCHANT = 3;
const RECIPIENTS = 20;

/** Numbers the simulator delivers (endings 00-88), different for every send. */
const recipientsOf = (send: number): string[] =>
  Array.from({ length: RECIPIENTS }, (_, i) => `+243812${String(send).padStart(3, '0')}${String(i).padStart(2, '0')}`);

const messages = (node: MainProcess, msg: string): Record<string, unknown>[] => node.logs.filter((line) => line.msg === msg);
const summaries = (node: MainProcess, prefix: string): Record<string, unknown>[] =>
  node.logs.filter((line) => typeof line.msg === 'string' && line.msg.startsWith(prefix));
const total = (lines: Record<string, unknown>[], field: string): number => lines.reduce((sum, line) => sum + Number(line[field]), 0);

/**
 * Ctrl-C in a terminal (or systemd's control-group kill) signals the whole process group: npm and node get the
 * signal, and npm passes its own on. The node started by `npm start` must take all of that as one graceful stop: hand
 * its shards over to the other node and lose nothing it acknowledged.
 */
describe('a signal to the whole process group of `npm start` (server mode, two nodes)', function () {
  this.timeout(300_000);
  let nats: TestNats;
  let databaseUrl: string;
  let db: pg.Client;
  const merchants: SeededMerchant[] = [];
  const started: MainProcess[] = [];

  before(async () => {
    nats = await startTestNats();
    databaseUrl = await (await testPostgres()).createDatabase('group_signal');
    // merchants whose actors live on the shards the stopping node will hold, and one on the other node's
    const seeding = await gatewayOnPostgres(databaseUrl);
    try {
      let onOther = 0;
      while (merchants.length < MERCHANTS_ON_STOPPING_NODE + 1) {
        const merchant = await seedMerchant(seeding, { name: `Group signal shop ${merchants.length}`, prepaid: '1000' });
        const onFirst = shardOf(merchant.merchantId, SHARDS) < FIRST_NODE_SHARDS;
        if (onFirst ? merchants.length - onOther < MERCHANTS_ON_STOPPING_NODE : onOther === 0) {
          merchants.push(merchant);
          if (!onFirst) onOther++;
        }
      }
    } finally {
      await seeding.stop();
    }
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });

  after(async () => {
    await Promise.all(started.map((p) => p.kill()));
    await db.end();
    await nats.stop();
  });

  const environment = (nodeId: string): Record<string, string> =>
    serverNodeEnvironment({ databaseUrl, natsUrl: nats.url, nodeId }, { CLUSTER_SHARDS: String(SHARDS), CLUSTER_LEASE_TTL_MS: '3000' });

  const ownership = async (): Promise<Map<string, number>> => {
    const { rows } = await db.query<{ owner: string; n: number }>(
      'SELECT owner, count(*)::integer AS n FROM shard_leases WHERE expires_at > now() GROUP BY owner',
    );
    return new Map(rows.map((row) => [row.owner, row.n]));
  };

  it('when the group gets SIGINT twice and SIGTERM at once with messages in flight, then the node stops once, gracefully, hands its shards over, and every acknowledged message reaches its final status', async () => {
    // Arrange: the simulator connector, the node to stop (`npm start`, leading its own process group), a second node
    const simulator = startMain(
      { NATS_URL: nats.url, LOG_LEVEL: 'warn' },
      { argv: ['--import', 'tsx', path.join(ROOT, 'src/carriers/simulator/simulator-main.ts')], cwd: ROOT },
    );
    started.push(simulator);
    const first = startMain(environment('group-node-1'), { file: 'npm', argv: ['start'], cwd: ROOT, detached: true });
    started.push(first);
    const listening = await first.waitForLog((line) => line.msg === 'listening', 90_000);
    const second = startMain(environment('group-node-2'));
    started.push(second);
    await second.waitForLog((line) => line.msg === 'listening', 90_000);
    await eventually(
      async () => {
        const owners = await ownership();
        return owners.get('group-node-1') === FIRST_NODE_SHARDS && owners.get('group-node-2') === SHARDS - FIRST_NODE_SHARDS;
      },
      60_000,
      'the shards shared 16 and 16',
      200,
    );

    // sends through the node about to stop: each answered 201 is acknowledged
    const api = `http://127.0.0.1:${String(listening.port)}${API_ROOT}`;
    const sends = merchants.flatMap((merchant, m) =>
      Array.from({ length: SENDS_PER_MERCHANT }, (_, i) =>
        httpCall(`${api}/send`, {
          method: 'POST',
          headers: { 'app-key': merchant.apiKey },
          json: { to: recipientsOf(m * SENDS_PER_MERCHANT + i), message: `group ${m}.${i}` },
        }),
      ),
    );
    // message id → its merchant's key (the sends are in merchant order)
    const acknowledged = new Map(
      (await Promise.all(sends)).map((outcome, n) => {
        expect(outcome.status, outcome.body).to.equal(201);
        return [
          (JSON.parse(outcome.body) as { data: { message_id: string } }).data.message_id,
          merchants[Math.floor(n / SENDS_PER_MERCHANT)]!.apiKey,
        ] as const;
      }),
    );

    // Act: Ctrl-C, and another at once, to the whole group (npm, and node under it); and a SIGTERM with them (a
    // service manager stopping the group meanwhile), which no coalescing of the two SIGINTs can swallow
    first.signalGroup('SIGINT');
    first.signalGroup('SIGINT');
    first.signalGroup('SIGTERM');
    // npm may exit before the node it started (it does on SIGTERM): the node is gone once their output is closed
    await first.outputClosed;
    const npmExit = await first.exited;

    // Assert: one graceful stop, its shards handed over and taken by the other node
    expect(npmExit.code === 0 || npmExit.signal === 'SIGINT' || npmExit.signal === 'SIGTERM', `npm: ${JSON.stringify(npmExit)}`).to.equal(
      true,
    );
    const log = first.lines.join('\n');
    expect(messages(first, 'shutting down'), log).to.have.length(1);
    // the signals reach the node in no set order (npm relays its copies; the kernel delivers pending ones by number):
    // whichever comes first begins the stop, and the others, SIGINT and SIGTERM alike, are copies of it
    const began = messages(first, 'shutting down')[0]?.reason;
    expect(['SIGINT', 'SIGTERM'], log).to.include(began);
    const copies = messages(first, 'signal while stopping: a copy of the first, same stop');
    expect(
      [began, ...copies.map((line) => line.signal)],
      'the signal that began the stop and the ones after it, each taken as part of the same stop',
    ).to.include.members(['SIGINT', 'SIGTERM']);
    expect(log).not.to.include('exiting now');
    expect(messages(first, 'stopped'), log).to.have.length(1);
    expect(messages(first, 'stopped')[0]).to.include({ exit_code: 0 });
    expect(first.logs.at(-1)?.msg, 'the last line before exit').to.equal('stopped');
    const handedOver = summaries(first, 'shards handed over: ');
    expect(handedOver.at(-1), 'its whole share in one line on stopping').to.include({ handed_over: FIRST_NODE_SHARDS, owned: 0 });
    await eventually(async () => (await ownership()).get('group-node-2') === SHARDS, 30_000, 'the other node holds every shard', 200);
    // its summary line follows the leases it took (a loaded machine may hold the line back a moment)
    const heldBySecond = (): number =>
      total(summaries(second, 'shards acquired: '), 'acquired') - total(summaries(second, 'shards handed over: '), 'handed_over');
    await eventually(() => Promise.resolve(heldBySecond() === SHARDS), 30_000, 'the other node logs every shard acquired', 200);
    expect(heldBySecond()).to.equal(SHARDS);

    // nothing acknowledged is lost: every recipient of every message reaches its final status, read on the other node
    const secondApi = `http://127.0.0.1:${String((await second.waitForLog((line) => line.msg === 'listening')).port)}${API_ROOT}`;
    for (const [messageId, key] of acknowledged) {
      await eventually(
        async () => {
          const status = await httpCall(`${secondApi}/status/${messageId}`, { headers: { 'app-key': key } });
          if (status.status !== 200) return false;
          const recipients = (JSON.parse(status.body) as { data: { recipients: { status: string }[] } }).data.recipients;
          return recipients.length === RECIPIENTS && recipients.every((recipient) => recipient.status === 'delivered');
        },
        120_000,
        `every recipient of ${messageId} delivered`,
        250,
      );
    }
  });
});
