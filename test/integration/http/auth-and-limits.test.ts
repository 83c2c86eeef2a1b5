import { expect } from 'chai';
import sinon from 'sinon';
import type { KeyStatus } from '../../../src/api-keys/api-key.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import {
  client,
  dataOf,
  expectDetail,
  expectEnvelope,
  expectFieldError,
  NUMBERS,
  requestIdOf,
  unknownKey,
} from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture, type CallResult } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const MINUTE = 60_000;
/** The whole body of a 429 (and of a 1302 403): the envelope with retry_after, no details. */
const LIMITED_KEYS = ['error_code', 'message', 'request_id', 'retry_after', 'status_code', 'success'];

describe('HTTP API: authentication, request order and rate limits', function () {
  this.timeout(120_000);
  const clock = createManualClock(Date.UTC(2031, 0, 6, 9, 0, 0));
  let url: string;
  let fixture: ApiFixture;
  const started: ApiFixture[] = [];
  const api = () => fixture.api;
  const http = client(api);

  async function start(): Promise<ApiFixture> {
    fixture = await startApi(url, { clock });
    started.push(fixture);
    return fixture;
  }

  /** Stops the node and starts a new one on the same database (and the same clock). */
  async function restart(): Promise<void> {
    const old = fixture;
    started.splice(started.indexOf(old), 1);
    await old.stop();
    await start();
  }

  /** A fresh merchant, so each test has its own key and its own rate buckets. */
  const merchant = (): Promise<SeededMerchant> => seedMerchant(fixture.node.gateway, { prepaid: '1000', postpaid: '10' });

  before(async () => {
    url = await (await testPostgres()).createDatabase('http_auth');
    await start();
  });
  afterEach(() => {
    sinon.restore();
  });
  after(async () => {
    for (const f of started) await f.stop();
  });

  describe('authentication table', () => {
    let shop: SeededMerchant;
    before(async () => {
      shop = await merchant();
    });

    it('when the app-key header is absent, then it is 401 with exactly {detail}', async () => {
      expectDetail(await http.balance(null), 401);
    });

    it('when the app-key header is present but empty, then it is 401 with exactly {detail}', async () => {
      expectDetail(await call(`${api()}/balance`, { headers: { 'app-key': '' } }), 401);
    });

    it('when the key has the wrong environment prefix, is too short or is unknown, then each is 401 with the same {detail} body', async () => {
      const wrongEnvironment = await http.balance(shop.apiKey.replace('sk_test_', 'sk_live_'));
      const tooShort = await http.balance(shop.apiKey.slice(0, -1));
      const unknown = await http.balance(unknownKey());
      expectDetail(wrongEnvironment, 401);
      expectDetail(tooShort, 401);
      expectDetail(unknown, 401);
      expect(tooShort.text).to.equal(wrongEnvironment.text);
      expect(unknown.text).to.equal(wrongEnvironment.text);
      // the valid key itself works: the rows above fail for their own reason only
      dataOf(await http.balance(shop.apiKey));
    });

    it('when a live key of the right shape is presented to the sandbox, then it is 401 like an unknown key', async () => {
      const live = await http.balance(unknownKey('live'));
      expectDetail(live, 401);
      expect(live.text).to.equal((await http.balance(unknownKey())).text);
    });

    const FORBIDDEN: readonly Exclude<KeyStatus, 'allowed'>[] = [
      'pending_validation',
      'suspended',
      'revoqued',
      'locked',
      'expired',
      'rejected',
    ];
    for (const status of FORBIDDEN) {
      it(`when the key status is ${status}, then it is 403 with exactly {detail}`, async () => {
        const own = await merchant();
        expect(await fixture.node.gateway.useCases.apiKeys.setStatus(own.keyId, status)).to.equal(true);
        expectDetail(await http.balance(own.apiKey), 403);
        expectDetail(await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'x' }), 403);
        await fixture.node.gateway.useCases.apiKeys.setStatus(own.keyId, 'allowed');
        dataOf(await http.balance(own.apiKey));
      });
    }

    it('when expires_at is one millisecond ago or now, then it is 403 {detail}; one millisecond ahead, the key works', async () => {
      const own = await merchant();
      const keys = fixture.node.gateway.useCases.apiKeys;
      await keys.setExpiry(own.keyId, clock.now() + 1);
      dataOf(await http.balance(own.apiKey));
      await keys.setExpiry(own.keyId, clock.now());
      expectDetail(await http.balance(own.apiKey), 403);
      await keys.setExpiry(own.keyId, clock.now() - 1);
      expectDetail(await http.balance(own.apiKey), 403);
    });

    it('when the key is soft-deleted, then it is 401 with the body of an unknown key', async () => {
      const own = await merchant();
      dataOf(await http.balance(own.apiKey));
      await fixture.node.gateway.useCases.apiKeys.deleteKey(own.keyId);
      const deleted = await http.balance(own.apiKey);
      expectDetail(deleted, 401);
      expect(deleted.text).to.equal((await http.balance(unknownKey())).text);
    });

    it('when the key is rotated, then the old key is 401 at once and the new one works', async () => {
      const own = await merchant();
      dataOf(await http.balance(own.apiKey));
      const rotated = await fixture.node.gateway.useCases.apiKeys.rotateKey(own.keyId);
      expect(rotated).to.not.equal(null);
      expect(rotated!.apiKey).to.not.equal(own.apiKey);
      expectDetail(await http.balance(own.apiKey), 401);
      expect(dataOf(await http.balance(rotated!.apiKey))).to.include({ sms_wallet_balance: 1000 });
    });

    it('when verification rejects with an exception, then it is 500 with exactly {detail}', async () => {
      sinon.stub(fixture.node.gateway.useCases.apiKeys, 'verify').rejects(new Error('directory unreachable'));
      expectDetail(await http.balance(shop.apiKey), 500);
    });

    it('when verification throws synchronously, then it is still 500 with exactly {detail}', async () => {
      sinon.stub(fixture.node.gateway.useCases.apiKeys, 'verify').throws(new Error('directory unreachable'));
      expectDetail(await http.balance(shop.apiKey), 500);
    });
  });

  describe('request order: authenticate → rate limit → validate', () => {
    it('when there is no key and the body is malformed, oversized or of the wrong type, then it is 401', async () => {
      const json = { 'content-type': 'application/json' };
      expectDetail(await call(`${api()}/send`, { method: 'POST', raw: '{"to": [', headers: json }), 401);
      expectDetail(await call(`${api()}/send`, { method: 'POST', raw: 'to=1', headers: { 'content-type': 'text/plain' } }), 401);
      expectDetail(await call(`${api()}/calculate`, { method: 'POST', raw: `"${'x'.repeat(300_000)}"`, headers: json }), 401);
    });

    it('when the key is forbidden and the body is malformed, then it is 403', async () => {
      const own = await merchant();
      await fixture.node.gateway.useCases.apiKeys.setStatus(own.keyId, 'locked');
      expectDetail(
        await call(`${api()}/send`, { method: 'POST', key: own.apiKey, raw: '{"to": [', headers: { 'content-type': 'application/json' } }),
        403,
      );
    });

    it('when the key is rate-limited and the body is malformed, then it is 429, not 400', async () => {
      const own = await merchant();
      for (let i = 0; i < 60; i++) expect((await http.calculate(own.apiKey, { mode: 'sms_to_amount', sms_count: 1 })).status).to.equal(200);
      const limited = await call(`${api()}/calculate`, {
        method: 'POST',
        key: own.apiKey,
        raw: '{"mode": ',
        headers: { 'content-type': 'application/json' },
      });
      expectEnvelope(limited, 429, '1301');
    });
  });

  describe('rate limits (manual clock)', () => {
    interface BucketCase {
      readonly bucket: string;
      readonly cap: number;
      readonly admittedStatus: number;
      readonly request: (key: string) => Promise<CallResult>;
    }
    const BUCKETS: readonly BucketCase[] = [
      {
        bucket: 'send (POST /send)',
        cap: 60,
        admittedStatus: 201,
        request: (key) => http.send(key, { to: [NUMBERS.vodacom], message: 'hi' }),
      },
      { bucket: 'status (GET /status)', cap: 120, admittedStatus: 404, request: (key) => http.status(key, 'msg_unknown') },
      { bucket: 'balance (GET /balance)', cap: 30, admittedStatus: 200, request: (key) => http.balance(key) },
      {
        bucket: 'calculate (POST /calculate)',
        cap: 60,
        admittedStatus: 200,
        request: (key) => http.calculate(key, { mode: 'amount_to_sms', amount: 1 }),
      },
      { bucket: 'management (DELETE /cancel)', cap: 60, admittedStatus: 404, request: (key) => http.cancel(key, 'msg_unknown') },
    ];

    for (const { bucket, cap, admittedStatus, request } of BUCKETS) {
      it(`when the ${bucket} bucket sees ${cap - 1}, ${cap}, ${cap + 1} requests in a minute, then the last is 429/1301 until the oldest leaves the window`, async () => {
        const own = await merchant();
        for (let i = 0; i < cap - 2; i++) expect((await request(own.apiKey)).status).to.equal(admittedStatus);
        expect((await request(own.apiKey)).status, `request ${cap - 1}`).to.equal(admittedStatus);
        expect((await request(own.apiKey)).status, `request ${cap}`).to.equal(admittedStatus);
        const over = expectEnvelope(await request(own.apiKey), 429, '1301');
        expect(Object.keys(over).sort()).to.deep.equal(LIMITED_KEYS);
        expect(over.retry_after).to.equal(60);
        clock.advance(MINUTE - 1);
        expect(expectEnvelope(await request(own.apiKey), 429, '1301').retry_after, 'a fresh Retry-After').to.equal(1);
        clock.advance(1);
        expect((await request(own.apiKey)).status, 'the oldest left the window').to.equal(admittedStatus);
      });
    }

    it('when cancel, pause and resume share 60 requests, then the 61st of any of them is 429', async () => {
      const own = await merchant();
      for (let i = 0; i < 20; i++) {
        expectDetail(await http.cancel(own.apiKey, 'msg_unknown'), 404);
        expectDetail(await http.pause(own.apiKey, 'msg_unknown'), 404);
        expectDetail(await http.resume(own.apiKey, 'msg_unknown'), 404);
      }
      expectEnvelope(await http.resume(own.apiKey, 'msg_unknown'), 429, '1301');
      expectEnvelope(await http.pause(own.apiKey, 'msg_unknown'), 429, '1301');
      expectEnvelope(await http.cancel(own.apiKey, 'msg_unknown'), 429, '1301');
    });

    it('when the window slides, then a slot frees exactly when the oldest admission is a minute old (no fixed boundary)', async () => {
      const own = await merchant();
      const t0 = clock.now();
      dataOf(await http.balance(own.apiKey));
      clock.advance(10_000);
      for (let i = 0; i < 29; i++) dataOf(await http.balance(own.apiKey));
      clock.advance(20_000);
      expect(expectEnvelope(await http.balance(own.apiKey), 429, '1301').retry_after).to.equal(30);
      clock.set(t0 + MINUTE - 1);
      expect(expectEnvelope(await http.balance(own.apiKey), 429, '1301').retry_after).to.equal(1);
      clock.set(t0 + MINUTE);
      dataOf(await http.balance(own.apiKey));
      // the 29 admitted at t0 + 10 s are still in the window: a fixed window would have reset here
      expect(expectEnvelope(await http.balance(own.apiKey), 429, '1301').retry_after).to.equal(10);
      clock.set(t0 + 70_000);
      dataOf(await http.balance(own.apiKey));
    });

    it('when one bucket is exhausted, then every other bucket of the key still admits', async () => {
      const own = await merchant();
      for (let i = 0; i < 30; i++) dataOf(await http.balance(own.apiKey));
      expectEnvelope(await http.balance(own.apiKey), 429, '1301');
      expect((await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'hi' })).status).to.equal(201);
      expectDetail(await http.status(own.apiKey, 'msg_unknown'), 404);
      dataOf(await http.calculate(own.apiKey, { mode: 'sms_to_amount', sms_count: 3 }));
      expectDetail(await http.pause(own.apiKey, 'msg_unknown'), 404);
      // and another key of another merchant is not affected either
      dataOf(await http.balance((await merchant()).apiKey));
    });

    it('when invalid requests fill the send bucket, then the next valid send is 429', async () => {
      const own = await merchant();
      for (let i = 0; i < 60; i++) expectFieldError(await http.send(own.apiKey, { to: [], message: 'x' }), 'to');
      expectEnvelope(await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'valid' }), 429, '1301');
      expect((await http.balanceOf(own.apiKey)).sms_wallet_balance, 'nothing was charged').to.equal(1000);
    });

    it('when GET /health is called 500 times in the same instant, then every call is 200', async () => {
      const statuses: number[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const results = await Promise.all(Array.from({ length: 50 }, () => http.health()));
        statuses.push(...results.map((r) => r.status));
      }
      expect(statuses).to.have.length(500);
      expect(statuses.every((s) => s === 200)).to.equal(true);
    });
  });

  describe('1302 suspicious activity', () => {
    /** Fills the balance bucket, then 20 rejections; the 20th suspends the key. */
    async function suspend(key: string): Promise<void> {
      for (let i = 0; i < 30; i++) dataOf(await http.balance(key));
      for (let i = 1; i < 20; i++) expect(expectEnvelope(await http.balance(key), 429, '1301').retry_after, `rejection ${i}`).to.equal(60);
      expect(expectEnvelope(await http.balance(key), 429, '1301').retry_after, 'the 20th rejection owes the whole suspension').to.equal(
        900,
      );
    }

    it('when a key is rejected 19 times within a minute, then it is not suspended', async () => {
      const own = await merchant();
      for (let i = 0; i < 30; i++) dataOf(await http.balance(own.apiKey));
      for (let i = 0; i < 19; i++) expectEnvelope(await http.balance(own.apiKey), 429, '1301');
      expect((await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'hi' })).status).to.equal(201);
      clock.advance(MINUTE);
      dataOf(await http.balance(own.apiKey));
    });

    it('when a key is rejected 20 times within a minute, then every call gets 403/1302 for 15 minutes, then it is admitted again', async () => {
      const own = await merchant();
      await suspend(own.apiKey);
      const calls = [
        await http.balance(own.apiKey),
        await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'hi' }),
        await http.status(own.apiKey, 'msg_unknown'),
        await http.calculate(own.apiKey, { mode: 'amount_to_sms', amount: 1 }),
        await http.cancel(own.apiKey, 'msg_unknown'),
      ];
      for (const result of calls) {
        const suspended = expectEnvelope(result, 403, '1302');
        expect(Object.keys(suspended).sort()).to.deep.equal(LIMITED_KEYS);
        expect(suspended.retry_after).to.equal(900);
      }
      expect((await http.health()).status).to.equal(200);
      clock.advance(15 * MINUTE - 1);
      expect(expectEnvelope(await http.status(own.apiKey, 'msg_unknown'), 403, '1302').retry_after).to.equal(1);
      clock.advance(1);
      dataOf(await http.balance(own.apiKey));
      expect((await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'hi' })).status).to.equal(201);
    });

    it('when the node restarts during a suspension, then the key is still suspended', async () => {
      const own = await merchant();
      await suspend(own.apiKey);
      expectEnvelope(await http.balance(own.apiKey), 403, '1302');
      await restart();
      expect(expectEnvelope(await http.balance(own.apiKey), 403, '1302').retry_after).to.equal(900);
      clock.advance(15 * MINUTE);
      dataOf(await http.balance(own.apiKey));
    });
  });

  describe('X-Request-Id and error codes', () => {
    it('when responses are success, 401, 404, 405 and 429, then each carries a distinct X-Request-Id and envelopes repeat it', async () => {
      const own = await merchant();
      const ok = await http.balance(own.apiKey);
      const unauthorized = await http.balance(null);
      const notFound = await call(`${api()}/nope`);
      const notAllowed = await call(`${api()}/balance`, { method: 'PUT' });
      for (let i = 0; i < 30; i++) await http.balance(own.apiKey);
      const limited = await http.balance(own.apiKey);
      dataOf(ok);
      expectDetail(unauthorized, 401);
      expectEnvelope(notFound, 404, '1404');
      expectEnvelope(notAllowed, 405, '1405');
      expectEnvelope(limited, 429, '1301');
      const ids = [ok, unauthorized, notFound, notAllowed, limited].map(requestIdOf);
      expect(new Set(ids).size).to.equal(ids.length);
    });

    it('when a validation error answers, then error_code is the JSON string "1110", never a number', async () => {
      const own = await merchant();
      const result = await http.calculate(own.apiKey, { mode: 'AMOUNT_TO_SMS', amount: 1 });
      expectFieldError(result, 'mode');
      expect(result.text).to.include('"error_code":"1110"');
    });
  });
});
