import { expect } from 'chai';
import type { Receipt } from '../../../src/carriers/carrier-protocol.js';
import type { Gateway } from '../../../src/gateway.js';
import { gatewayOnPostgres, outboxEvents, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventsOf, isWebhookOutboxPayload, WEBHOOK_TOPIC } from '../../../src/webhooks/webhook-jobs.js';
import { startWebhookReceiver, type WebhookEnvelope, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import { numberEnding, send, startPipeline, statusOf, type Pipeline } from './pipeline-fixture.js';

/**
 * A message's webhook events are recorded (outbox entries, carried out by the relay) only when they can go somewhere:
 * the key's webhook as its actor knows it when the event occurs, or the message's callback_url (webhook-presence.ts).
 */
describe('webhook events are recorded when they can go somewhere', function () {
  this.timeout(60_000);

  describe('in the outbox of PostgreSQL (a node without transport keeps what it records)', () => {
    let gateway: Gateway;
    let shop: SeededMerchant;

    before(async () => {
      gateway = await gatewayOnPostgres(await (await testPostgres()).createDatabase('event_recording'));
      shop = await seedMerchant(gateway, { prepaid: '100' });
    });
    after(async () => {
      await gateway.stop();
    });

    async function sendWith(extra: Record<string, unknown>): Promise<string> {
      const result = await gateway.useCases.sendMessage({
        merchantId: shop.merchantId,
        keyId: shop.keyId,
        body: { to: ['+243812345600'], message: 'Your code is 123456', ...extra },
        idempotencyKey: null,
      });
      if (!result.ok) throw result.error;
      return result.value.receipt.message_id;
    }

    const recorded = async (messageId: string): Promise<string[]> =>
      (await outboxEvents(gateway, messageId)).map((event) => event.event_type);

    const deliver = (messageId: string) =>
      gateway.router
        .message(shop.merchantId, messageId)
        .ask({ type: 'apply_receipt', receipt: { occurrence: 0, recipient: 0, status: 'delivered', at: Date.now() } });

    it('when the key has no webhook and the message no callback_url, then nothing is written for its events, and the message is delivered all the same', async () => {
      const id = await sendWith({});
      expect(await deliver(id)).to.deep.include({ ok: true, changed: true });
      expect(await recorded(id)).to.deep.equal([]);
      const status = await gateway.useCases.getStatus(shop.merchantId, id);
      expect(status.found && status.view.recipients[0]?.status).to.equal('delivered');
    });

    it('when the message has a callback_url, then its events are written', async () => {
      const id = await sendWith({ callback_url: 'https://shop.example/callback' });
      await deliver(id);
      expect(await recorded(id)).to.include.members(['sms.queued', 'sms.delivered']);
    });

    it("when one receipt yields several events, then the record's events are one outbox row, in order, under the first event's id", async () => {
      const id = await sendWith({ callback_url: 'https://shop.example/callback' });
      // delivered first: processing, sent and delivered at once
      await deliver(id);
      const entries = (await gateway.persistence.outbox.pending({ limit: 10_000, topics: [WEBHOOK_TOPIC] })).filter(
        (entry) => isWebhookOutboxPayload(entry.payload) && eventsOf(entry.payload)[0]?.message_id === id,
      );
      const rows = entries
        .map((entry) => (isWebhookOutboxPayload(entry.payload) ? eventsOf(entry.payload) : []))
        .map((events) => events.map((e) => e.event_type));
      expect(rows).to.have.deep.members([['sms.queued'], ['sms.processing', 'sms.sent', 'sms.delivered']]);
      for (const entry of entries)
        expect(entry.id).to.equal(isWebhookOutboxPayload(entry.payload) ? eventsOf(entry.payload)[0]?.event_id : null);
    });
  });

  describe('end to end (HTTP, NATS, PostgreSQL; the test is the connector)', () => {
    let pipeline: Pipeline;
    let hooks: WebhookReceiver;
    let shop: SeededMerchant;

    before(async () => {
      pipeline = await startPipeline({}, { inProcessSimulator: false });
      hooks = await startWebhookReceiver({ path: '/hooks' });
      shop = await seedMerchant(pipeline.api.node.gateway, { prepaid: '100' });
    });
    after(async () => {
      await hooks.close();
      await pipeline.stop();
    });

    const receipt = (messageId: string, status: Receipt['status']): Receipt => ({
      version: 1,
      receipt_id: `${messageId}:0:0:${status}`,
      dispatch_id: `${messageId}:0:0`,
      status,
      occurred_at: new Date().toISOString(),
    });
    const publish = (r: Receipt): Promise<void> => pipeline.transport.publish('sms.receipts.simulator', r, { id: r.receipt_id });
    const eventsOf = (messageId: string): string[] =>
      hooks.requests
        .map((request) => request.body as WebhookEnvelope)
        .filter((event) => event.message_id === messageId)
        .map((event) => event.event_type);

    it('when the webhook is set while a message is under way, then the events after it are delivered and those before it never were', async () => {
      const id = (await send(pipeline.client, shop.apiKey, [numberEnding('00')])).message_id;
      await publish(receipt(id, 'accepted'));
      await eventually(
        async () => (await statusOf(pipeline.client, shop.apiKey, id)).recipients[0]?.carrier_status === 'accepted',
        10_000,
        'sent',
      );

      const gateway = pipeline.api.node.gateway;
      expect(await gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: hooks.url, username: null, password: null })).to.equal(true);
      await publish(receipt(id, 'delivered'));
      await hooks.waitFor(
        (requests) => requests.some((r) => (r.body as WebhookEnvelope).event_type === 'sms.delivered'),
        10_000,
        'sms.delivered',
      );

      // a later message from the same key: every event from its queued on
      const next = (await send(pipeline.client, shop.apiKey, [numberEnding('01')])).message_id;
      await publish(receipt(next, 'delivered'));
      await hooks.waitFor(() => eventsOf(next).includes('sms.delivered'), 10_000, 'the second message delivered');
      expect(eventsOf(id)).to.deep.equal(['sms.delivered']);
      expect(eventsOf(next)[0]).to.equal('sms.queued');
    });
  });
});
