import { expect } from 'chai';
import type { Clock } from '../../../src/libraries/clock/clock.js';
import { createMetrics, type Metrics } from '../../../src/libraries/observability/metrics.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { dataOf, expectEnvelope, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { M, parseExposition, sampleOf, valueOf, type Exposition } from '../../helpers/prometheus-text.js';
import { testPostgres } from '../../helpers/postgres.js';
import { mustParseMoney } from '../../../src/pricing/money.js';
import { always, respond, startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';

// ---------------------------------------------------------------------------------------------------------------

/** The real clock, shifted by hand: a scheduled date can then be "ahead" when sent and due at once in real time. */
function shiftableClock(): Clock & { shift(ms: number): void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    shift(ms) {
      offset = ms;
    },
  };
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** Local date and time in Africa/Kinshasa (UTC+1, the merchants' default zone) of a whole-minute instant. */
function kinshasaLocal(instant: number): { date: string; time: string } {
  const local = new Date(instant + 60 * MINUTE).toISOString();
  return { date: local.slice(0, 10), time: local.slice(11, 16) };
}

/** Ends in 12: the sandbox simulator delivers it (processing, accepted, enroute, delivered). */
const DELIVERED = '+243812345612';
/** Ends in 89: delivered, with every receipt sent twice. */
const DUPLICATES = '+243812345689';
const GENEROUS = { send: 10_000, status: 10_000, balance: 10_000, management: 10_000 } as const;

describe('metrics on the operator port', function () {
  this.timeout(90_000);
  let url: string;

  before(async () => {
    url = await (await testPostgres()).createDatabase('metrics');
  });

  describe('one node: a send, a status, a 401, webhook deliveries, a scheduled send cancelled', () => {
    let metrics: Metrics;
    let fixture: ApiFixture;
    let clock: ReturnType<typeof shiftableClock>;
    let acknowledging: WebhookReceiver;
    let rejecting: WebhookReceiver;
    let shop: SeededMerchant;
    let exposition: Exposition;
    let metricsUrl: string;

    before(async () => {
      // Arrange
      metrics = createMetrics();
      clock = shiftableClock();
      fixture = await startApi(url, { metrics, clock, inProcessSimulator: true, config: { rateLimits: GENEROUS } });
      const port = fixture.node.operator?.port;
      expect(port, 'operator port').to.be.a('number');
      metricsUrl = `http://127.0.0.1:${String(port)}/metrics`;
      const gateway = fixture.node.gateway;
      acknowledging = await startWebhookReceiver({ path: '/ok', behaviour: always(respond(200)) });
      rejecting = await startWebhookReceiver({ path: '/gone', behaviour: always(respond(410)) });
      shop = await seedMerchant(gateway, { name: 'Metrics shop', prepaid: '100' });
      await gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: acknowledging.url, username: 'hooks', password: 'metrics-password' });
      await gateway.useCases.apiKeys.setSigning(shop.keyId, true);
      const other = await seedMerchant(gateway, { name: 'Gone shop', prepaid: '100' });
      await gateway.useCases.apiKeys.setWebhook(other.keyId, { url: rejecting.url, username: null, password: null });

      // Act: first, while nothing else is in flight, a scheduled send of two dates: the first is due at once in real
      // time (the clock was 5 minutes behind when it was sent), the second is tomorrow and is refunded by the cancel
      const due = Math.floor(Date.now() / MINUTE) * MINUTE;
      clock.shift(-5 * MINUTE);
      const scheduled = dataOf<SendData>(
        await call(`${fixture.api}/send`, {
          method: 'POST',
          key: shop.apiKey,
          json: {
            to: [DELIVERED],
            message: 'metrics',
            sending_type: 'scheduled',
            scheduled_dates: [kinshasaLocal(due), kinshasaLocal(due + DAY)],
          },
        }),
        201,
      );
      clock.shift(0);
      // then an immediate send of 2, its status, a 401, another merchant's send whose endpoint answers 410
      const sent = dataOf<SendData>(
        await call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, json: { to: [DELIVERED, DUPLICATES], message: 'metrics' } }),
        201,
      );
      expect((await call(`${fixture.api}/status/${sent.message_id}`, { key: shop.apiKey })).status).to.equal(200);
      expect((await call(`${fixture.api}/balance`, { key: 'sk_test_00000000000000000000000000000000' })).status).to.equal(401);
      dataOf<SendData>(
        await call(`${fixture.api}/send`, { method: 'POST', key: other.apiKey, json: { to: [DELIVERED], message: 'metrics' } }),
        201,
      );

      await eventually(
        async () => {
          const status = await call(`${fixture.api}/status/${scheduled.message_id}`, { key: shop.apiKey });
          return (status.body as { data: { schedule: { occurrences_dispatched: number } } }).data.schedule.occurrences_dispatched === 1;
        },
        20_000,
        'the first scheduled occurrence dispatched by Agenda',
      );
      expect((await call(`${fixture.api}/cancel/${scheduled.message_id}`, { method: 'DELETE', key: shop.apiKey })).status).to.equal(200);

      // everything settles: every recipient delivered, every event delivered (11) or dropped (4)
      await eventually(
        async () => {
          for (const id of [sent.message_id, scheduled.message_id]) {
            const status = await call(`${fixture.api}/status/${id}`, { key: shop.apiKey });
            if ((status.body as { data: { pending: number } }).data.pending !== 0) return false;
          }
          return true;
        },
        20_000,
        'every recipient final',
      );
      await acknowledging.waitFor((requests) => requests.length >= 11, 20_000, '11 events of the shop');
      await eventually(
        async () => (await gateway.persistence.deadLetters.list({ merchantId: other.merchantId, limit: 10 })).length === 4,
        20_000,
        '4 dead letters',
      );
      // a few more polls may still be answered after the last event: let the webhook worker and receipts go quiet
      await new Promise((resolve) => setTimeout(resolve, 300));

      const response = await fetch(metricsUrl);
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
      exposition = parseExposition(await response.text());
    });

    after(async () => {
      await fixture.stop();
      await acknowledging.close();
      await rejecting.close();
    });

    it('counts merchant API requests by route, method and status, and times them', () => {
      expect(valueOf(exposition, M('http_requests_total'), { route: 'send', method: 'POST', status: '201' })).to.equal(3);
      expect(valueOf(exposition, M('http_requests_total'), { route: 'balance', method: 'GET', status: '401' })).to.equal(1);
      expect(valueOf(exposition, M('http_requests_total'), { route: 'cancel', method: 'DELETE', status: '200' })).to.equal(1);
      expect(valueOf(exposition, M('http_requests_total'), { route: 'status', method: 'GET', status: '200' })).to.be.at.least(1);
      expect(exposition.types.get(M('http_requests_total'))).to.equal('counter');
      expect(exposition.types.get(M('http_request_duration_seconds'))).to.equal('histogram');
      expect(valueOf(exposition, M('http_request_duration_seconds_count'), { route: 'send', method: 'POST' })).to.equal(3);
      expect(valueOf(exposition, M('http_request_duration_seconds_bucket'), { route: 'send', method: 'POST', le: '+Inf' })).to.equal(3);
      expect(valueOf(exposition, M('http_request_duration_seconds_sum'), { route: 'send', method: 'POST' })).to.be.greaterThan(0);
    });

    it('counts messages created by sending type and recipient transitions by status', () => {
      expect(valueOf(exposition, M('messages_created_total'), { sending_type: 'immediate' })).to.equal(2);
      expect(valueOf(exposition, M('messages_created_total'), { sending_type: 'scheduled' })).to.equal(1);
      // 4 recipients went out (2 + 1 immediate, 1 scheduled occurrence), each processing → sent → delivered once,
      // however often its receipts were repeated
      for (const status of ['processing', 'sent', 'delivered'])
        expect(valueOf(exposition, M('recipient_transitions_total'), { status }), status).to.equal(4);
      expect(valueOf(exposition, M('recipient_transitions_total'), { status: 'failed' })).to.equal(undefined);
    });

    it('counts charges and refunds with their exact amounts in 1/10 000 of the currency', () => {
      expect(valueOf(exposition, M('charges_total'), { currency: 'USD' })).to.equal(3);
      // 2 × 0.02, 1 × 0.02, 2 occurrences × 0.02 = 0.1 USD
      expect(sampleOf(exposition, M('charged_amount_ten_thousandths_total'), { currency: 'USD' })?.raw).to.equal('1000');
      expect(valueOf(exposition, M('refunds_total'), { currency: 'USD' })).to.equal(1);
      expect(sampleOf(exposition, M('refunded_amount_ten_thousandths_total'), { currency: 'USD' })?.raw).to.equal('200');
    });

    it('counts webhook attempts by verdict, times them, and counts drops by reason', () => {
      expect(valueOf(exposition, M('webhook_attempts_total'), { verdict: 'acknowledged' })).to.equal(acknowledging.requests.length);
      expect(valueOf(exposition, M('webhook_attempts_total'), { verdict: 'rejected' })).to.equal(4);
      expect(valueOf(exposition, M('webhook_attempt_duration_seconds_count'))).to.equal(acknowledging.requests.length + 4);
      expect(valueOf(exposition, M('webhook_dropped_total'), { reason: 'rejected' })).to.equal(4);
    });

    it('counts the webhook batches the relay formed by the way they went, and their events', () => {
      const paths = ['in_process', 'published'] as const;
      const batches = paths.map((path) => valueOf(exposition, M('webhook_batches_total'), { path }) ?? 0);
      const events = paths.map((path) => valueOf(exposition, M('webhook_batch_events_total'), { path }) ?? 0);
      // each event once (every recipient to the key's webhook, none with a callback_url): 11 of the shop, 4 of the other
      expect(events[0]! + events[1]!).to.equal(11 + 4);
      // each merchant's first batch is published (its pace is not known yet); a batch holds at least one event
      expect(batches[1]).to.be.at.least(2);
      expect(batches[0]).to.be.at.most(events[0]!);
      expect(batches[1]).to.be.at.most(events[1]!);
      expect(exposition.types.get(M('webhook_batches_total'))).to.equal('counter');
      expect(exposition.types.get(M('webhook_batch_events_total'))).to.equal('counter');
    });

    it('counts receipts by whether they changed anything, and their lag', () => {
      const changed = valueOf(exposition, M('receipts_total'), { changed: 'true' }) ?? 0;
      const unchanged = valueOf(exposition, M('receipts_total'), { changed: 'false' }) ?? 0;
      // 4 recipients × 4 receipts, plus the duplicated recipient's two more copies of each, which change nothing: the
      // simulator publishes the copies of a receipt in one batch, so even the exact copies reach the gateway (a
      // receipt overtaken by a later one changes nothing either, so the split of the others depends on arrival order)
      expect(changed + unchanged).to.equal(24);
      expect(unchanged).to.be.at.least(8);
      expect(changed).to.be.at.least(4);
      expect(valueOf(exposition, M('receipt_lag_seconds_count'))).to.equal(changed + unchanged);
    });

    it('reads actors, outbox backlog and shards at scrape time', async () => {
      expect(valueOf(exposition, M('actors_active'), { kind: 'wallet' })).to.equal(2);
      expect(valueOf(exposition, M('actors_active'), { kind: 'api_key' })).to.equal(2);
      expect(valueOf(exposition, M('actors_active'), { kind: 'message' })).to.equal(3);
      expect(exposition.types.get(M('actors_active'))).to.equal('gauge');
      // every recipient is final, so their receipt deadlines are retired: the outbox is empty
      const outbox = fixture.node.gateway.persistence.outbox;
      expect(valueOf(exposition, M('outbox_backlog'))).to.equal(await outbox.backlog());
      // read at scrape time: an entry waiting (a receipt deadline, due in 24 h) shows at the next scrape
      const before = await outbox.backlog();
      await fixture.node.gateway.persistence.journal.append({
        key: 'message:metrics-probe',
        seq: 1,
        events: [],
        outbox: [{ id: 'timeout:metrics-probe:0', topic: 'receipt.timeout', payload: {}, shard: 0 }],
        at: Date.now(),
      });
      expect(valueOf(parseExposition(await (await fetch(metricsUrl)).text()), M('outbox_backlog'))).to.equal(before + 1);
      await outbox.markDone(['timeout:metrics-probe:0']);
      expect(valueOf(exposition, M('shard_owned'))).to.equal(fixture.node.gateway.config.cluster.shards);
      expect(valueOf(exposition, M('cluster_shards'))).to.equal(fixture.node.gateway.config.cluster.shards);
    });

    it('times journal appends, scheduler ticks; reports process metrics', () => {
      expect(valueOf(exposition, M('journal_append_seconds_count'))).to.be.greaterThan(10);
      expect(valueOf(exposition, M('journal_append_seconds_sum'))).to.be.greaterThan(0);
      expect(valueOf(exposition, M('scheduler_lag_seconds_count'))).to.be.at.least(1);
      expect(valueOf(exposition, M('cluster_remote_hop_seconds_count')), 'no remote hop in a cluster of one').to.equal(0);
      expect(valueOf(exposition, M('process_cpu_user_seconds_total'))).to.be.greaterThan(0);
      expect(valueOf(exposition, M('nodejs_heap_size_used_bytes'))).to.be.greaterThan(0);
    });

    it('is not on the merchant port: /metrics there is an unknown route (404 envelope)', async () => {
      expectEnvelope(await call(`${fixture.baseUrl}/metrics`), 404, '1404');
      expectEnvelope(await call(`${fixture.api}/metrics`, { key: shop.apiKey }), 404, '1404');
      // and the operator port serves nothing else
      expect((await fetch(metricsUrl.replace('/metrics', '/health'))).status).to.equal(404);
    });
  });

  describe('a merchant without any webhook: recipient transitions and receipt timeouts, exact money', () => {
    /** Short, so the recipient the simulator never finishes fails with 1503 within the test. */
    const RECEIPT_TIMEOUT_MS = 3_000;
    /** The simulator's endings (docs/carrier-protocol.md): delivered, delivered with its receipts reversed, rejected, no final receipt. */
    const OUT_OF_ORDER = '+243812345699';
    const REJECTED = '+243812345691';
    const NO_FINAL_RECEIPT = '+243812345697';
    let fixture: ApiFixture;
    let exposition: Exposition;

    before(async () => {
      // Arrange: a merchant whose key has no webhook, sending without callback_url, priced at 0.0235 per SMS
      const metrics = createMetrics({ defaultMetrics: false });
      fixture = await startApi(await (await testPostgres()).createDatabase('metrics_no_webhook'), {
        metrics,
        inProcessSimulator: true,
        config: { rateLimits: GENEROUS, scheduling: { receiptTimeoutMs: RECEIPT_TIMEOUT_MS } },
      });
      const gateway = fixture.node.gateway;
      const shop = await seedMerchant(gateway, { name: 'Polling shop', prepaid: '10', pricing: false });
      await gateway.useCases.merchants.setPricing(shop.merchantId, [
        { countryCallingCode: '243', networkPrefix: '81', price: mustParseMoney('0.0235'), carrier: 'vodacom-cd' },
      ]);
      const pendingOf = async (id: string) =>
        (await call(`${fixture.api}/status/${id}`, { key: shop.apiKey })).body as { data: { pending: number; failed: number } };

      // Act: three recipients the simulator finishes; once they are final, one it never finishes (its own message,
      // so only its receipt deadline is left to expire)
      const finished = dataOf<SendData>(
        await call(`${fixture.api}/send`, {
          method: 'POST',
          key: shop.apiKey,
          json: { to: [DELIVERED, OUT_OF_ORDER, REJECTED], message: 'no hooks' },
        }),
        201,
      );
      await eventually(async () => (await pendingOf(finished.message_id)).data.pending === 0, 20_000, 'the three recipients final');
      const unfinished = dataOf<SendData>(
        await call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, json: { to: [NO_FINAL_RECEIPT], message: 'no hooks' } }),
        201,
      );
      await eventually(
        async () => (await pendingOf(unfinished.message_id)).data.failed === 1,
        30_000,
        'the unfinished recipient failed by the receipt timeout',
      );

      const response = await fetch(`http://127.0.0.1:${String(fixture.node.operator?.port)}/metrics`);
      exposition = parseExposition(await response.text());
    });

    after(async () => {
      await fixture.stop();
    });

    it('counts every status each recipient entered, though no webhook event was recorded', () => {
      // delivered and out of order: processing, sent, delivered; rejected: processing, failed; no final receipt:
      // processing, sent (accepted), then failed by the timeout
      expect(valueOf(exposition, M('recipient_transitions_total'), { status: 'processing' })).to.equal(4);
      expect(valueOf(exposition, M('recipient_transitions_total'), { status: 'sent' })).to.equal(3);
      expect(valueOf(exposition, M('recipient_transitions_total'), { status: 'delivered' })).to.equal(2);
      expect(valueOf(exposition, M('recipient_transitions_total'), { status: 'failed' })).to.equal(2);
      expect(valueOf(exposition, M('webhook_attempts_total'), { verdict: 'acknowledged' }), 'nothing went to a webhook').to.equal(
        undefined,
      );
    });

    it('counts the recipient failed by the receipt timeout', () => {
      expect(valueOf(exposition, M('receipt_timeouts_total'))).to.equal(1);
    });

    it('counts the money charged exactly: 4 × 0.0235 is 940 ten-thousandths', () => {
      expect(valueOf(exposition, M('charges_total'), { currency: 'USD' })).to.equal(2);
      expect(sampleOf(exposition, M('charged_amount_ten_thousandths_total'), { currency: 'USD' })?.raw).to.equal('940');
    });
  });

  describe('two nodes over NATS: an ask for a shard the other node owns', () => {
    let nats: TestNats;
    let clusterUrl: string;
    const transports: Transport[] = [];
    let first: ApiFixture;
    let second: ApiFixture | null = null;
    let metrics: Metrics;

    async function node(options: { metrics?: Metrics } = {}): Promise<ApiFixture> {
      const transport = await connectNatsTransport({ servers: nats.url, name: `metrics-node-${transports.length + 1}` });
      transports.push(transport);
      return startApi(clusterUrl, { ...options, transport, config: { rateLimits: GENEROUS, cluster: { forwardRequests: true } } });
    }

    before(async () => {
      nats = await startTestNats();
      clusterUrl = await (await testPostgres()).createDatabase('metrics_cluster');
      metrics = createMetrics({ defaultMetrics: false });
      first = await node({ metrics });
    });

    after(async () => {
      await second?.stop();
      await first.stop();
      for (const transport of transports) await transport.close();
      await nats.stop();
    });

    async function scrape(): Promise<Exposition> {
      return parseExposition((await metrics.scrape()).body);
    }

    it('shares the shards (shard_owned), times the remote hop (cluster_remote_hop_seconds) and counts it by what crossed (cluster_remote_hops_total)', async () => {
      const shards = first.node.gateway.config.cluster.shards;
      expect(valueOf(await scrape(), M('shard_owned'))).to.equal(shards);

      second = await node();
      await eventually(async () => valueOf(await scrape(), M('shard_owned')) === shards / 2, 30_000, 'half the shards handed over');
      expect(valueOf(await scrape(), M('cluster_shards')), 'every node reports the whole').to.equal(shards);
      // a merchant living on the other node's shards
      const gateway = first.node.gateway;
      let remote: SeededMerchant | null = null;
      for (let i = 0; i < 20 && !remote; i++) {
        const merchant = await seedMerchant(gateway, { name: `Remote shop ${i}`, prepaid: '1', pricing: false });
        if (!gateway.shardManager?.owns(gateway.router.shardOf(merchant.merchantId))) remote = merchant;
      }
      expect(remote, 'a merchant on the other node').to.not.equal(null);
      const earlier = await scrape();
      const before = valueOf(earlier, M('cluster_remote_hop_seconds_count')) ?? 0;
      const forwardedBefore = valueOf(earlier, M('cluster_remote_hops_total'), { what: 'merchant-request' }) ?? 0;

      expect((await call(`${first.api}/balance`, { key: remote!.apiKey })).status).to.equal(200);

      const after = await scrape();
      // the key's actor and the wallet both live there: the request is forwarded whole, one hop
      expect(valueOf(after, M('cluster_remote_hop_seconds_count'))).to.equal(before + 1);
      expect(valueOf(after, M('cluster_remote_hop_seconds_sum'))).to.be.greaterThan(0);
      expect(valueOf(after, M('cluster_remote_hops_total'), { what: 'merchant-request' }), 'the hop, by what crossed').to.equal(
        forwardedBefore + 1,
      );
    });
  });
});
