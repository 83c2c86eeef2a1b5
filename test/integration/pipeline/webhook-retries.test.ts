import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { listDeadLetters, replayDeadLetter as replayWithCli } from '../../../src/entry-points/cli/webhook-commands.js';
import type { DeadLetter } from '../../../src/libraries/persistence/dead-letters-port.js';
import {
  always,
  CLOSE,
  eventIdOf,
  failFirst,
  HANG,
  respond,
  startWebhookReceiver,
  type ReceivedRequest,
  type ReceiverBehaviour,
  type WebhookReceiver,
} from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import { merchantWithWebhook, numberEnding, send, startPipeline, type Pipeline, type WebhookMerchant } from './pipeline-fixture.js';

/**
 * The contract's 30 s, 2 min, 10 min, 1 h scaled down (config/test.json has [30, 120, 600, 3600]). Each gap is
 * asserted at least its delay (the server's timers make that exact); how much later it comes depends on the load.
 */
const RETRY_DELAYS_MS = [50, 500, 1_000, 2_000] as const;
const TIMEOUT_MS = 300;
/** A recipient ending 91 (rejected) gives sms.queued, sms.processing, sms.failed: 3 events per message. */
const EVENTS_PER_MESSAGE = 3;
/** Gaps are lower-bounded exactly; this only tells the scaled delays from the contract's real ones (30 s…). */
const GAP_SLACK_MS = 25_000;

interface Scenario {
  readonly receiver: WebhookReceiver;
  readonly merchant: WebhookMerchant;
  readonly messageId: string;
}

/** Deliveries grouped by event id (each group in arrival order). */
function byEvent(requests: readonly ReceivedRequest[]): Map<string, ReceivedRequest[]> {
  const groups = new Map<string, ReceivedRequest[]>();
  for (const request of requests) {
    const id = eventIdOf(request);
    if (id === null) throw new Error(`a request without an event: ${request.rawBody}`);
    groups.set(id, [...(groups.get(id) ?? []), request]);
  }
  return groups;
}

const everyEventDelivered = (times: number) => (requests: readonly ReceivedRequest[]) => {
  const groups = byEvent(requests);
  return groups.size === EVENTS_PER_MESSAGE && [...groups.values()].every((g) => g.length >= times);
};

/** Gaps between consecutive deliveries of one event. */
const gapsOf = (deliveries: readonly ReceivedRequest[]): number[] => deliveries.slice(1).map((d, i) => d.at - deliveries[i]!.at);

