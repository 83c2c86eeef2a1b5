import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { CarrierStatus } from '../../../src/carriers/carrier-outcomes.js';
import { failureMessage } from '../../../src/carriers/carrier-outcomes.js';
import type { Gateway } from '../../../src/gateway.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { RECEIPT_TIMEOUT_TOPIC } from '../../../src/messaging/receipt-deadlines.js';
import type { RecipientView } from '../../../src/messaging/message-view.js';
import type { WebhookEvent } from '../../../src/webhooks/event-envelope.js';
import { client, dataOf, type SendData } from '../../helpers/api-helpers.js';
import { gatewayOnPostgres, outboxEvents, seedMerchant, testConfig, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually, iso, playJob, statusOf } from './scheduling-fixture.js';

const RECEIPT_TIMEOUT_MS = testConfig().scheduling.receiptTimeoutMs;
const SECOND = 1_000;
const TIMEOUT_MESSAGE = failureMessage('1503');

const failedEvents = (events: readonly WebhookEvent[]) => events.filter((e) => e.event_type === 'sms.failed');

/** The receipt deadlines of a message still in the outbox. */
async function deadlinesOf(gateway: Gateway, messageId: string): Promise<string[]> {
  const entries = await gateway.persistence.outbox.pending({ limit: 10_000, topics: [RECEIPT_TIMEOUT_TOPIC] });
  return entries.map((entry) => entry.id).filter((id) => id.startsWith(`timeout:${messageId}:`));
}
const phoneOf = (event: WebhookEvent): string | null => ('recipient_phone' in event.data ? event.data.recipient_phone : null);

