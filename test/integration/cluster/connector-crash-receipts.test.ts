import { expect } from 'chai';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';
import { seedMerchant } from '../../helpers/gateway-fixture.js';
import { call } from '../../helpers/http-fixture.js';
import { startWebhookReceiver, type WebhookEnvelope, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

/** The gateway's failure of a recipient with no final receipt in time (docs/carrier-protocol.md §7). */
const RECEIPT_TIMEOUT_CODE = '1503';
const RECEIPT_TIMEOUT_MS = 6_000;

/**
 * A connector that dies after a recipient's `accepted` and before its final receipt takes that receipt with it (the
 * simulator plans its receipts in memory, as a carrier could lose a delivery report). The gateway still ends the
 * recipient: its receipt timeout fails it with 1503 and the merchant's webhook hears `sms.failed`, on a real cluster
 * (node process, nats-server, PostgreSQL, the simulator process SIGKILLed).
 */
describe('cluster: a final receipt lost with its connector', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let receiver: WebhookReceiver;

  before(async function () {
    this.timeout(120_000);
    cluster = await startCluster({ nodes: 1, env: { RECEIPT_TIMEOUT_MS: String(RECEIPT_TIMEOUT_MS) } });
    receiver = await startWebhookReceiver();
  });

  after(async () => {
    await (receiver as WebhookReceiver | undefined)?.close();
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when the simulator is SIGKILLed between accepted and the final receipt, then the receipt timeout ends the recipient with sms.failed 1503', async () => {
    const shop = await seedMerchant(cluster.operator, { name: 'Crash shop', prepaid: '10' });
    expect(await cluster.operator.useCases.apiKeys.setWebhook(shop.keyId, { url: receiver.url, username: null, password: null })).to.equal(
      true,
    );
    const node = cluster.running()[0]!;
    // ending 98: processing, accepted and enroute at once, the final delivered seconds later (the slow delay)
    const sent = await call(`${node.api}/send`, {
      method: 'POST',
      key: shop.apiKey,
      json: { to: ['+2438100042098'], message: 'slow to deliver' },
    });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
    const ofMessage = (type: string): WebhookEnvelope[] =>
      receiver.events().filter((e) => e.message_id === messageId && e.event_type === type);

    await receiver.waitFor(() => ofMessage('sms.sent').length > 0, 60_000, 'sms.sent');
    await cluster.stopSimulator('SIGKILL');
    expect(ofMessage('sms.delivered'), 'delivered before the kill').to.have.length(0);

    const failed = await receiver.waitFor(() => ofMessage('sms.failed')[0], 60_000, 'sms.failed after the receipt timeout');
    expect(failed.data.error_code).to.equal(RECEIPT_TIMEOUT_CODE);
    expect(failed.data.recipient_index).to.equal(0);
    expect(ofMessage('sms.delivered')).to.have.length(0);
  });
});
