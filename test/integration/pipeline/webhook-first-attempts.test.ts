import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import { QUICK_PACE_MS } from '../../../src/entry-points/transport/webhook-worker.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { WEBHOOKS_DURABLE, webhookSubject } from '../../../src/libraries/transport/nats-names.js';
import { STREAMS } from '../../../src/libraries/transport/transport-port.js';
import { isWebhookBatch, isWebhookJob, WEBHOOK_TOPIC } from '../../../src/webhooks/webhook-jobs.js';
import {
  always,
  eventIdOf,
  failFirst,
  respond,
  startWebhookReceiver,
  type ReceivedRequest,
  type ReceiverBehaviour,
  type WebhookReceiver,
} from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import { eventKey, expectedEventKeys, merchantWithWebhook, numberEnding, send, startPipeline, type Pipeline } from './pipeline-fixture.js';

/** A recipient ending 00 is delivered: sms.queued, sms.processing, sms.sent, sms.delivered. */
const DELIVERED = numberEnding('00');

describe('pipeline: first webhook attempts made by the relay’s node (over NATS)', function () {
  this.timeout(60_000);
  let pipeline: Pipeline;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const receivers: WebhookReceiver[] = [];

  before(async () => {
    // a generous endpoint timeout: a held answer must not turn into a failed attempt
    pipeline = await startPipeline({ webhooks: { timeoutMs: 20_000, retryDelaysMs: [50, 100, 200, 400] } });
    nc = await connectNats({ servers: pipeline.nats.url });
    jsm = await jetstreamManager(nc);
  });

  after(async () => {
    for (const receiver of receivers) await receiver.close();
    await nc.close();
    await pipeline.stop();
  });

  const gateway = () => pipeline.api.node.gateway;

  /** Everything published on the merchant's webhook subject so far, in order (the stream keeps what it settled). */
  async function streamed(merchantId: string): Promise<unknown[]> {
    const subject = webhookSubject(merchantId);
    const info = await jsm.streams.info(STREAMS.webhooks.name);
    const found: unknown[] = [];
    for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
      const stored = await jsm.streams.getMessage(STREAMS.webhooks.name, { seq }).catch(() => null);
      if (stored?.subject === subject) found.push(stored.json());
    }
    return found;
  }

  /** Every delivery of the webhook stream settled: each attempt it carried was made and its duration recorded. */
  async function streamSettled(): Promise<void> {
    await eventually(
      async () => {
        const consumer = await jsm.consumers.info(STREAMS.webhooks.name, WEBHOOKS_DURABLE);
        return consumer.num_pending === 0 && consumer.num_ack_pending === 0;
      },
      30_000,
      'the webhook stream settled',
    );
  }

  const webhookEntryIds = async (): Promise<string[]> =>
    (await gateway().persistence.outbox.pending({ limit: 10_000, topics: [WEBHOOK_TOPIC] })).map((entry) => entry.id);

  /** Resolves once the receiver has had every event of the message (any number of times). */
  async function allEventsOf(receiver: WebhookReceiver, messageId: string): Promise<void> {
    const expected = expectedEventKeys(messageId, [DELIVERED]);
    await receiver.waitFor(
      () => {
        const received = new Set(receiver.events().map(eventKey));
        return expected.every((key) => received.has(key));
      },
      30_000,
      `every event of ${messageId}`,
    );
  }

  const requestsOf = (receiver: WebhookReceiver, messageId: string): ReceivedRequest[] =>
    receiver.requests.filter((request) => (request.body as { message_id?: unknown } | undefined)?.message_id === messageId);

  /**
   * A merchant whose receiver behaves as given, after one message answered that way: its first events went through
   * the stream (its pace was not known yet) and every attempt of them is over, so the node knows its pace.
   */
  async function merchantWithKnownPace(name: string, behaviour: ReceiverBehaviour = always(respond(200))) {
    const receiver = await startWebhookReceiver({ path: `/${name}`, behaviour });
    receivers.push(receiver);
    const merchant = await merchantWithWebhook(gateway(), receiver.url, name);
    const first = await send(pipeline.client, merchant.apiKey, [DELIVERED]);
    await allEventsOf(receiver, first.message_id);
    await streamSettled();
    const before = await streamed(merchant.merchantId);
    expect(before, 'the first events (pace unknown) went through the stream').to.not.deep.equal([]);
    return { receiver, merchant, before: before.length };
  }

  it('when the merchant’s endpoint is known to be quick, then the events of its next message arrive without any new message on the webhooks stream', async () => {
    const { receiver, merchant, before } = await merchantWithKnownPace('quick');

    const second = await send(pipeline.client, merchant.apiKey, [DELIVERED]);
    await allEventsOf(receiver, second.message_id);
    await eventually(async () => (await webhookEntryIds()).length === 0, 30_000, 'the webhook entries done');

    expect(await streamed(merchant.merchantId)).to.have.length(before);
    const deliveredOnce = requestsOf(receiver, second.message_id).map(eventIdOf);
    expect(deliveredOnce).to.have.length(4);
    expect(new Set(deliveredOnce).size).to.equal(4);
  });

  it('when a quick endpoint holds its answer, then the event’s entry stays in the outbox until it answers, and is done after', async () => {
    const { receiver, merchant, before } = await merchantWithKnownPace('holding');
    let release: () => void = () => undefined;
    const until = new Promise<void>((resolve) => {
      release = resolve;
    });
    receiver.setBehaviour((request) =>
      (request.body as { event_type?: unknown } | undefined)?.event_type === 'sms.queued'
        ? { type: 'hold', until, status: 200 }
        : respond(200),
    );

    let eventId = '';
    try {
      const second = await send(pipeline.client, merchant.apiKey, [DELIVERED]);
      const held = await receiver.waitFor(
        (requests) =>
          requests.find(
            (r) =>
              (r.body as { message_id?: unknown }).message_id === second.message_id &&
              eventIdOf(r) !== null &&
              (r.body as { event_type: string }).event_type === 'sms.queued',
          ),
        30_000,
        'the sms.queued attempt',
      );
      eventId = eventIdOf(held) ?? '';
      expect(eventId).to.not.equal('');
      // the message's entry of sms.queued is named by that event: still pending while its attempt waits for the answer
      expect(await webhookEntryIds()).to.include(eventId);
      await allEventsOf(receiver, second.message_id);
      expect(await webhookEntryIds()).to.include(eventId);
    } finally {
      // whatever happened, the endpoint answers: nothing of this test stays in flight for the next
      release();
    }
    await eventually(async () => !(await webhookEntryIds()).includes(eventId), 30_000, 'the held entry done');
    expect(receiver.deliveriesOf(eventId)).to.have.length(1);
    expect(await streamed(merchant.merchantId)).to.have.length(before);
  });

  it('when a quick endpoint fails an attempt made from the relay, then its retry still goes through the webhooks stream, as attempt 2', async () => {
    const { receiver, merchant, before } = await merchantWithKnownPace('failing-once');
    receiver.setBehaviour(failFirst(1));

    const second = await send(pipeline.client, merchant.apiKey, [DELIVERED]);
    await receiver.waitFor(
      () => {
        const requests = requestsOf(receiver, second.message_id);
        const ids = new Set(requests.map(eventIdOf));
        return ids.size === 4 && [...ids].every((id) => requests.filter((r) => eventIdOf(r) === id).length === 2);
      },
      30_000,
      'two attempts of each event',
    );
    await streamSettled();

    const published = (await streamed(merchant.merchantId)).slice(before);
    expect(published.every(isWebhookJob), 'only jobs: no batch of first attempts').to.equal(true);
    const retries = published.filter(isWebhookJob);
    expect(retries.map((job) => job.attempt)).to.deep.equal([2, 2, 2, 2]);
    expect(retries.map((job) => job.event.event_id).sort()).to.deep.equal(
      [...new Set(requestsOf(receiver, second.message_id).map(eventIdOf))].sort(),
    );
    await eventually(async () => (await webhookEntryIds()).length === 0, 30_000, 'the webhook entries done');
  });

  it(`when the merchant’s endpoint takes longer than ${QUICK_PACE_MS} ms, then its next message’s events go through the webhooks stream as before`, async () => {
    const { receiver, merchant, before } = await merchantWithKnownPace('slow', always(respond(200, QUICK_PACE_MS + 100)));

    const second = await send(pipeline.client, merchant.apiKey, [DELIVERED]);
    await allEventsOf(receiver, second.message_id);

    const published = (await streamed(merchant.merchantId)).slice(before);
    const batched = published.filter(isWebhookBatch).flatMap((batch) => batch.events.map((event) => event.event_id));
    expect(batched.sort()).to.deep.equal([...new Set(requestsOf(receiver, second.message_id).map(eventIdOf))].sort());
  });
});