describe('pipeline: webhook delivery retries, dead letters and request format (over NATS)', function () {
  this.timeout(60_000);
  let pipeline: Pipeline;
  const scenarios = new Map<string, Scenario>();
  /** A receiver that must never be called: where the 302 points. */
  let trap: WebhookReceiver;
  let secret: string;

  async function scenario(name: string, behaviour: ReceiverBehaviour, options: { signing?: boolean } = {}): Promise<void> {
    const receiver = await startWebhookReceiver({ path: `/${name}`, behaviour });
    const merchant = await merchantWithWebhook(pipeline.api.node.gateway, receiver.url, name);
    if (options.signing) {
      const signing = await pipeline.api.node.gateway.useCases.apiKeys.setSigning(merchant.keyId, true);
      expect(signing?.secret).to.be.a('string');
      secret = signing!.secret!;
    }
    scenarios.set(name, { receiver, merchant, messageId: '' });
  }

  const get = (name: string): Scenario => {
    const s = scenarios.get(name);
    if (!s) throw new Error(`no scenario ${name}`);
    return s;
  };
  const deadLetters = (name: string): Promise<readonly DeadLetter[]> =>
    pipeline.api.node.gateway.persistence.deadLetters.list({ merchantId: get(name).merchant.merchantId, limit: 100 });

  before(async () => {
    pipeline = await startPipeline({ webhooks: { timeoutMs: TIMEOUT_MS, retryDelaysMs: [...RETRY_DELAYS_MS] } });
    expect(pipeline.api.node.gateway.config.webhooks.retryDelaysMs).to.deep.equal(RETRY_DELAYS_MS);
    trap = await startWebhookReceiver({ path: '/trap' });
    for (let n = 0; n <= 4; n++) await scenario(`fail-${n}`, failFirst(n));
    await scenario('always-500', always(respond(500)));
    for (const status of [400, 404, 410]) await scenario(`status-${status}`, always(respond(status)));
    // the first attempt is never answered: only the timeout can end it, however fast or slow the machine
    await scenario('slow', failFirst(1, HANG));
    await scenario('closes', failFirst(1, CLOSE));
    await scenario('redirect', failFirst(1, { type: 'respond', status: 302, headers: { location: trap.url } }));
    await scenario('signed', failFirst(1), { signing: true });
    await scenario('unsigned', always(respond(200)));
    // every flow runs at once; each test then waits for its own
    for (const [name, s] of scenarios) {
      const { message_id } = await send(pipeline.client, s.merchant.apiKey, [numberEnding('91')]);
      scenarios.set(name, { ...s, messageId: message_id });
    }
  });

  after(async () => {
    for (const s of scenarios.values()) await s.receiver.close();
    await trap.close();
    await pipeline.stop();
  });

  for (let n = 0; n <= 4; n++) {
    it(`when the endpoint answers 500 ${n} times then 200, then each event is delivered exactly ${n + 1} times with one event_id, spaced by the retry delays in order`, async () => {
      const { receiver, messageId } = get(`fail-${n}`);
      await receiver.waitFor(everyEventDelivered(n + 1), 20_000, `${n + 1} deliveries of each event`);
      // the longest flow (always failing: every delay, 3.55 s) has ended: nothing else is coming for this one either
      await eventually(
        async () => (await deadLetters('always-500')).length === EVENTS_PER_MESSAGE,
        20_000,
        'the always-failing flow dropped',
      );
      const groups = byEvent(receiver.requests);
      expect(groups.size).to.equal(EVENTS_PER_MESSAGE);
      for (const [eventId, deliveries] of groups) {
        expect(deliveries, eventId).to.have.length(n + 1);
        // the same event, byte for byte, on every attempt
        for (const d of deliveries) expect(d.rawBody).to.equal(deliveries[0]!.rawBody);
        expect((deliveries[0]!.body as { message_id: string }).message_id).to.equal(messageId);
        const gaps = gapsOf(deliveries);
        gaps.forEach((gap, i) => {
          // never before its delay (the server times it); how much later depends on the machine's load
          expect(gap, `gap ${i + 1} of ${eventId}`)
            .to.be.at.least(RETRY_DELAYS_MS[i]!)
            .and.below(RETRY_DELAYS_MS[i]! + GAP_SLACK_MS);
        });
      }
      expect(await deadLetters(`fail-${n}`)).to.deep.equal([]);
    });
  }

  it('when the endpoint always fails, then each event is delivered exactly 5 times and recorded as a dead letter (retries_exhausted); a replay delivers it again with its event_id', async () => {
    const { receiver, merchant } = get('always-500');
    const letters = await eventually(
      async () => {
        const found = await deadLetters('always-500');
        return found.length === EVENTS_PER_MESSAGE ? found : null;
      },
      20_000,
      'three dead letters',
    );
    const groups = byEvent(receiver.requests);
    expect([...groups.values()].map((g) => g.length)).to.deep.equal([5, 5, 5]);
    for (const deliveries of groups.values()) {
      gapsOf(deliveries).forEach((gap, i) => {
        expect(gap).to.be.at.least(RETRY_DELAYS_MS[i]!);
      });
    }
    expect(new Set(letters.map((l) => l.eventId))).to.deep.equal(new Set(groups.keys()));
    for (const letter of letters) {
      expect(letter).to.include({
        reason: 'retries_exhausted',
        attempts: 5,
        lastStatus: 500,
        lastError: null,
        merchantId: merchant.merchantId,
        keyId: merchant.keyId,
        url: receiver.url,
        auth: 'key',
      });
      expect(letter.event).to.deep.equal(groups.get(letter.eventId)![0]!.body);
    }

    // the operator lists them with the CLI and replays one once the endpoint is back
    const gateway = pipeline.api.node.gateway;
    const listed = await listDeadLetters(gateway, { merchantId: merchant.merchantId });
    if (!listed.ok) throw new Error(listed.message);
    expect(
      (listed.json as { id: string; reason: string; attempts: number }[]).map((l) => [l.id, l.reason, l.attempts]),
    ).to.have.deep.members(letters.map((l) => [l.id, 'retries_exhausted', 5]));
    for (const letter of letters) expect(listed.text).to.contain(letter.id);
    receiver.setBehaviour(always(respond(200)));
    const replayed = letters[0]!;
    const replay = await replayWithCli(gateway, replayed.id);
    expect(replay.ok && replay.json).to.deep.equal({ replayed: replayed.id });
    await receiver.waitFor(() => receiver.deliveriesOf(replayed.eventId).length === 6, 10_000, 'the replayed delivery');
    const sixth = receiver.deliveriesOf(replayed.eventId)[5]!;
    expect(sixth.body).to.deep.equal(replayed.event);
    expect((await deadLetters('always-500')).map((l) => l.id).sort()).to.deep.equal(
      letters
        .slice(1)
        .map((l) => l.id)
        .sort(),
    );
    // a replayed letter is gone: replaying it again does nothing
    const again = await replayWithCli(gateway, replayed.id);
    expect(again.ok ? 'replayed' : again.message).to.equal(`no dropped webhook event ${replayed.id}`);
  });

  for (const status of [400, 404, 410]) {
    it(`when the endpoint answers ${status}, then each event is delivered exactly once and recorded as a dead letter (rejected)`, async () => {
      const { receiver } = get(`status-${status}`);
      const letters = await eventually(
        async () => {
          const found = await deadLetters(`status-${status}`);
          return found.length === EVENTS_PER_MESSAGE ? found : null;
        },
        10_000,
        'three dead letters',
      );
      const groups = byEvent(receiver.requests);
      expect([...groups.values()].map((g) => g.length)).to.deep.equal([1, 1, 1]);
      expect(new Set(letters.map((l) => l.eventId))).to.deep.equal(new Set(groups.keys()));
      for (const letter of letters) expect(letter).to.include({ reason: 'rejected', attempts: 1, lastStatus: status });
    });
  }

  it(`when the endpoint answers after the ${TIMEOUT_MS} ms timeout, then the attempt counts as failed and is retried`, async () => {
    const { receiver } = get('slow');
    await receiver.waitFor(everyEventDelivered(2), 10_000, 'a retry of each event');
    for (const deliveries of byEvent(receiver.requests).values()) {
      expect(deliveries).to.have.length(2);
      // the first attempt was given up at the timeout (not earlier): it never got an answer, so only the timeout retried it
      expect(deliveries[1]!.at - deliveries[0]!.at).to.be.at.least(TIMEOUT_MS);
    }
    expect(await deadLetters('slow')).to.deep.equal([]);
  });

  it('when the endpoint closes the connection without answering, then the event is retried', async () => {
    const { receiver } = get('closes');
    await receiver.waitFor(everyEventDelivered(2), 10_000, 'a retry of each event');
    for (const deliveries of byEvent(receiver.requests).values()) {
      expect(deliveries).to.have.length(2);
      expect(deliveries[1]!.at - deliveries[0]!.at).to.be.at.least(RETRY_DELAYS_MS[0]);
    }
    expect(await deadLetters('closes')).to.deep.equal([]);
  });

  it('when the endpoint answers 302, then the redirect is not followed and the attempt is retried at the same URL', async () => {
    const { receiver } = get('redirect');
    await receiver.waitFor(everyEventDelivered(2), 10_000, 'a retry of each event');
    for (const deliveries of byEvent(receiver.requests).values()) expect(deliveries).to.have.length(2);
    expect(trap.requests).to.have.length(0);
    expect(await deadLetters('redirect')).to.deep.equal([]);
  });

  it('when the key has Basic credentials, then every delivery carries Authorization: Basic base64(user:pass)', async () => {
    const { receiver, merchant } = get('unsigned');
    await receiver.waitFor(everyEventDelivered(1), 10_000, 'every event');
    const expected = `Basic ${Buffer.from(`${merchant.username}:${merchant.password}`).toString('base64')}`;
    expect(receiver.requests).to.have.length(EVENTS_PER_MESSAGE);
    for (const request of receiver.requests) expect(request.headers.authorization).to.equal(expected);
    // every scenario's key has its own credentials
    for (const s of scenarios.values()) {
      const basic = `Basic ${Buffer.from(`${s.merchant.username}:${s.merchant.password}`).toString('base64')}`;
      for (const request of s.receiver.requests) expect(request.headers.authorization).to.equal(basic);
    }
  });

  it('when signing is on, then X-Signature is sha256=HMAC(secret, `<X-Signature-Timestamp>.<raw body>`) on every attempt; without it there is no signature header', async () => {
    const { receiver } = get('signed');
    await receiver.waitFor(everyEventDelivered(2), 10_000, 'a retry of each event');
    expect(receiver.requests).to.have.length(2 * EVENTS_PER_MESSAGE);
    for (const request of receiver.requests) {
      const timestamp = request.headers['x-signature-timestamp'];
      expect(timestamp).to.match(/^\d+$/);
      // Unix seconds of the attempt
      expect(Math.abs(Number(timestamp) - request.at / 1000)).to.be.below(5);
      const expected = `sha256=${createHmac('sha256', secret)
        .update(`${String(timestamp)}.${request.rawBody}`)
        .digest('hex')}`;
      expect(request.headers['x-signature']).to.equal(expected);
      const tampered = `sha256=${createHmac('sha256', secret)
        .update(`${String(timestamp)}.${request.rawBody} `)
        .digest('hex')}`;
      expect(request.headers['x-signature']).to.not.equal(tampered);
    }
    const unsigned = get('unsigned').receiver;
    await unsigned.waitFor(everyEventDelivered(1), 10_000, 'every event');
    for (const request of unsigned.requests) {
      expect(request.headers).to.not.have.property('x-signature');
      expect(request.headers).to.not.have.property('x-signature-timestamp');
    }
  });
});
