import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  createSmsGatewayClient,
  parseWebhookEvent,
  SmsGatewayAuthError,
  SmsGatewayError,
  SmsGatewayNotFoundError,
  verifyBasicAuth,
  verifyWebhookSignature,
  type SmsGatewayClient,
  type SmsGatewayClientOptions,
} from '../../../src/client/index.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { signature } from '../../../src/webhooks/webhook-sender.js';
import { NUMBERS } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

// 2031-03-10 08:00 UTC is 09:00 in Africa/Kinshasa; the scheduled dates below are in April
const NOW = Date.UTC(2031, 2, 10, 8, 0, 0);
const BALANCE_LIMIT = 30;
const SCHEDULED_DATES = [
  { date: '2031-04-01', time: '10:00' },
  { date: '2031-04-02', time: '10:00' },
];

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

interface Delivery {
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
}

/** A merchant's webhook endpoint: records each delivery and answers 204. */
async function startReceiver(): Promise<{ url: string; deliveries: Delivery[]; close(): Promise<void> }> {
  const deliveries: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

async function waitFor<T>(find: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} not seen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('client against a running gateway', function () {
  this.timeout(60_000);
  const clock = createManualClock(NOW);
  let fixture: ApiFixture;
  let shop: SeededMerchant;
  let client: SmsGatewayClient;

  const merchant = (options: Parameters<typeof seedMerchant>[1] = { prepaid: '100', postpaid: '10' }) =>
    seedMerchant(fixture.node.gateway, { timezone: 'Africa/Kinshasa', ...options });
  const clientFor = (apiKey: string, options: Partial<SmsGatewayClientOptions> = {}) =>
    createSmsGatewayClient({ baseUrl: fixture.baseUrl, apiKey, ...options });

  before(async () => {
    const url = await (await testPostgres()).createDatabase('client');
    fixture = await startApi(url, { clock });
    shop = await merchant({ prepaid: '1000', postpaid: '10' });
    client = clientFor(shop.apiKey);
  });
  after(async () => {
    await fixture.stop();
  });

  describe('round trips', () => {
    it('when health is asked, then it reports ok for the sandbox', async () => {
      const health = await client.health();
      expect(health).to.deep.include({ status: 'ok', environment: 'sandbox', checks: { database: 'ok', transport: 'ok', carriers: {} } });
      expect(health.version).to.be.a('string');
    });

    it('when balance is asked, then it is exactly the seeded wallets', async () => {
      const own = await merchant({ prepaid: '100', postpaid: '10' });
      expect(await clientFor(own.apiKey).balance()).to.deep.equal({
        balance: 110,
        sms_wallet_balance: 100,
        postpaid_wallet_balance: 10,
        currency: 'USD',
        unit_price: 0.01,
        available_sms: 11000,
      });
    });

    it('when calculate is asked in each mode, then the result echoes the mode with the mean price of the rows (0.02, 0.03, 0.05)', async () => {
      const toSms = await client.calculate({ mode: 'amount_to_sms', amount: 10 });
      expect(toSms).to.deep.include({ mode: 'amount_to_sms', amount: 10, sms_count: 300, average_price: 0.0333, currency: 'USD' });
      const toAmount = await client.calculate({ mode: 'sms_to_amount', sms_count: 300 });
      expect(toAmount).to.deep.include({ mode: 'sms_to_amount', amount: 9.99, sms_count: 300, average_price: 0.0333 });
      expect(toAmount.currency_symbol).to.be.a('string').and.not.equal('');
    });

    it('when a message is sent, then status finds it with its recipients', async () => {
      const sent = await client.send({ to: [NUMBERS.vodacom, NUMBERS.airtel], message: 'Hello from the client', sender_id: 'Shop' });
      expect(sent).to.deep.equal({
        message_id: sent.message_id,
        total_recipients: 2,
        total_messages: 2,
        total_cost: 0.05,
        currency: 'USD',
        status: 'pending',
      });

      const status = await client.status(sent.message_id);
      expect(status).to.deep.include({
        message_id: sent.message_id,
        total_recipients: 2,
        sending_type: 'immediate',
        schedule: null,
        occurrences: [],
      });
      expect(status.delivered + status.failed + status.pending).to.equal(2);
      expect(status.recipients.map((r) => [r.recipient_index, r.phone])).to.deep.equal([
        [0, NUMBERS.vodacom],
        [1, NUMBERS.airtel],
      ]);
    });

    it('when a send is repeated with the same idempotency key, then the original result comes back and is charged once', async () => {
      const own = await merchant({ prepaid: '1' });
      const ownClient = clientFor(own.apiKey);
      const request = { to: [NUMBERS.orangeFr], message: 'Once only' };
      const first = await ownClient.send(request, { idempotencyKey: 'order-1' });
      const replay = await ownClient.send(request, { idempotencyKey: 'order-1' });
      expect(replay).to.deep.equal(first);
      expect((await ownClient.balance()).sms_wallet_balance).to.equal(0.95);
      const reused = await rejection(ownClient.send({ ...request, message: 'Another body' }, { idempotencyKey: 'order-1' }));
      expect(reused).to.be.instanceOf(SmsGatewayError).and.include({ status: 409, errorCode: '1111' });
    });

    it('when a scheduled send is paused, resumed and cancelled, then each answer carries the schedule and cancel refunds what is left', async () => {
      const sent = await client.send({
        to: [NUMBERS.vodacom],
        message: 'Twice',
        sending_type: 'scheduled',
        scheduled_dates: SCHEDULED_DATES,
      });
      expect(sent).to.include({ total_messages: 2, total_cost: 0.04, status: 'pending' });

      const paused = await client.pause(sent.message_id);
      expect(paused).to.deep.equal({
        message_id: sent.message_id,
        schedule: {
          type: 'scheduled',
          state: 'paused',
          next_occurrence_at: '2031-04-01T09:00:00.000Z',
          occurrences_total: 2,
          occurrences_dispatched: 0,
          occurrences_remaining: 2,
        },
      });
      const resumed = await client.resume(sent.message_id);
      expect(resumed).to.deep.include({ message_id: sent.message_id, refunded_amount: 0 });
      expect(resumed.schedule?.state).to.equal('active');
      const cancelled = await client.cancel(sent.message_id);
      expect(cancelled).to.deep.include({ message_id: sent.message_id, refunded_amount: 0.04 });
      expect(cancelled.schedule).to.include({ state: 'cancelled', occurrences_remaining: 0 });
      expect((await client.status(sent.message_id)).status).to.equal('scheduled');
    });
  });

  describe('typed errors', () => {
    it('when the request is invalid, then SmsGatewayError carries 1110, the request id and the field details', async () => {
      const error = await rejection(client.send({ to: [NUMBERS.vodacom, '123'], message: 'a'.repeat(1601) }));
      expect(error).to.be.instanceOf(SmsGatewayError);
      const gatewayError = error as SmsGatewayError;
      expect(gatewayError).to.include({ status: 400, errorCode: '1110', retryAfter: undefined });
      expect(gatewayError.requestId).to.be.a('string').and.not.equal('');
      expect(gatewayError.details.map((d) => d.field).sort()).to.deep.equal(['message', 'to[1]']);
      for (const detail of gatewayError.details) expect(detail.message).to.be.a('string').and.not.equal('');
    });

    it('when the balance does not cover the send, then SmsGatewayError is 402 with 1202', async () => {
      const poor = await merchant({ prepaid: '0.01', pricing: false });
      const error = await rejection(clientFor(poor.apiKey).send({ to: [NUMBERS.vodacom, NUMBERS.airtel], message: 'Too dear' }));
      expect(error).to.be.instanceOf(SmsGatewayError).and.include({ status: 402, errorCode: '1202' });
      expect((error as SmsGatewayError).requestId)
        .to.be.a('string')
        .and.not.equal('');
    });

    it('when a merchant has no wallet, then balance rejects with 400/1210', async () => {
      const walletless = await merchant({});
      expect(await rejection(clientFor(walletless.apiKey).balance()))
        .to.be.instanceOf(SmsGatewayError)
        .and.include({ status: 400, errorCode: '1210' });
    });

    it('when an immediate send is cancelled, then SmsGatewayError is 409 with 1120', async () => {
      const sent = await client.send({ to: [NUMBERS.vodacom], message: 'Now' });
      expect(await rejection(client.cancel(sent.message_id)))
        .to.be.instanceOf(SmsGatewayError)
        .and.include({ status: 409, errorCode: '1120' });
    });

    it("when the message is unknown or another merchant's, then status and management reject with SmsGatewayNotFoundError", async () => {
      const other = await merchant();
      const theirs = await clientFor(other.apiKey).send({
        to: [NUMBERS.vodacom],
        message: 'Theirs',
        sending_type: 'scheduled',
        scheduled_dates: SCHEDULED_DATES,
      });
      const attempts = [
        () => client.status('msg_doesnotexist'),
        () => client.status(theirs.message_id),
        () => client.cancel(theirs.message_id),
        () => client.pause(theirs.message_id),
      ];
      for (const attempt of attempts) {
        const error = await rejection(attempt());
        expect(error).to.be.instanceOf(SmsGatewayNotFoundError).and.include({ status: 404 });
        expect((error as SmsGatewayNotFoundError).detail)
          .to.be.a('string')
          .and.not.equal('');
      }
    });

    it('when the key is unknown or its status forbids it, then SmsGatewayAuthError carries 401 or 403 and the detail', async () => {
      const unknown = await rejection(clientFor('sk_test_00000000000000000000000000000000').balance());
      expect(unknown).to.be.instanceOf(SmsGatewayAuthError).and.include({ status: 401 });
      expect((unknown as SmsGatewayAuthError).detail)
        .to.be.a('string')
        .and.not.equal('');

      const own = await merchant();
      await fixture.node.gateway.useCases.apiKeys.setStatus(own.keyId, 'suspended');
      expect(await rejection(clientFor(own.apiKey).balance()))
        .to.be.instanceOf(SmsGatewayAuthError)
        .and.include({ status: 403 });
    });
  });

  describe('rate limits', () => {
    /** A fresh key (so a bucket of its own) whose balance bucket is spent at the current instant. */
    async function exhaustedBalanceBucket(): Promise<SeededMerchant> {
      const own = await merchant();
      const spender = clientFor(own.apiKey, { retry: { maxRetries: 0 } });
      for (let i = 0; i < BALANCE_LIMIT; i++) await spender.balance();
      return own;
    }

    it('when maxRetries is 0, then the 429 surfaces as SmsGatewayError with 1301 and retryAfter', async () => {
      const own = await exhaustedBalanceBucket();
      const error = await rejection(clientFor(own.apiKey, { retry: { maxRetries: 0 } }).balance());
      expect(error).to.be.instanceOf(SmsGatewayError).and.include({ status: 429, errorCode: '1301' });
      const limited = error as SmsGatewayError;
      expect(limited.retryAfter).to.be.a('number').and.within(1, 60);
      expect(limited.requestId).to.be.a('string').and.not.equal('');
    });

    it('when the balance bucket is spent, then the client waits exactly Retry-After seconds and then succeeds', async () => {
      const own = await exhaustedBalanceBucket();
      const { retryAfter } = (await rejection(clientFor(own.apiKey, { retry: { maxRetries: 0 } }).balance())) as SmsGatewayError;
      const waits: number[] = [];
      const patient = clientFor(own.apiKey, {
        // the server's window runs on the manual clock: waiting is moving it
        sleep: (ms) => {
          waits.push(ms);
          clock.advance(ms);
          return Promise.resolve();
        },
      });

      expect(await patient.balance()).to.include({ sms_wallet_balance: 100 });
      expect(retryAfter).to.be.a('number').and.greaterThan(0);
      expect(waits).to.deep.equal([retryAfter! * 1000]);
    });

    it('when Retry-After is beyond maxWaitSeconds, then the 429 surfaces without waiting', async () => {
      const own = await exhaustedBalanceBucket();
      const waits: number[] = [];
      const hasty = clientFor(own.apiKey, {
        retry: { maxWaitSeconds: 1 },
        sleep: (ms) => {
          waits.push(ms);
          return Promise.resolve();
        },
      });
      expect(await rejection(hasty.balance()))
        .to.be.instanceOf(SmsGatewayError)
        .and.include({ status: 429 });
      expect(waits).to.deep.equal([]);
    });
  });

  describe('webhooks', () => {
    it('when signing is on for the key, then a delivery of the real server verifies and parses, with its Basic credentials', async () => {
      const receiver = await startReceiver();
      try {
        const own = await merchant();
        const keys = fixture.node.gateway.useCases.apiKeys;
        const credentials = { username: 'hooks', password: 'pa:ss' };
        expect(await keys.setWebhook(own.keyId, { url: receiver.url, ...credentials })).to.equal(true);
        const secret = (await keys.setSigning(own.keyId, true))?.secret;
        expect(secret).to.be.a('string');

        const sent = await clientFor(own.apiKey).send({ to: [NUMBERS.vodacom], message: 'Signed' });
        const delivery = await waitFor(
          () => receiver.deliveries.find((d) => d.rawBody.includes(sent.message_id) && d.rawBody.includes('sms.queued')),
          20_000,
          'sms.queued delivery',
        );

        // the server signs with its (manual) clock
        expect(verifyWebhookSignature({ body: delivery.rawBody, headers: delivery.headers, secret: secret!, now: clock.now() })).to.equal(
          true,
        );
        expect(
          verifyWebhookSignature({ body: delivery.rawBody, headers: delivery.headers, secret: 'whsec_wrong', now: clock.now() }),
        ).to.equal(false);
        expect(verifyBasicAuth(delivery.headers.authorization, credentials)).to.equal(true);
        expect(verifyBasicAuth(delivery.headers.authorization, { ...credentials, password: 'pass' })).to.equal(false);
        const event = parseWebhookEvent(delivery.rawBody);
        expect(event).to.deep.include({ event_type: 'sms.queued', message_id: sent.message_id });
        if (event.event_type !== 'sms.queued') throw new Error('narrowing');
        expect(event.data).to.deep.equal({ total_recipients: 1, total_messages: 1, total_cost: 0.02, currency: 'USD', scheduled_at: null });
      } finally {
        await receiver.close();
      }
    });

    it("when a body is signed by the server's signature function, then the client verifies it", () => {
      const body = JSON.stringify({ event_id: 'e', event_type: 'sms.sent', message: 'é€😀' });
      const timestamp = Math.floor(NOW / 1000);
      const headers = { 'x-signature': signature('whsec_shared', timestamp, body), 'x-signature-timestamp': String(timestamp) };
      expect(verifyWebhookSignature({ body, headers, secret: 'whsec_shared', now: NOW })).to.equal(true);
      expect(verifyWebhookSignature({ body: Buffer.from(body), headers, secret: 'whsec_shared', now: NOW + 301_000 })).to.equal(false);
    });
  });
});
