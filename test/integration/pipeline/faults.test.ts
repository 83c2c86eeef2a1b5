import { expect } from 'chai';
import { DISPATCH_TOPIC } from '../../../src/carriers/dispatch-outbox.js';
import { WEBHOOK_TOPIC } from '../../../src/webhooks/webhook-jobs.js';
import { MESSAGE_CREATE_TOPIC } from '../../../src/messaging/send-message-use-case.js';
import { startWebhookReceiver, type WebhookEnvelope, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import {
  eventIdsByKey,
  expectedEventKeys,
  expectedEventTypes,
  isSettled,
  merchantWithWebhook,
  numberEnding,
  send,
  startPipeline,
  statusOf,
  type Pipeline,
  type WebhookMerchant,
} from './pipeline-fixture.js';

/** Outcomes that end (no 97): delivered, undelivered, rejected, failed with a code, slow, out of order, duplicates. */
const ENDINGS = ['00', '90', '91', '95', '98', '99', '89', '01'] as const;
/** sms.queued and each recipient's events: 23. */
const EVENTS_PER_MESSAGE = 1 + ENDINGS.reduce((n, ending) => n + expectedEventTypes(ending).length, 0);

interface SentMessage {
  readonly messageId: string;
  readonly numbers: readonly string[];
}

/** A message to one number of each ending, its numbers distinct from every other message's. */
async function sendMix(pipeline: Pipeline, merchant: WebhookMerchant, n: number): Promise<SentMessage> {
  const numbers = ENDINGS.map((ending) => numberEnding(ending, `+243812${String(n).padStart(3, '0')}`));
  const { message_id } = await send(pipeline.client, merchant.apiKey, numbers);
  return { messageId: message_id, numbers };
}

/** Every recipient of every message at its final status, per GET /status. */
async function allSettled(
  pipeline: Pipeline,
  merchant: WebhookMerchant,
  messages: readonly SentMessage[],
  timeoutMs: number,
): Promise<void> {
  await eventually(
    async () => {
      for (const m of messages) {
        const status = await statusOf(pipeline.client, merchant.apiKey, m.messageId);
        if (!status.recipients.every(isSettled)) return false;
      }
      return true;
    },
    timeoutMs,
    'every recipient at its final status',
  );
  for (const m of messages) {
    const status = await statusOf(pipeline.client, merchant.apiKey, m.messageId);
    expect(status.recipients.map((r) => r.status)).to.deep.equal([
      'delivered',
      'failed',
      'failed',
      'failed',
      'delivered',
      'delivered',
      'delivered',
      'delivered',
    ]);
    expect({ delivered: status.delivered, failed: status.failed, pending: status.pending, status: status.status }).to.deep.equal({
      delivered: 5,
      failed: 3,
      pending: 0,
      status: 'delivered',
    });
  }
}

/** Every expected event arrived (duplicates by event_id allowed), and no other: one event id per expected event. */
async function allEventsArrived(receiver: WebhookReceiver, messages: readonly SentMessage[], timeoutMs: number): Promise<void> {
  const expected = messages.flatMap((m) => expectedEventKeys(m.messageId, m.numbers)).sort();
  const ours = new Set(messages.map((m) => m.messageId));
  const events = (): WebhookEnvelope[] => receiver.events().filter((e) => ours.has(e.message_id));
  await receiver.waitFor(() => eventIdsByKey(events()).size >= expected.length, timeoutMs, `all ${expected.length} expected events`);
  const byKey = eventIdsByKey(events());
  expect([...byKey.keys()].sort()).to.deep.equal(expected);
  for (const [key, ids] of byKey) expect([...ids], key).to.have.length(1);
  // so the set of event ids is exactly one per expected event
  expect(new Set(events().map((e) => e.event_id)).size).to.equal(expected.length);
}

async function outboxDrained(pipeline: Pipeline): Promise<void> {
  await eventually(
    async () =>
      (
        await pipeline.api.node.gateway.persistence.outbox.pending({
          limit: 10,
          topics: [DISPATCH_TOPIC, WEBHOOK_TOPIC, MESSAGE_CREATE_TOPIC],
        })
      ).length === 0,
    15_000,
    'an empty outbox (dispatches, webhook events, sends)',
  );
}

describe('pipeline faults: nats-server restarted in the middle of a flow', function () {
  this.timeout(120_000);
  let pipeline: Pipeline;
  let receiver: WebhookReceiver;
  let merchant: WebhookMerchant;

  before(async () => {
    pipeline = await startPipeline();
    receiver = await startWebhookReceiver();
    merchant = await merchantWithWebhook(pipeline.api.node.gateway, receiver.url, 'NATS restart');
  });
  after(async () => {
    await pipeline.stop();
    await receiver.close();
  });

  it('when nats-server restarts while receipts and webhooks flow, then every recipient ends and every expected event arrives (none lost)', async () => {
    const messages: SentMessage[] = [];
    for (let n = 0; n < 6; n++) messages.push(await sendMix(pipeline, merchant, n));
    // the flow is under way: some events are out, most receipts and webhooks are still to come
    await receiver.waitFor((requests) => requests.length >= 20, 10_000, 'the first events');
    const deliveredBeforeRestart = receiver.requests.length;
    expect(deliveredBeforeRestart, 'events delivered before the restart').to.be.below(messages.length * EVENTS_PER_MESSAGE);
    await pipeline.nats.restart();
    // and it keeps going: sends while the connections recover
    for (let n = 6; n < 9; n++) messages.push(await sendMix(pipeline, merchant, n));

    await allSettled(pipeline, merchant, messages, 60_000);
    await allEventsArrived(receiver, messages, 60_000);
    await outboxDrained(pipeline);
  });
});

describe('pipeline faults: the gateway node stopped in the middle of a flow and replaced', function () {
  this.timeout(120_000);
  let pipeline: Pipeline;
  let receiver: WebhookReceiver;
  let merchant: WebhookMerchant;

  before(async () => {
    pipeline = await startPipeline();
    receiver = await startWebhookReceiver();
    merchant = await merchantWithWebhook(pipeline.api.node.gateway, receiver.url, 'Node restart');
  });
  after(async () => {
    await pipeline.stop();
    await receiver.close();
  });

  it('when the node stops mid-flow and a new one starts on the same database and NATS, then the outbox completes, every message ends, and no dispatch is sent twice', async () => {
    const messages: SentMessage[] = [];
    for (let n = 0; n < 8; n++) messages.push(await sendMix(pipeline, merchant, n));
    // stop at once: dispatches, receipts and webhook events are still in flight
    const deliveredBeforeStop = receiver.requests.length;
    const stopped = await pipeline.restartNode();
    expect(deliveredBeforeStop, 'events delivered before the stop').to.be.below(messages.length * EVENTS_PER_MESSAGE);
    expect(pipeline.api).to.not.equal(stopped);
    for (let n = 8; n < 10; n++) messages.push(await sendMix(pipeline, merchant, n));

    await allSettled(pipeline, merchant, messages, 60_000);
    await allEventsArrived(receiver, messages, 60_000);
    await outboxDrained(pipeline);

    // at most once to the carrier: the two simulators (one per node) sent disjoint sets of dispatch ids, which
    // together are exactly one per recipient of every message
    const first = [...(stopped.node.simulator?.dispatchesSeen().keys() ?? [])];
    const second = [...(pipeline.api.node.simulator?.dispatchesSeen().keys() ?? [])];
    expect(
      first.filter((id) => second.includes(id)),
      'dispatch ids sent by both nodes',
    ).to.deep.equal([]);
    const expected = messages.flatMap((m) => m.numbers.map((_, i) => `${m.messageId}:0:${i}`)).sort();
    expect([...first, ...second].sort()).to.deep.equal(expected);
    for (const id of [...first, ...second]) {
      const match = /^(msg_[A-Za-z0-9]+):(\d+):(\d+)$/.exec(id);
      expect(match, id).to.not.equal(null);
      const message = messages.find((m) => m.messageId === match![1]);
      expect(message, id).to.not.equal(undefined);
      expect(Number(match![2])).to.equal(0);
      expect(Number(match![3])).to.be.below(message!.numbers.length);
    }
  });
});
