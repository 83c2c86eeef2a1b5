import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { call } from '../../helpers/http-fixture.js';
import { loadNumber, startCluster, type TestCluster } from '../../helpers/cluster.js';
import { kannelInstalled, startTestKannel, type TestKannel } from '../../helpers/kannel.js';
import { freePort } from '../../helpers/ports.js';
import { startTestSmsc, type TestSmsc } from '../../helpers/test-smsc.js';
import { eventually } from '../../helpers/eventually.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from '../cluster/cluster-checks.js';

interface RecipientView {
  readonly phone: string;
  readonly status: string;
  readonly carrier_status: string | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
}

const KANNEL_MAIN = fileURLToPath(new URL('../../../src/carriers/kannel/kannel-main.ts', import.meta.url));

/**
 * The whole way through the real Kannel: a gateway node in server mode (its own PostgreSQL and nats-server) →
 * `connector:kannel` (a child process) → smsbox → bearerbox → SMPP → the test SMSC, and the SMSC's receipt back
 * through bearerbox and smsbox to the connector's listener → receipt on NATS → GET /status and the merchant's
 * webhooks. The node runs the sandbox, whose dispatches all go to carrier `simulator`: the connector serves that
 * slug in place of the simulator process, so no pricing rows are needed.
 */
describe('Kannel connector end to end: gateway → connector:kannel → Kannel → SMPP → test SMSC → webhooks', function () {
  this.timeout(240_000);
  let cluster: TestCluster | null = null;
  let smsc: TestSmsc | null = null;
  let kannel: TestKannel | null = null;
  let connector: ChildProcess | null = null;
  let connectorOutput = '';
  let merchant: ClusterMerchant;

  before(async function () {
    if (!kannelInstalled()) {
      console.warn(
        'Kannel (/usr/sbin/bearerbox, /usr/sbin/smsbox) is not installed: Kannel end-to-end tests skipped (apt-get install kannel)',
      );
      this.skip();
    }
    this.timeout(180_000);
    // destinations ending 90 are undeliverable at this centre
    smsc = await startTestSmsc({
      outcomeFor: (destination) => (destination.endsWith('90') ? { stat: 'UNDELIV', err: '034' } : { stat: 'DELIVRD', err: '000' }),
    });
    // the listener refusing a report (NATS away) only loses nothing if smsbox calls again
    kannel = await startTestKannel({
      smsc: { host: '127.0.0.1', port: smsc.port, systemId: 'smsc', password: 'secret' },
      httpRequestRetry: 5,
    });
    await kannel.waitForSmscOnline();
    cluster = await startCluster({ nodes: 1, simulator: false, env: GENEROUS_RATE_LIMITS });
    merchant = (await seedMerchants(cluster, { count: 1, webhooks: true }))[0]!;
    const dlrPort = await freePort();
    connector = spawn(process.execPath, ['--import', 'tsx', KANNEL_MAIN], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        NATS_URL: cluster.nats.url,
        CONNECTOR_CARRIER: 'simulator',
        CONNECTOR_NAME: 'kannel-e2e',
        KANNEL_SENDSMS_HOST: kannel.sendsmsHost,
        KANNEL_SENDSMS_PORT: String(kannel.sendsmsPort),
        KANNEL_USERNAME: kannel.username,
        KANNEL_PASSWORD: kannel.password,
        // smsbox refuses a message without a sender unless its sendsms-user has a default-sender
        KANNEL_DEFAULT_SENDER: 'GATEWAY',
        KANNEL_DLR_HOST: '127.0.0.1',
        KANNEL_DLR_PORT: String(dlrPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      connectorOutput = (connectorOutput + chunk.toString()).slice(-20_000);
    };
    connector.stdout?.on('data', keep);
    connector.stderr?.on('data', keep);
    await eventually(
      () => Promise.resolve(connectorOutput.includes('connector ready') || connector?.exitCode !== null ? true : null),
      60_000,
      'connector:kannel ready',
      100,
    );
    expect(connector.exitCode, connectorOutput).to.equal(null);
  });

  after(async () => {
    if (connector && connector.exitCode === null) {
      const exited = new Promise((resolve) => connector?.once('exit', resolve));
      connector.kill('SIGTERM');
      await exited;
    }
    await cluster?.stop();
    await (merchant as ClusterMerchant | undefined)?.receiver?.close();
    await kannel?.stop();
    await smsc?.stop();
  });

  async function recipientsWhen(
    messageId: string,
    done: (recipients: readonly RecipientView[]) => boolean,
  ): Promise<readonly RecipientView[]> {
    const api = cluster!.node('node-1').api;
    let last = '';
    try {
      return await eventually(
        async () => {
          const answer = await call(`${api}/status/${messageId}`, { key: merchant.apiKey });
          last = answer.text;
          if (answer.status !== 200) return null;
          const recipients = (answer.body as { data: { recipients: RecipientView[] } }).data.recipients;
          return done(recipients) ? recipients : null;
        },
        90_000,
        `GET /status/${messageId}`,
        250,
      );
    } catch (error) {
      throw new Error(
        `${String(error)}\nlast answer: ${last}\n--- connector\n${connectorOutput.slice(-4_000)}\n--- kannel\n${kannel?.logs(40) ?? ''}`,
        { cause: error },
      );
    }
  }

  it('delivers through Kannel: the receipt comes back as delivered, a failed one as 1502, with Kannel’s words, and the webhooks follow', async () => {
    const delivered = loadNumber('00', 501);
    const undeliverable = loadNumber('90', 502);
    const text = 'Kannel end to end: €5 [ok]';
    const sent = await call(`${cluster!.node('node-1').api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      json: { to: [delivered, undeliverable], message: text, sender_id: 'ACME' },
    });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;

    const final = await recipientsWhen(messageId, (recipients) =>
      recipients.every((r) => r.status === 'delivered' || r.status === 'failed'),
    );
    const byPhone = new Map(final.map((r) => [r.phone, r]));
    expect(byPhone.get(delivered)).to.include({ status: 'delivered', carrier_status: 'kannel:1', error_code: null });
    expect(byPhone.get(undeliverable)).to.include({ status: 'failed', error_code: '1502', carrier_status: 'kannel:2 UNDELIV err:034' });

    // the message centre got the text as sent, from the merchant's sender
    expect(smsc!.messagesTo(delivered.slice(1))).to.deep.equal([text]);
    expect(smsc!.submits.find((part) => part.destination === delivered.slice(1))?.sourceAddr).to.equal('ACME');

    const receiver = merchant.receiver!;
    const events = await receiver.waitFor(
      () => {
        const ofMessage = receiver.events().filter((e) => e.message_id === messageId);
        const terminal = ofMessage.filter((e) => e.event_type === 'sms.delivered' || e.event_type === 'sms.failed');
        return terminal.length >= 2 ? terminal : null;
      },
      60_000,
      'terminal webhooks of both recipients',
    );
    expect(events.map((e) => `${String(e.data.recipient_phone)} ${e.event_type}`)).to.have.members([
      `${delivered} sms.delivered`,
      `${undeliverable} sms.failed`,
    ]);
  });

  it('carries UCS-2 text and a 3-part message through Kannel intact', async () => {
    const unicode = loadNumber('00', 503);
    const long = loadNumber('00', 504);
    const unicodeText = 'Mbote! Привет 你好 🙂';
    const longText = Array.from({ length: 40 }, (_, i) => `part${i}`)
      .join(' ')
      .padEnd(400, '.');
    for (const [to, message] of [
      [unicode, unicodeText],
      [long, longText],
    ] as const) {
      const sent = await call(`${cluster!.node('node-1').api}/send`, { method: 'POST', key: merchant.apiKey, json: { to: [to], message } });
      expect(sent.status, sent.text).to.equal(201);
      const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
      const [recipient] = await recipientsWhen(messageId, (recipients) =>
        recipients.every((r) => r.status === 'delivered' || r.status === 'failed'),
      );
      expect(recipient, JSON.stringify(recipient)).to.include({ status: 'delivered' });
    }
    expect(smsc!.messagesTo(unicode.slice(1))).to.deep.equal([unicodeText]);
    expect(smsc!.submits.filter((part) => part.destination === unicode.slice(1)).map((part) => part.dataCoding)).to.deep.equal([8]);
    expect(smsc!.messagesTo(long.slice(1))).to.deep.equal([longText]);
    expect(smsc!.submits.filter((part) => part.destination === long.slice(1))).to.have.length(3);
  });
});
