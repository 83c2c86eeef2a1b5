import { expect } from 'chai';
import pg from 'pg';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { verifyBasicAuth, verifyWebhookSignature } from '../../../src/client/webhook-verification.js';
import { runCli } from '../../../src/composition/cli.js';
import type { Config, DeepPartial } from '../../../src/libraries/config/config.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { secretKeyId } from '../../../src/libraries/secrets/secret-box.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { RECEIPTS_DURABLE, WEBHOOKS_DURABLE } from '../../../src/libraries/transport/nats-names.js';
import { STREAMS, type Transport } from '../../../src/libraries/transport/transport-port.js';
import { SECRET_UNREADABLE } from '../../../src/webhooks/webhook-delivery.js';
import { client, dataOf, NUMBERS, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, testConfig } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';

const KEY_A = testConfig().secrets.key;
const KEY_B = Buffer.alloc(32, 0x5b).toString('base64');
/**
 * After a node restarts, a first delivery may wait for the stopped node's pull requests on the broker to expire
 * (30 s), so waits for deliveries are generous.
 */
const RESTART_WAIT_MS = 90_000;
const USERNAME = 'shop';
const PASSWORD = 'Basic-Pa55word-that-must-never-be-stored';

/**
 * Webhook secrets set through the CLI (joined to a running node over NATS), delivered through the real sender, and
 * looked for in every table of the PostgreSQL database and in every NATS message sent meanwhile.
 */
