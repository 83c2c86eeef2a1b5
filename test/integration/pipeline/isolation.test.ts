import { expect } from 'chai';
import {
  always,
  eventIdOf,
  HANG,
  respond,
  startWebhookReceiver,
  type ReceivedRequest,
  type WebhookEnvelope,
  type WebhookReceiver,
} from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import {
  merchantWithWebhook,
  numberEnding,
  send,
  startPipeline,
  statusOf,
  type Pipeline,
  type WebhookMerchant,
} from './pipeline-fixture.js';

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** `count` (< 89) distinct numbers ending 00, 01, …: the simulator delivers them (processing, sent, delivered). */
function recipients(count: number, prefix: string): string[] {
  if (count >= 89) throw new Error('endings from 89 up choose other outcomes');
  return Array.from({ length: count }, (_, i) => numberEnding(String(i).padStart(2, '0'), prefix));
}

/** Events of an immediate send whose recipients are all delivered: sms.queued, then 3 per recipient. */
const eventsPerMessage = (recipientCount: number): number => 1 + 3 * recipientCount;

/** Receive time − event timestamp of each request, sorted. */
const latenciesOf = (requests: readonly ReceivedRequest[]): number[] =>
  requests.map((r) => r.at - Date.parse((r.body as WebhookEnvelope).timestamp)).sort((x, y) => x - y);

const summary = (latencies: readonly number[]): string => `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`;

describe('pipeline: one dead merchant endpoint never delays another merchant (webhook isolation)', function () {
  this.timeout(180_000);
  /** Short enough that A's attempts fail (and are retried) while B's flow runs. */
  const TIMEOUT_MS = 500;
  /**
   * A's backlog: 12 × (1 + 3 × 32) = 1 164 events, all unacknowledged at once — more than the 1 000 unsettled
   * deliveries a bounded JetStream consumer allows (see ConsumerSpec.unboundedRetries).
   */
  const A_MESSAGES = 12;
  const A_RECIPIENTS = 32;
  const B_MESSAGES = 10;
  const B_RECIPIENTS = 5;
  /** Hang guard only: B's events normally arrive within a second or two, later on a loaded machine. */
  const B_DEADLINE_MS = 30_000;

  let pipeline: Pipeline;
  let deadEndpoint: WebhookReceiver;
  let liveEndpoint: WebhookReceiver;
  let a: WebhookMerchant;
  let b: WebhookMerchant;

  /** B sends its batch; resolves with the requests its endpoint got for it and how long the batch took. */
  async function bBatch(round: number): Promise<{ requests: ReceivedRequest[]; elapsedMs: number }> {
    const started = Date.now();
    const before = liveEndpoint.requests.length;
    const messages = new Set<string>();
    for (let m = 0; m < B_MESSAGES; m++) {
      messages.add((await send(pipeline.client, b.apiKey, recipients(B_RECIPIENTS, `+24381250${round}${m}`))).message_id);
    }
    const expected = B_MESSAGES * eventsPerMessage(B_RECIPIENTS);
    // webhooks are at least once: an attempt B answered, but not within TIMEOUT_MS on a loaded machine, is retried
    // and arrives again with the same event_id. Each event of this batch's messages counts once, at its first arrival
    // (a late retry of an earlier batch's event is not this batch's).
    const firstArrivals = (requests: readonly ReceivedRequest[]): ReceivedRequest[] => {
      const seen = new Set<string>();
      return requests.slice(before).filter((r) => {
        const id = eventIdOf(r);
        if (id === null || seen.has(id) || !messages.has((r.body as WebhookEnvelope).message_id)) return false;
        seen.add(id);
        return true;
      });
    };
    await liveEndpoint.waitFor(
      (requests) => firstArrivals(requests).length >= expected,
      B_DEADLINE_MS,
      `all ${expected} of B's events (round ${round})`,
    );
    const requests = firstArrivals(liveEndpoint.requests);
    expect(requests).to.have.length(expected);
    // every message of the batch is heard from, and each event once per recipient state (sms.queued, then three each)
    expect(new Set(requests.map((r) => (r.body as WebhookEnvelope).message_id))).to.deep.equal(messages);
    return { requests, elapsedMs: Date.now() - started };
  }

  before(async () => {
    pipeline = await startPipeline({ webhooks: { timeoutMs: TIMEOUT_MS } });
    deadEndpoint = await startWebhookReceiver({ path: '/a', behaviour: always(HANG) });
    liveEndpoint = await startWebhookReceiver({ path: '/b', behaviour: always(respond(200)) });
    a = await merchantWithWebhook(pipeline.api.node.gateway, deadEndpoint.url, 'A (endpoint never answers)');
    b = await merchantWithWebhook(pipeline.api.node.gateway, liveEndpoint.url, 'B (endpoint answers at once)');
  });

  after(async () => {
    // the hanging requests end here (A's last attempts fail), then the node stops
    await deadEndpoint.close();
    await liveEndpoint.close();
    await pipeline.stop();
  });

  it("when A's endpoint hangs with a backlog of over a thousand events being retried, then every one of B's events still arrives, about as fast as without A", async () => {
    // baseline: B alone
    const alone = await bBatch(0);

    const aMessages: string[] = [];
    for (let m = 0; m < A_MESSAGES; m++) {
      aMessages.push(
        (await send(pipeline.client, a.apiKey, recipients(A_RECIPIENTS, `+24381240${String(m).padStart(2, '0')}`))).message_id,
      );
    }
    const aEvents = A_MESSAGES * eventsPerMessage(A_RECIPIENTS);
    // every event of A exists (all its recipients delivered) and A is being retried (an event had a second attempt)
    await eventually(
      async () => {
        for (const id of aMessages) if ((await statusOf(pipeline.client, a.apiKey, id)).delivered !== A_RECIPIENTS) return false;
        return true;
      },
      40_000,
      "every recipient of A's messages delivered",
    );
    await deadEndpoint.waitFor(
      (requests) => {
        const seen = new Set<string>();
        return requests.some((r) => {
          const id = eventIdOf(r);
          if (id === null || !seen.has(id)) {
            if (id !== null) seen.add(id);
            return false;
          }
          return true;
        });
      },
      20_000,
      "a retry of one of A's events",
    );

    const withDeadA = await bBatch(1);
    const attemptsToA = deadEndpoint.requests.length;
    const eventsTriedOfA = new Set(deadEndpoint.requests.map(eventIdOf)).size;
    // A kept failing throughout; at most its per-merchant share of attempts is in flight at a time
    expect(eventsTriedOfA).to.be.at.most(aEvents);
    expect(attemptsToA).to.be.greaterThan(eventsTriedOfA);

    const baseline = latenciesOf(alone.requests);
    const latencies = latenciesOf(withDeadA.requests);
    for (const latency of latencies) expect(latency).to.be.below(B_DEADLINE_MS);
    console.log(
      `isolation (NATS, 2 cores): merchant B's webhook latency (receive − event timestamp) over ${latencies.length} events: ` +
        `${summary(latencies)} (max ${latencies.at(-1)!} ms) while merchant A's endpoint hangs with ${aEvents} events in retry ` +
        `(${attemptsToA} attempts to it, ${TIMEOUT_MS} ms timeout); B alone: ${summary(baseline)}`,
    );
  });
});
