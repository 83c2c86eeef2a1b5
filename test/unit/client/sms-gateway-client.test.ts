import { expect } from 'chai';
import {
  createSmsGatewayClient,
  SmsGatewayError,
  SmsGatewayNetworkError,
  SmsGatewayResponseError,
  type SmsGatewayClientOptions,
} from '../../../src/client/index.js';

const BASE_URL = 'https://gateway.example';
const API = `${BASE_URL}/api/v1/messaging/sms-api`;
const KEY = 'sk_test_0123456789abcdefghijABCDEFGHIJ01';
const BALANCE = {
  balance: 110,
  sms_wallet_balance: 100,
  postpaid_wallet_balance: 10,
  currency: 'USD',
  unit_price: 0.01,
  available_sms: 11000,
};
const SEND_RESULT = { message_id: 'msg_1', total_recipients: 1, total_messages: 1, total_cost: 0.02, currency: 'USD', status: 'pending' };

interface Recorded {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly body: string | null;
}

type Answer = Response | Error;

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-request-id': 'req-1', ...headers } });
const ok = (data: unknown, status = 200) => json(status, { status_code: status, data });
const envelope = (status: number, errorCode: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  json(status, { success: false, status_code: status, error_code: errorCode, message: 'text', request_id: 'req-1', ...extra }, headers);
const limited = (seconds: number) => envelope(429, '1301', { retry_after: seconds }, { 'retry-after': String(seconds) });
const unavailable = (retryAfter?: number) =>
  envelope(
    503,
    '1402',
    retryAfter === undefined ? {} : { retry_after: retryAfter },
    retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) },
  );