describe('the 24-hour receipt timeout (1503)', function () {
  this.timeout(60_000);
  let url: string;

  before(async () => {
    url = await (await testPostgres()).createDatabase('receipt_timeout');
  });

  describe('with receipts given by hand', () => {
    // 2026-06-01 12:00 UTC
    const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
    const clock = createManualClock(T0);
    let gateway: Gateway;
    let shop: SeededMerchant;

    before(async () => {
      // no transport: dispatches and webhook events stay in the outbox, where the test reads them; the relay is
      // not started, the test drains it
      gateway = await gatewayOnPostgres(url, { clock });
      shop = await seedMerchant(gateway, { prepaid: '100' });
      // events are recorded only when they can go somewhere: the key has a webhook (never called here)
      expect(
        await gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: 'https://shop.example/hooks', username: null, password: null }),
      ).to.equal(true);
    });
    beforeEach(() => {
      clock.set(T0);
    });
    after(async () => {
      await gateway.stop();
    });

    async function send(body: Record<string, unknown>): Promise<string> {
      const result = await gateway.useCases.sendMessage({ merchantId: shop.merchantId, keyId: shop.keyId, body, idempotencyKey: null });
      if (!result.ok) throw result.error;
      return result.value.receipt.message_id;
    }

    async function receipt(id: string, occurrence: number, recipient: number, status: CarrierStatus, at: number) {
      const reply = await gateway.router
        .message(shop.merchantId, id)
        .ask({ type: 'apply_receipt', receipt: { occurrence, recipient, status, at } });
      if (!reply.ok) throw new Error(reply.code);
      return reply;
    }

    async function recipients(id: string): Promise<readonly RecipientView[]> {
      const status = await gateway.useCases.getStatus(shop.merchantId, id);
      if (!status.found) throw new Error(`${id} not found`);
      return status.view.recipients;
    }

    const brief = (r: RecipientView) => [r.status, r.carrier_status, r.error_code];

    it('when 24 hours pass after the dispatch, then every recipient without a final receipt fails with 1503 (sms.failed, retryable) and the others are untouched; not a millisecond earlier', async () => {
      const id = await send({
        to: ['+243812345697', '+243812345678', '+243812345601', '+243812345602', '+243812345690'],
        message: 'timeout',
      });
      const step = 1_000;
      // 0: accepted, then nothing; 1: delivered; 2: picked up only; 3: nothing at all; 4: undelivered (final)
      for (const status of ['processing', 'accepted'] as const) await receipt(id, 0, 0, status, T0 + step);
      for (const status of ['processing', 'accepted', 'enroute', 'delivered'] as const) await receipt(id, 0, 1, status, T0 + step);
      await receipt(id, 0, 2, 'processing', T0 + step);
      for (const status of ['processing', 'accepted', 'undelivered'] as const) await receipt(id, 0, 4, status, T0 + step);
      const before = [
        ['sent', 'accepted', null],
        ['delivered', 'delivered', null],
        ['processing', 'processing', null],
        ['pending', null, null],
        ['failed', 'undelivered', '1502'],
      ];
      expect((await recipients(id)).map(brief)).to.deep.equal(before);
      const eventsBefore = await outboxEvents(gateway, id);

      for (const early of [SECOND, 1]) {
        clock.set(T0 + RECEIPT_TIMEOUT_MS - early);
        await gateway.relay.drain();
        expect((await recipients(id)).map(brief), `${early} ms before 24 h`).to.deep.equal(before);
      }
      expect(await outboxEvents(gateway, id)).to.have.length(eventsBefore.length);

      clock.set(T0 + RECEIPT_TIMEOUT_MS);
      await gateway.relay.drain();
      const after = await recipients(id);
      const failedAt = iso(T0 + RECEIPT_TIMEOUT_MS);
      expect(after.map(brief)).to.deep.equal([
        ['failed', 'accepted', '1503'],
        ['delivered', 'delivered', null],
        ['failed', 'processing', '1503'],
        ['failed', null, '1503'],
        ['failed', 'undelivered', '1502'],
      ]);
      for (const index of [0, 2, 3])
        expect(after[index], `recipient ${index}`).to.deep.include({ error_message: TIMEOUT_MESSAGE, failed_at: failedAt });
      expect(after[1]).to.deep.include({ delivered_at: iso(T0 + step), failed_at: null });
      const status = await gateway.useCases.getStatus(shop.merchantId, id);
      expect(status.found && status.view).to.deep.include({ status: 'delivered', delivered: 1, failed: 4, pending: 0 });

      const timeouts = failedEvents(await outboxEvents(gateway, id)).filter((e) => e.data.error_code === '1503');
      expect(timeouts.map((e) => e.data).sort((a, b) => a.recipient_index - b.recipient_index)).to.deep.equal(
        [0, 2, 3].map((index) => ({
          recipient_phone: `+2438123456${['97', '78', '01', '02', '90'][index]!}`,
          carrier: 'simulator',
          recipient_index: index,
          failed_at: failedAt,
          error_code: '1503',
          error_message: TIMEOUT_MESSAGE,
          retryable: true,
        })),
      );
    });

    it('when the last recipient of an occurrence gets its final receipt, then the occurrence’s deadline leaves the outbox with it, and 24 h later nothing happens', async () => {
      const id = await send({ to: ['+243812345697', '+243812345678'], message: 'final' });
      expect(await deadlinesOf(gateway, id), 'left with the dispatch').to.deep.equal([`timeout:${id}:0`]);
      await receipt(id, 0, 0, 'delivered', T0 + SECOND);
      await receipt(id, 0, 1, 'accepted', T0 + SECOND);
      expect(await deadlinesOf(gateway, id), 'one recipient still waits').to.deep.equal([`timeout:${id}:0`]);

      await receipt(id, 0, 1, 'undelivered', T0 + 2 * SECOND);
      expect(await deadlinesOf(gateway, id)).to.deep.equal([]);
      const final = await recipients(id);
      const events = await outboxEvents(gateway, id);

      clock.set(T0 + RECEIPT_TIMEOUT_MS);
      await gateway.relay.drain();
      expect(await recipients(id)).to.deep.equal(final);
      expect(await outboxEvents(gateway, id)).to.deep.equal(events);
    });

    it('when a receipt arrives after the timeout, or the timeout is carried out again, then nothing changes and nothing is emitted', async () => {
      const id = await send({ to: ['+243812345697'], message: 'late' });
      await receipt(id, 0, 0, 'processing', T0 + SECOND);
      await receipt(id, 0, 0, 'accepted', T0 + 2 * SECOND);
      clock.set(T0 + RECEIPT_TIMEOUT_MS);
      await gateway.relay.drain();
      const timedOut = await recipients(id);
      expect(timedOut.map(brief)).to.deep.equal([['failed', 'accepted', '1503']]);
      const events = await outboxEvents(gateway, id);

      clock.advance(5 * 60 * SECOND);
      expect(await receipt(id, 0, 0, 'delivered', clock.now())).to.deep.equal({ ok: true, changed: false, events: [] });
      expect(await gateway.router.message(shop.merchantId, id).ask({ type: 'receipt_timeout', occurrence: 0 })).to.deep.equal({
        ok: true,
        failed: 0,
      });
      await gateway.relay.drain();

      expect(await recipients(id)).to.deep.equal(timedOut);
      expect(await outboxEvents(gateway, id)).to.deep.equal(events);
      expect(failedEvents(events)).to.have.length(1);
    });

    it('when a schedule dispatches two occurrences 12 hours apart, then each one times out 24 hours after its own dispatch', async () => {
      // 2026-06-02 09:00 and 21:00 in Kinshasa: 08:00 and 20:00 UTC
      const id = await send({
        to: ['+243812345697'],
        message: 'twice',
        sending_type: 'scheduled',
        scheduled_dates: [
          { date: '2026-06-02', time: '09:00' },
          { date: '2026-06-02', time: '21:00' },
        ],
      });
      const first = Date.UTC(2026, 5, 2, 8);
      const second = Date.UTC(2026, 5, 2, 20);
      clock.set(first);
      expect(await playJob(gateway, shop.merchantId, id)).to.deep.equal({ dispatched: [0], next: iso(second) });
      clock.set(second);
      expect(await playJob(gateway, shop.merchantId, id)).to.deep.equal({ dispatched: [1], next: null });

      clock.set(first + RECEIPT_TIMEOUT_MS);
      await gateway.relay.drain();
      const view = async () => {
        const status = await gateway.useCases.getStatus(shop.merchantId, id);
        if (!status.found) throw new Error('not found');
        return status.view;
      };
      expect((await view()).occurrences.map((o) => [o.status, o.failed, o.pending])).to.deep.equal([
        ['failed', 1, 0],
        ['pending', 0, 1],
      ]);
      // recipients[] is the latest occurrence: still waiting
      expect((await view()).recipients.map(brief)).to.deep.equal([['pending', null, null]]);

      clock.set(second + RECEIPT_TIMEOUT_MS - SECOND);
      await gateway.relay.drain();
      expect((await view()).occurrences[1]?.status).to.equal('pending');
      clock.set(second + RECEIPT_TIMEOUT_MS);
      await gateway.relay.drain();
      expect((await view()).occurrences.map((o) => o.status)).to.deep.equal(['failed', 'failed']);

      const failed = failedEvents(await outboxEvents(gateway, id)).sort(
        (a, b) => Number(a.data.occurrence_index) - Number(b.data.occurrence_index),
      );
      expect(
        failed.map((e) => [e.data.occurrence_index, e.data.scheduled_at, e.data.failed_at, e.data.error_code, e.data.retryable]),
      ).to.deep.equal([
        [0, iso(first), iso(first + RECEIPT_TIMEOUT_MS), '1503', true],
        [1, iso(second), iso(second + RECEIPT_TIMEOUT_MS), '1503', true],
      ]);
    });
  });

  describe('end to end with the sandbox simulator (ending 97: processing, accepted, then nothing)', () => {
    const clock = createManualClock(Date.now());
    let fixture: ApiFixture;
    let receiver: Server;
    const received: WebhookEvent[] = [];
    const http = client(() => fixture.api);

    before(async () => {
      receiver = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          received.push(JSON.parse(body) as WebhookEvent);
          response.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      fixture = await startApi(url, { clock, inProcessSimulator: true });
    });
    after(async () => {
      await fixture.stop();
      await new Promise((resolve) => receiver.close(resolve));
    });

    it('when the carrier never sends the final receipt, then after 24 h of gateway time the recipient fails with 1503 and sms.failed is delivered; the delivered one is untouched', async () => {
      const shop = await seedMerchant(fixture.node.gateway, { prepaid: '10' });
      const callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      const sent = dataOf<SendData>(
        await http.send(shop.apiKey, { to: ['+243812345697', '+243812345678'], message: 'e2e', callback_url: callback }),
        201,
      );
      const id = sent.message_id;
      const eventsOf = (type: string, phone: string) =>
        received.filter((e) => e.message_id === id && e.event_type === type && phoneOf(e) === phone);

      await eventually('the simulator receipts and their webhooks', 15_000, async () => {
        const status = await statusOf(http, shop.apiKey, id);
        const settled = status.recipients[0]?.carrier_status === 'accepted' && status.recipients[1]?.status === 'delivered';
        return settled && eventsOf('sms.sent', '+243812345697').length === 1 && eventsOf('sms.delivered', '+243812345678').length === 1
          ? true
          : undefined;
      });
      const dispatchedAt = clock.now();
      expect(await deadlinesOf(fixture.node.gateway, id), 'the deadline waits for the silent recipient').to.deep.equal([`timeout:${id}:0`]);

      clock.set(dispatchedAt + RECEIPT_TIMEOUT_MS - SECOND);
      await fixture.node.gateway.relay.drain();
      expect((await statusOf(http, shop.apiKey, id)).recipients.map((r) => r.status)).to.deep.equal(['sent', 'delivered']);

      clock.set(dispatchedAt + RECEIPT_TIMEOUT_MS);
      await fixture.node.gateway.relay.drain();
      const status = await statusOf(http, shop.apiKey, id);
      expect(status).to.deep.include({ status: 'delivered', delivered: 1, failed: 1, pending: 0 });
      expect(status.recipients[0]).to.deep.include({
        status: 'failed',
        carrier_status: 'accepted',
        error_code: '1503',
        error_message: TIMEOUT_MESSAGE,
      });
      expect(status.recipients[1]).to.deep.include({ status: 'delivered', error_code: null, failed_at: null });

      const failed = await eventually('sms.failed at the callback', 10_000, async () => {
        const events = eventsOf('sms.failed', '+243812345697');
        return Promise.resolve(events.length > 0 ? events : undefined);
      });
      expect(failed).to.have.length(1);
      expect(failed[0]!.data).to.deep.include({
        error_code: '1503',
        retryable: true,
        failed_at: iso(dispatchedAt + RECEIPT_TIMEOUT_MS),
        recipient_index: 0,
      });
      // HTTP delivery order is not guaranteed: the set of events is
      expect(
        received
          .filter((e) => e.message_id === id && phoneOf(e) === '+243812345678')
          .map((e) => e.event_type)
          .sort(),
      ).to.deep.equal(['sms.delivered', 'sms.processing', 'sms.sent']);
    });

    it('when the carrier delivers every recipient, then no deadline is left in the outbox for the message', async () => {
      const shop = await seedMerchant(fixture.node.gateway, { prepaid: '10' });
      const id = dataOf<SendData>(
        await http.send(shop.apiKey, { to: ['+243812345678', '+243812345679'], message: 'delivered' }),
        201,
      ).message_id;
      await eventually('both delivered', 15_000, async () => {
        const status = await statusOf(http, shop.apiKey, id);
        return status.recipients.every((r) => r.status === 'delivered') ? true : undefined;
      });
      expect(await deadlinesOf(fixture.node.gateway, id)).to.deep.equal([]);
    });
  });
});