describe('webhook secrets at rest (PostgreSQL, NATS, CLI, HTTP)', function () {
  this.timeout(400_000);
  let nats: TestNats;
  let databaseUrl = '';
  let receiver: WebhookReceiver;
  let spy: NatsConnection;
  const natsTraffic: string[] = [];
  let node: { api: ApiFixture; transport: Transport } | null = null;
  let merchant: { apiKey: string; keyId: string };
  let signingSecret = '';

  async function startNode(secrets: DeepPartial<Config['secrets']>): Promise<ApiFixture> {
    const transport = await connectNatsTransport({ servers: nats.url, name: 'secrets-test' });
    const config: DeepPartial<Config> = {
      secrets: { previousKeys: [], ...secrets },
      actors: { snapshotEvery: 2 },
      rateLimits: { send: 1_000 },
    };
    const api = await startApi(databaseUrl, {
      transport,
      inProcessSimulator: true,
      config,
      ...(process.env.DEBUG_SECRETS ? { logger: createLogger({ level: 'info' }) } : {}),
    });
    node = { api, transport };
    return api;
  }

  async function stopNode(): Promise<void> {
    if (!node) return;
    await node.api.stop();
    await node.transport.close();
    node = null;
  }

  async function cli(
    argv: readonly string[],
    secrets: Readonly<Record<string, string>> = {},
  ): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const env = { NODE_ENV: 'test', GATEWAY_MODE: 'server', DATABASE_URL: databaseUrl, NATS_URL: nats.url, ...secrets };
    const code = await runCli(argv, { env, out: (text) => out.push(text), err: (text) => err.push(text) });
    return { code, out: out.join(''), err: err.join('') };
  }

  async function sendOne(api: ApiFixture): Promise<string> {
    return dataOf<SendData>(await client(() => api.api).send(merchant.apiKey, { to: [NUMBERS.vodacom], message: 'secrets at rest' }), 201)
      .message_id;
  }

  const ofMessage = (messageId: string) => (request: ReceivedRequest) =>
    (request.body as { message_id?: string } | undefined)?.message_id === messageId;

  /** Waits for a delivery of the message's events and checks its Basic header and signature with the clear values. */
  async function expectSignedDelivery(messageId: string): Promise<void> {
    const request = await receiver.waitFor(
      (requests) => requests.find(ofMessage(messageId)),
      RESTART_WAIT_MS,
      `a delivery for ${messageId}`,
    );
    expect(verifyBasicAuth(request.headers.authorization, { username: USERNAME, password: PASSWORD }), 'Basic header').to.equal(true);
    expect(verifyWebhookSignature({ body: request.rawBody, headers: request.headers, secret: signingSecret }), 'X-Signature').to.equal(
      true,
    );
  }

  /** Every row of every table of the database, as JSON text. */
  async function dump(): Promise<Map<string, string[]>> {
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const tables = await db.query<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
      );
      const rows = new Map<string, string[]>();
      for (const { name } of tables.rows) {
        const result = await db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${name}" t`);
        rows.set(
          name,
          result.rows.map((r) => r.row),
        );
      }
      return rows;
    } finally {
      await db.end();
    }
  }

  let spying: Subscription | null = null;
  /** Records every message the server carries while a node runs. */
  function spyOn(): void {
    const subscription = spy.subscribe('>');
    spying = subscription;
    void (async () => {
      for await (const message of subscription) natsTraffic.push(Buffer.from(message.data).toString('latin1'));
    })();
  }

  /**
   * Stops the node with the spy's interest withdrawn until the server has let the stopped node's pull requests go. A
   * subscription to '>' has interest in their reply subjects too, so the server would keep them until they expire and
   * hand them the next jobs, which would then wait out the ack wait (30 s) before another delivery.
   */
  async function stopNodeUnspied(): Promise<void> {
    await spying?.drain();
    spying = null;
    await stopNode();
    const jsm = await jetstreamManager(spy);
    const durables = [
      [STREAMS.receipts.name, RECEIPTS_DURABLE],
      [STREAMS.webhooks.name, WEBHOOKS_DURABLE],
    ] as const;
    await eventually(
      async () => {
        const waiting = await Promise.all(
          durables.map(async ([stream, durable]) => (await jsm.consumers.info(stream, durable)).num_waiting),
        );
        return waiting.every((count) => count === 0);
      },
      RESTART_WAIT_MS,
      "the stopped node's pull requests let go",
    );
    spyOn();
  }

  before(async () => {
    nats = await startTestNats();
    databaseUrl = await (await testPostgres()).createDatabase('secrets');
    receiver = await startWebhookReceiver();
    spy = await connect({ servers: nats.url, name: 'secrets-spy' });
    spyOn();
    const api = await startNode({ key: KEY_A });
    merchant = await seedMerchant(api.node.gateway, { prepaid: '100' });
  });

  after(async () => {
    await stopNode();
    await spy.drain();
    await receiver.close();
    await nats.stop();
  });

  it('when the webhook password and a signing secret are set with the CLI, then deliveries carry the right Basic header and signature', async () => {
    const webhook = await cli([
      'keys',
      'set-webhook',
      merchant.keyId,
      '--url',
      receiver.url,
      '--username',
      USERNAME,
      '--password',
      PASSWORD,
    ]);
    expect(webhook.code, webhook.err).to.equal(0);
    const signing = await cli(['keys', 'signing', merchant.keyId, 'on', '--json']);
    expect(signing.code, signing.err).to.equal(0);
    signingSecret = (JSON.parse(signing.out) as { secret: string }).secret;
    expect(signingSecret).to.match(/^whsec_/);
    await expectSignedDelivery(await sendOne(node!.api));
  });

  it('when a node has a key that does not open the secrets, then it sends nothing for them, stays up, and the events end as dead letters naming the cause', async () => {
    await stopNodeUnspied();
    const api = await startNode({ key: KEY_B });
    const messageId = await sendOne(api);
    const letters = await eventually(
      async () => {
        const all = await api.node.gateway.persistence.deadLetters.list({ limit: 100 });
        const mine = all.filter((letter) => (letter.event as { message_id?: string }).message_id === messageId);
        return mine.length > 0 && mine;
      },
      RESTART_WAIT_MS,
      'dead letters of the message',
    );
    for (const letter of letters) {
      expect(letter.reason).to.equal('retries_exhausted');
      expect(letter.lastError)
        .to.include(SECRET_UNREADABLE)
        .and.to.include(secretKeyId(Buffer.from(KEY_A, 'base64')));
    }
    expect(receiver.requests.filter(ofMessage(messageId)), 'nothing sent without its credentials').to.deep.equal([]);
    expect((await client(() => api.api).health()).status).to.equal(200);
  });

  it('when the key rotates and `secrets reseal` runs with the old key kept for reading, then the node holding only the new key delivers, signed', async () => {
    // the running node holds only KEY_B since the previous test: the secrets sealed with KEY_A are what it lacks
    const rotation = { SECRETS_KEY: KEY_B, SECRETS_PREVIOUS_KEYS: KEY_A };
    const reseal = await cli(['secrets', 'reseal', '--json'], rotation);
    expect(reseal.code, reseal.err).to.equal(0);
    expect(JSON.parse(reseal.out)).to.deep.equal({ keys: 1, resealed: 2 });
    const again = await cli(['secrets', 'reseal', '--json'], rotation);
    expect(JSON.parse(again.out), 'nothing left to reseal').to.deep.equal({ keys: 1, resealed: 0 });
    const withoutOldKey = await cli(['secrets', 'reseal'], { SECRETS_KEY: Buffer.alloc(32, 0x77).toString('base64') });
    expect(withoutOldKey.code, 'a key that opens nothing is named, no stack trace').to.equal(1);
    expect(withoutOldKey.err)
      .to.include(secretKeyId(Buffer.from(KEY_B, 'base64')))
      .and.to.include('SECRETS_PREVIOUS_KEYS');

    await expectSignedDelivery(await sendOne(node!.api));
  });

  it('when the whole database and every NATS message are searched, then neither secret appears, and the journal and snapshots hold them sealed', async () => {
    const rows = await dump();
    const everything = [...rows.values()].flat().join('\n');
    expect(everything).to.not.include(PASSWORD);
    expect(everything).to.not.include(signingSecret);
    expect(everything).to.not.include(Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64'));
    const sealedUnder = (table: string, key: string) =>
      (rows.get(table) ?? []).filter(
        (row) => row.includes(merchant.keyId) && row.includes('aes-256-gcm') && row.includes(secretKeyId(Buffer.from(key, 'base64'))),
      );
    expect(sealedUnder('journal', KEY_A), 'events sealed under the first key').to.not.deep.equal([]);
    expect(sealedUnder('journal', KEY_B), 'events sealed again under the second').to.not.deep.equal([]);
    expect(sealedUnder('snapshots', KEY_B), "the key actor's snapshot").to.not.deep.equal([]);
    expect(rows.get('webhook_dead_letters'), 'dead letters were searched').to.not.deep.equal([]);

    expect(natsTraffic.length).to.be.greaterThan(0);
    const traffic = natsTraffic.join('\n');
    expect(traffic).to.include('aes-256-gcm', 'sealed values did travel (remote asks)');
    expect(traffic).to.not.include(PASSWORD);
    expect(traffic).to.not.include(signingSecret);
  });
});