/** A client over a scripted fetch: each call takes the next answer; requests and waits are recorded. */
function scripted(answers: Answer[], options: Partial<SmsGatewayClientOptions> = {}) {
  const requests: Recorded[] = [];
  const waits: number[] = [];
  const fakeFetch: typeof fetch = (input, init) => {
    requests.push({
      url: input instanceof Request ? input.url : String(input),
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? init.body : null,
    });
    const answer = answers.shift();
    if (answer === undefined) return Promise.reject(new Error('no more scripted answers'));
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  const client = createSmsGatewayClient({
    baseUrl: `${BASE_URL}/`,
    apiKey: KEY,
    fetch: fakeFetch,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
    ...options,
  });
  return { client, requests, waits };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('client: requests and retries (scripted fetch)', () => {
  describe('requests', () => {
    it('when send is called with an idempotency key, then it POSTs the JSON body with app-key, Content-Type and Idempotency-Key', async () => {
      const { client, requests } = scripted([ok(SEND_RESULT, 201)]);
      const request = { to: ['+243812345678'], message: 'Hello' };

      expect(await client.send(request, { idempotencyKey: 'order-42' })).to.deep.equal(SEND_RESULT);

      const [sent] = requests;
      expect(sent).to.include({ url: `${API}/send`, method: 'POST', body: JSON.stringify(request) });
      expect(sent!.headers.get('app-key')).to.equal(KEY);
      expect(sent!.headers.get('content-type')).to.equal('application/json');
      expect(sent!.headers.get('idempotency-key')).to.equal('order-42');
    });

    it('when a message id has reserved characters, then it is percent-encoded in the path; management calls send no body', async () => {
      const { client, requests } = scripted([ok({}), ok({}), ok({}), ok({})]);
      await client.status('a/b?c');
      await client.cancel('m 1');
      await client.pause('m1');
      await client.resume('m1');
      expect(requests.map((r) => `${r.method} ${r.url}`)).to.deep.equal([
        `GET ${API}/status/a%2Fb%3Fc`,
        `DELETE ${API}/cancel/m%201`,
        `POST ${API}/pause/m1`,
        `POST ${API}/resume/m1`,
      ]);
      for (const r of requests) {
        expect(r.body).to.equal(null);
        expect(r.headers.get('content-type')).to.equal(null);
      }
    });

    it('when health answers 503 with data, then it resolves with the degraded report', async () => {
      const degraded = { status: 'degraded', version: '0.1.0', environment: 'sandbox', checks: { database: 'down', transport: 'ok' } };
      const { client } = scripted([ok(degraded, 503)]);
      expect(await client.health()).to.deep.equal(degraded);
    });

    it('type level: calculate and send accept only the contract shapes, and calculate narrows its result by mode', async () => {
      const { client } = scripted([
        ok({ mode: 'amount_to_sms', amount: 1, sms_count: 30, average_price: 0.0333, currency: 'USD', currency_symbol: '$' }),
      ]);
      const result = await client.calculate({ mode: 'amount_to_sms', amount: 1 });
      const mode: 'amount_to_sms' = result.mode;
      expect(mode).to.equal('amount_to_sms');
      // nothing below runs: the annotations are the test
      const never = (): void => {
        // @ts-expect-error amount_to_sms needs amount
        void client.calculate({ mode: 'amount_to_sms', sms_count: 3 });
        // @ts-expect-error an immediate send takes no scheduled_dates
        void client.send({ to: ['+243812345678'], message: 'x', scheduled_dates: [{ date: '2031-04-01', time: '10:00' }] });
        // @ts-expect-error a scheduled send needs scheduled_dates
        void client.send({ to: ['+243812345678'], message: 'x', sending_type: 'scheduled' });
      };
      expect(never).to.be.a('function');
    });
  });

  describe('errors', () => {
    it('when the connection fails, then it rejects with SmsGatewayNetworkError carrying the cause, and does not retry', async () => {
      const cause = new TypeError('fetch failed');
      const { client, requests } = scripted([cause]);
      const error = await rejection(client.balance());
      expect(error).to.be.instanceOf(SmsGatewayNetworkError);
      expect((error as Error).cause).to.equal(cause);
      expect((error as Error).message).to.contain('GET /balance');
      expect(requests).to.have.length(1);
    });

    it('when the server does not answer within timeoutMs, then it rejects with SmsGatewayNetworkError', async () => {
      const hanging: typeof fetch = (_input, init) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => {
            reject(init.signal?.reason as Error);
          });
        });
      const client = createSmsGatewayClient({ baseUrl: BASE_URL, apiKey: KEY, fetch: hanging, timeoutMs: 20 });
      const error = await rejection(client.balance());
      expect(error).to.be.instanceOf(SmsGatewayNetworkError);
      expect(((error as Error).cause as Error).name).to.equal('TimeoutError');
    });

    it('when the answer is not one of the API shapes (a proxy page), then it rejects with SmsGatewayResponseError', async () => {
      const { client } = scripted([new Response('<html>Bad gateway</html>', { status: 502 })]);
      const error = await rejection(client.balance());
      expect(error).to.be.instanceOf(SmsGatewayResponseError);
      expect(error).to.include({ status: 502, body: '<html>Bad gateway</html>' });
    });

    it('when an envelope lacks request_id, then the X-Request-Id header fills it', async () => {
      const { client } = scripted([json(400, { success: false, status_code: 400, error_code: '1210', message: 'No wallet.' })]);
      expect(await rejection(client.balance())).to.include({ errorCode: '1210', requestId: 'req-1', status: 400 });
    });
  });

  describe('retries', () => {
    it('when 429 answers twice, then it waits each Retry-After and resolves with the third answer', async () => {
      const { client, requests, waits } = scripted([limited(2), limited(5), ok(BALANCE)]);
      expect(await client.balance()).to.deep.equal(BALANCE);
      expect(waits).to.deep.equal([2_000, 5_000]);
      expect(requests).to.have.length(3);
    });

    it('when every attempt is 429, then it stops after maxRetries and rejects with the last 429', async () => {
      const { client, requests, waits } = scripted([limited(1), limited(1), limited(3)], { retry: { maxRetries: 2 } });
      const error = await rejection(client.balance());
      expect(error).to.be.instanceOf(SmsGatewayError).and.include({ status: 429, errorCode: '1301', retryAfter: 3 });
      expect(waits).to.deep.equal([1_000, 1_000]);
      expect(requests).to.have.length(3);
    });

    it('when the waits would exceed maxWaitSeconds, then it rejects instead of waiting', async () => {
      const suspended = scripted([limited(900)]);
      expect(await rejection(suspended.client.balance())).to.include({ retryAfter: 900 });
      expect(suspended.waits).to.deep.equal([]);

      const budget = scripted([limited(20), limited(30), limited(20)], { retry: { maxRetries: 5, maxWaitSeconds: 50 } });
      expect(await rejection(budget.client.balance())).to.include({ retryAfter: 20 });
      expect(budget.waits).to.deep.equal([20_000, 30_000]);
    });

    it('when 503 carries Retry-After, then a GET, a calculate and a send with an idempotency key are retried', async () => {
      const get = scripted([unavailable(1), ok(BALANCE)]);
      expect(await get.client.balance()).to.deep.equal(BALANCE);
      const calculate = scripted([unavailable(1), ok({ mode: 'sms_to_amount' })]);
      expect(await calculate.client.calculate({ mode: 'sms_to_amount', sms_count: 3 })).to.deep.equal({ mode: 'sms_to_amount' });
      const send = scripted([unavailable(1), ok(SEND_RESULT, 201)]);
      expect(await send.client.send({ to: ['+243812345678'], message: 'x' }, { idempotencyKey: 'k' })).to.deep.equal(SEND_RESULT);
      expect([get.waits, calculate.waits, send.waits]).to.deep.equal([[1_000], [1_000], [1_000]]);
      expect(send.requests.map((r) => r.headers.get('idempotency-key'))).to.deep.equal(['k', 'k']);
    });

    it('when a send without an idempotency key meets 503, then it is not retried (it may have been charged)', async () => {
      const { client, requests, waits } = scripted([unavailable(1), ok(SEND_RESULT, 201)]);
      expect(await rejection(client.send({ to: ['+243812345678'], message: 'x' }))).to.include({
        status: 503,
        errorCode: '1402',
        retryAfter: 1,
      });
      expect(requests).to.have.length(1);
      expect(waits).to.deep.equal([]);
    });

    it('when a send without an idempotency key meets 429, then it is retried (a 429 is answered before anything is done)', async () => {
      const { client, waits } = scripted([limited(1), ok(SEND_RESULT, 201)]);
      expect(await client.send({ to: ['+243812345678'], message: 'x' })).to.deep.equal(SEND_RESULT);
      expect(waits).to.deep.equal([1_000]);
    });

    it('when 503 has no Retry-After, or the error is anything else, then it is not retried', async () => {
      for (const answer of [unavailable(), envelope(500, '1401'), envelope(402, '1202'), envelope(403, '1302', { retry_after: 30 })]) {
        const { client, requests } = scripted([answer, ok(BALANCE)]);
        expect(await rejection(client.balance())).to.be.instanceOf(SmsGatewayError);
        expect(requests).to.have.length(1);
      }
    });
  });
});
