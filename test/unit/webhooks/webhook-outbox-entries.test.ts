import { expect } from 'chai';
import type { WebhookEvent } from '../../../src/webhooks/event-envelope.js';
import { createHash } from 'node:crypto';
import {
  eventsOf,
  isWebhookOutboxPayload,
  jobId,
  mergeWebhookEffects,
  webhookEventsEffect,
  WEBHOOK_TOPIC,
  type WebhookEffect,
} from '../../../src/webhooks/webhook-jobs.js';

const event = (n: number, type: WebhookEvent['event_type'] = 'sms.sent'): WebhookEvent =>
  ({
    event_id: `evt_${n}`,
    event_type: type,
    timestamp: '2026-11-26T09:00:00.000Z',
    message_id: 'msg_1',
    data: { recipient_phone: '+243810000001', recipient_index: 0, carrier: 'vodacom-cd', segments: 1, sent_at: '2026-11-26T09:00:00.000Z' },
  }) as WebhookEvent;

const ORIGIN = { merchantId: 'mer_a', keyId: 'key_a', callbackUrl: null };
const dispatch = { id: 'dispatch:msg_1:0', topic: 'carrier.dispatch', payload: { messageId: 'msg_1' } };

describe('webhook outbox entries: the events of one record in one entry', () => {
  it('when a record yields webhook entries of one message, then they become one entry where the first stood, with every event in order and the first event id', () => {
    const effects = [
      webhookEventsEffect(ORIGIN, [event(1)]),
      dispatch,
      webhookEventsEffect(ORIGIN, [event(2), event(3)]),
      webhookEventsEffect(ORIGIN, [event(4)]),
    ];

    const merged = mergeWebhookEffects(effects);

    expect(merged.map((effect) => [effect.id, effect.topic])).to.deep.equal([
      ['evt_1', WEBHOOK_TOPIC],
      ['dispatch:msg_1:0', 'carrier.dispatch'],
    ]);
    const [webhooks] = merged as [WebhookEffect];
    expect(eventsOf(webhooks.payload).map((e) => e.event_id)).to.deep.equal(['evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(webhooks.payload).to.include(ORIGIN);
  });

  it('when entries go to different places (another key, another callback_url), then each place keeps an entry of its own', () => {
    const elsewhere = { ...ORIGIN, callbackUrl: 'https://shop.example/cb' };
    const merged = mergeWebhookEffects([
      webhookEventsEffect(ORIGIN, [event(1)]),
      webhookEventsEffect(elsewhere, [event(2)]),
      webhookEventsEffect(ORIGIN, [event(3)]),
    ]);
    expect(merged.map((effect) => [effect.id, eventsOf(effect.payload).map((e) => e.event_id)])).to.deep.equal([
      ['evt_1', ['evt_1', 'evt_3']],
      ['evt_2', ['evt_2']],
    ]);
  });

  it('when a record has one webhook entry or none, then its effects are left exactly as they are', () => {
    const one = [dispatch, webhookEventsEffect(ORIGIN, [event(1), event(2)])];
    expect(mergeWebhookEffects(one)).to.deep.equal(one);
    expect(mergeWebhookEffects([dispatch])).to.deep.equal([dispatch]);
  });

  it('when the same effects are merged twice, then the entries are the same (a retried record writes the same ids)', () => {
    const effects = [webhookEventsEffect(ORIGIN, [event(5)]), webhookEventsEffect(ORIGIN, [event(6)])];
    expect(mergeWebhookEffects(effects)).to.deep.equal(mergeWebhookEffects(effects));
  });

  describe('reading a payload back from the outbox', () => {
    it('when it holds events, or one event as entries were written before, then it is read, and eventsOf lists them', () => {
      const held = { ...ORIGIN, events: [event(1), event(2)] as [WebhookEvent, WebhookEvent] };
      const single = { ...ORIGIN, event: event(3) };
      expect(isWebhookOutboxPayload(held)).to.equal(true);
      expect(isWebhookOutboxPayload(single)).to.equal(true);
      expect(eventsOf(held).map((e) => e.event_id)).to.deep.equal(['evt_1', 'evt_2']);
      expect(eventsOf(single).map((e) => e.event_id)).to.deep.equal(['evt_3']);
    });

    it('when its events are empty, not a list, or one of them is not an event, then it is refused', () => {
      expect(isWebhookOutboxPayload({ ...ORIGIN, events: [] })).to.equal(false);
      expect(isWebhookOutboxPayload({ ...ORIGIN, events: event(1) })).to.equal(false);
      expect(isWebhookOutboxPayload({ ...ORIGIN, events: [event(1), { event_id: 'evt_2' }] })).to.equal(false);
      expect(isWebhookOutboxPayload({ ...ORIGIN, event: { event_id: 'evt_2' } })).to.equal(false);
      expect(isWebhookOutboxPayload({ merchantId: 'mer_a', keyId: 'key_a', events: [event(1)] }), 'no callbackUrl').to.equal(false);
    });
  });

  it('when a job id is made for an event and a URL, then it is the event id and the URL’s SHA-256 prefix, the same on every call and for every URL on its own', () => {
    const digest = (url: string) => createHash('sha256').update(url).digest('hex').slice(0, 16);
    const urls = Array.from({ length: 5 }, (_, i) => `https://shop${i}.example/hooks`);
    for (let round = 0; round < 3; round++)
      for (const [i, url] of urls.entries()) expect(jobId(`evt_${i}`, url)).to.equal(`evt_${i}:${digest(url)}`);
  });
});
