import { expect } from 'chai';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { NO_NAMESPACE } from '../../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { createConnectorRuntime, type ConnectorRuntime } from '../../../src/carriers/connector/connector-runtime.js';
import { call } from '../../helpers/http-fixture.js';
import { loadNumber, startCluster, type TestCluster } from '../../helpers/cluster.js';
import { FakeCarrierLink } from '../../helpers/fake-carrier-link.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from '../cluster/cluster-checks.js';

interface RecipientView {
  readonly phone: string;
  readonly status: string;
  readonly carrier_status: string | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
}

/**
 * A gateway node in server mode (its own nats-server, PostgreSQL) whose carrier `simulator` is served by the
 * connector runtime with a fake link instead of the simulator process: the gateway sees the connector only
 * through the protocol's streams.
 */
describe('connector runtime as the carrier of a gateway node', function () {
  this.timeout(240_000);
  let cluster: TestCluster;
  let merchant: ClusterMerchant;
  let runtime: ConnectorRuntime;
  let closeConnector: () => Promise<void> = () => Promise.resolve();
  const link = new FakeCarrierLink('smsc');

  before(async function () {
    this.timeout(180_000);
    cluster = await startCluster({ nodes: 1, simulator: false, env: GENEROUS_RATE_LIMITS });
    merchant = (await seedMerchants(cluster, { count: 1 }))[0]!;
    const transport = await connectNatsTransport({ servers: cluster.nats.url, name: 'connector-fake' });
    const nc = await connectNats({ servers: [cluster.nats.url] });
    runtime = createConnectorRuntime({
      carrier: 'simulator',
      name: 'fake',
      priority: 1,
      weight: 1,
      link,
      nats: nc,
      names: NO_NAMESPACE,
      transport,
      logger: createLogger({ level: 'silent' }),
    });
    await runtime.start();
    closeConnector = async () => {
      await runtime.stop();
      await transport.close();
      await nc.close();
    };
  });

  after(async () => {
    await closeConnector();
    await (cluster as TestCluster | undefined)?.stop();
    await merchant.receiver?.close();
  });

  async function recipientsWhen(
    messageId: string,
    done: (recipients: readonly RecipientView[]) => boolean,
  ): Promise<readonly RecipientView[]> {
    const deadline = Date.now() + 60_000;
    let last: string;
    for (;;) {
      const answer = await call(`${cluster.node('node-1').api}/status/${messageId}`, { key: merchant.apiKey });
      last = answer.text;
      if (answer.status === 200) {
        const recipients = (answer.body as { data: { recipients: RecipientView[] } }).data.recipients;
        if (done(recipients)) return recipients;
      }
      if (Date.now() > deadline) throw new Error(`GET /status/${messageId} never reached the expected state: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it('sends through the link, and the delivery reports reach GET /status with the carrier error', async () => {
    const to = [loadNumber('00', 71), loadNumber('00', 72)];
    const sent = await call(`${cluster.node('node-1').api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      json: { to, message: 'connector runtime end to end' },
    });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;

    const handedOver = await recipientsWhen(messageId, (recipients) => recipients.every((r) => r.status === 'sent'));
    expect(handedOver.map((r) => r.carrier_status)).to.deep.equal(['accepted', 'accepted']);
    expect(link.submissions.map((s) => s.to)).to.have.members(to);

    const referenceOf = (phone: string): string => `smsc-${link.submissions.findIndex((s) => s.to === phone) + 1}`;
    await link.report(referenceOf(to[0]!), 'delivered');
    await link.report(referenceOf(to[1]!), 'undelivered', '001');

    const final = await recipientsWhen(messageId, (recipients) =>
      recipients.every((r) => r.status === 'delivered' || r.status === 'failed'),
    );
    const byPhone = new Map(final.map((r) => [r.phone, r]));
    expect(byPhone.get(to[0]!)).to.include({ status: 'delivered', carrier_status: 'delivered' });
    expect(byPhone.get(to[1]!)).to.include({
      status: 'failed',
      carrier_status: 'undelivered',
      error_code: '1502',
      error_message: 'Undelivered (carrier error 001)',
    });
    expect(runtime.stats().jobsAccepted).to.equal(2);
  });
});
