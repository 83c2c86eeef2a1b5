import { expect } from 'chai';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import { startWebhookReceiver, type WebhookEnvelope, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import {
  expectEnvelope,
  expectedEventTypes,
  expectedFinalStatus,
  isSettled,
  ISO_UTC,
  merchantWithWebhook,
  numberEnding,
  recipientEventTypes,
  send,
  startPipeline,
  statusOf,
  uniqueEvents,
  type MessageStatus,
  type Pipeline,
  type WebhookMerchant,
} from './pipeline-fixture.js';

/** Every simulator ending (docs/carrier-protocol.md §11) and what the recipient ends with (README "Interpretations"). */
const OUTCOMES: readonly {
  readonly ending: string;
  readonly carrierStatus: string;
  readonly errorCode: string | null;
  readonly retryable: boolean | null;
  readonly errorMessage?: string;
}[] = [
  { ending: '00', carrierStatus: 'delivered', errorCode: null, retryable: null },
  { ending: '90', carrierStatus: 'undelivered', errorCode: '1502', retryable: true },
  { ending: '91', carrierStatus: 'rejected', errorCode: '1504', retryable: false },
  { ending: '92', carrierStatus: 'expired', errorCode: '1505', retryable: true },
  { ending: '93', carrierStatus: 'delivery_unknown', errorCode: '1506', retryable: true },
  { ending: '94', carrierStatus: 'partially_delivered', errorCode: '1507', retryable: false },
  { ending: '95', carrierStatus: 'failed', errorCode: '1502', retryable: true, errorMessage: 'Subscriber unreachable' },
  { ending: '96', carrierStatus: 'failed', errorCode: '1501', retryable: false },
  { ending: '97', carrierStatus: 'accepted', errorCode: null, retryable: null },
  { ending: '98', carrierStatus: 'delivered', errorCode: null, retryable: null },
  { ending: '99', carrierStatus: 'delivered', errorCode: null, retryable: null },
  { ending: '89', carrierStatus: 'delivered', errorCode: null, retryable: null },
];

const CATALOGUE_TEXT = new Map<string, string>(
  Object.values(ERROR_CATALOGUE).map((entry) => [entry.code as string, entry.message as string]),
);

describe('pipeline: every simulator outcome end to end (HTTP → NATS → simulator → receipts → webhooks)', function () {
  this.timeout(60_000);
  let pipeline: Pipeline;
  let hooks: WebhookReceiver;
  let callbacks: WebhookReceiver;
  let merchant: WebhookMerchant;
  let messageId: string;
  let sameUrlMessageId: string;
  let finalStatus: MessageStatus;
  const numbers = OUTCOMES.map((o) => numberEnding(o.ending));
  /** 1 sms.queued + one event per state each recipient passes through. */
  const expectedCount = 1 + OUTCOMES.reduce((n, o) => n + expectedEventTypes(o.ending).length, 0);

  const eventsOf = (receiver: WebhookReceiver, id: string): WebhookEnvelope[] => receiver.events().filter((e) => e.message_id === id);

  before(async () => {
    pipeline = await startPipeline();
    hooks = await startWebhookReceiver({ path: '/hooks' });
    callbacks = await startWebhookReceiver({ path: '/callback' });
    merchant = await merchantWithWebhook(pipeline.api.node.gateway, hooks.url, 'Outcomes');
    // the big one, with a callback_url of its own; and one whose callback_url is the key's webhook_url
    messageId = (await send(pipeline.client, merchant.apiKey, numbers, { callback_url: callbacks.url })).message_id;
    sameUrlMessageId = (await send(pipeline.client, merchant.apiKey, [numberEnding('00', '+2438123457')], { callback_url: hooks.url }))
      .message_id;

    finalStatus = await eventually(
      async () => {
        const status = await statusOf(pipeline.client, merchant.apiKey, messageId);
        return status.recipients.every(isSettled) ? status : null;
      },
      20_000,
      'every recipient settled',
    );
    const distinct = (receiver: WebhookReceiver, id: string, n: number) => () =>
      new Set(eventsOf(receiver, id).map((e) => e.event_id)).size >= n;
    await hooks.waitFor(distinct(hooks, messageId, expectedCount), 20_000, `${expectedCount} events of the message on the webhook_url`);
    await callbacks.waitFor(
      distinct(callbacks, messageId, expectedCount),
      20_000,
      `${expectedCount} events of the message on the callback_url`,
    );
    await hooks.waitFor(distinct(hooks, sameUrlMessageId, 4), 20_000, '4 events of the same-URL message');
  });

  after(async () => {
    await pipeline.stop();
    await hooks.close();
    await callbacks.close();
  });

  it('when the message has settled, then GET /status gives each recipient the status, carrier_status and error_code of its outcome', () => {
    expect(finalStatus.total_recipients).to.equal(OUTCOMES.length);
    // 00, 98, 99, 89 delivered; 90–96 failed; 97 still sent (no final receipt within the 24 h window)
    expect({ delivered: finalStatus.delivered, failed: finalStatus.failed, pending: finalStatus.pending }).to.deep.equal({
      delivered: 4,
      failed: 7,
      pending: 1,
    });
    expect(finalStatus.status).to.equal('sent');
    const seen = finalStatus.recipients.map((r) => ({
      index: r.recipient_index,
      phone: r.phone,
      status: r.status,
      carrier_status: r.carrier_status,
      error_code: r.error_code,
      carrier: r.carrier,
    }));
    expect(seen).to.deep.equal(
      OUTCOMES.map((o, i) => ({
        index: i,
        phone: numbers[i],
        status: expectedFinalStatus(o.ending),
        carrier_status: o.carrierStatus,
        error_code: o.errorCode,
        carrier: 'simulator',
      })),
    );
    for (const [i, o] of OUTCOMES.entries()) {
      const r = finalStatus.recipients[i]!;
      const text = o.errorCode === null ? null : (o.errorMessage ?? CATALOGUE_TEXT.get(o.errorCode));
      expect(r.error_message, o.ending).to.equal(text);
      expect(r.sent_at === null, `${o.ending} sent_at`).to.equal(!expectedEventTypes(o.ending).includes('sms.sent'));
      expect(r.delivered_at === null, `${o.ending} delivered_at`).to.equal(r.status !== 'delivered');
      expect(r.failed_at === null, `${o.ending} failed_at`).to.equal(r.status !== 'failed');
    }
  });

  it('when the events arrive, then each has exactly the contract envelope, a unique UUID v4 event_id and the data keys of its type', () => {
    const received = eventsOf(hooks, messageId);
    for (const event of received) expectEnvelope(event);
    // a 200 receiver gets every event exactly once
    expect(received).to.have.length(expectedCount);
    expect(new Set(received.map((e) => e.event_id)).size).to.equal(expectedCount);
    for (const request of hooks.requests) {
      expect(request.method).to.equal('POST');
      expect(request.path).to.equal('/hooks');
      expect(request.headers['content-type']).to.match(/^application\/json/);
    }
  });

  it('when the message is queued, then exactly one sms.queued is emitted, before every recipient event, with the send result', () => {
    const events = uniqueEvents(eventsOf(hooks, messageId));
    const queued = events.filter((e) => e.event_type === 'sms.queued');
    expect(queued).to.have.length(1);
    const first = queued[0]!;
    expect(first.data).to.deep.equal({
      total_recipients: OUTCOMES.length,
      total_messages: OUTCOMES.length,
      // 243/81 is priced 0.02 by seedMerchant
      total_cost: 0.24,
      currency: 'USD',
      scheduled_at: null,
    });
    // HTTP arrival order is not guaranteed (contract): "first" is the emission order
    for (const e of events) expect(Date.parse(e.timestamp), e.event_type).to.be.at.least(Date.parse(first.timestamp));
  });

  it("when each outcome plays out, then the recipient's webhook sequence is exactly its lifecycle (91 rejected: processing then failed, 97: no event after sent)", () => {
    const events = uniqueEvents(eventsOf(hooks, messageId));
    const sequences = OUTCOMES.map((o, i) => ({ ending: o.ending, types: recipientEventTypes(events, messageId, i) }));
    expect(sequences).to.deep.equal(OUTCOMES.map((o) => ({ ending: o.ending, types: expectedEventTypes(o.ending) })));
    // out of order (99) and duplicated (89) receipts give what in-order receipts (00) give
    expect(sequences[10]!.types).to.deep.equal(sequences[0]!.types);
    expect(sequences[11]!.types).to.deep.equal(sequences[0]!.types);
  });

  it('when a recipient event is emitted, then its data names the recipient and carries its outcome exactly (error_code, error_message, retryable)', () => {
    const events = uniqueEvents(eventsOf(hooks, messageId)).filter((e) => e.event_type !== 'sms.queued');
    for (const event of events) {
      const index = event.data.recipient_index as number;
      const outcome = OUTCOMES[index]!;
      const recipient = finalStatus.recipients[index]!;
      expect(event.data.recipient_phone, outcome.ending).to.equal(numbers[index]);
      expect(event.data.carrier).to.equal('simulator');
      switch (event.event_type) {
        case 'sms.sent':
          expect(event.data.sent_at).to.match(ISO_UTC).and.equal(recipient.sent_at);
          break;
        case 'sms.delivered':
          expect(event.data.delivered_at).to.match(ISO_UTC).and.equal(recipient.delivered_at);
          expect(event.data.segments).to.equal(1);
          break;
        case 'sms.failed':
          expect(event.data.failed_at).to.match(ISO_UTC).and.equal(recipient.failed_at);
          expect(
            { error_code: event.data.error_code, error_message: event.data.error_message, retryable: event.data.retryable },
            outcome.ending,
          ).to.deep.equal({
            error_code: outcome.errorCode,
            error_message: outcome.errorMessage ?? CATALOGUE_TEXT.get(outcome.errorCode!),
            retryable: outcome.retryable,
          });
          break;
        default:
          expect(event.event_type).to.equal('sms.processing');
      }
    }
  });

  it('when the message has a callback_url, then it receives the same events, once each, without Basic credentials', () => {
    const viaKey = uniqueEvents(eventsOf(hooks, messageId));
    const viaCallback = eventsOf(callbacks, messageId);
    expect(viaCallback).to.have.length(expectedCount);
    const byId = new Map(viaKey.map((e) => [e.event_id, e]));
    expect(new Set(viaCallback.map((e) => e.event_id))).to.deep.equal(new Set(byId.keys()));
    for (const event of viaCallback) expect(event).to.deep.equal(byId.get(event.event_id));
    for (const request of callbacks.requests) {
      expect(request.path).to.equal('/callback');
      expect(request.headers.authorization).to.equal(undefined);
    }
    // the key's webhook_url gets the key's Basic credentials
    const basic = `Basic ${Buffer.from(`${merchant.username}:${merchant.password}`).toString('base64')}`;
    for (const request of hooks.requests) expect(request.headers.authorization).to.equal(basic);
  });

  it("when the callback_url equals the key's webhook_url, then each event arrives there once", () => {
    const received = eventsOf(hooks, sameUrlMessageId);
    expect(received.map((e) => e.event_type).sort()).to.deep.equal(['sms.delivered', 'sms.processing', 'sms.queued', 'sms.sent']);
    expect(new Set(received.map((e) => e.event_id)).size).to.equal(4);
    expect(eventsOf(callbacks, sameUrlMessageId)).to.deep.equal([]);
    // nothing else reached the key's webhook_url: the two messages' events, once each
    expect(hooks.requests).to.have.length(expectedCount + 4);
  });
});
