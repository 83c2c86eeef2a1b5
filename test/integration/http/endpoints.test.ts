import { expect } from 'chai';
import sinon from 'sinon';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { client, dataOf, expectDetail, expectEnvelope, expectFieldError, NUMBERS, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

// 2031-03-10 08:00 UTC is 09:00 in Africa/Kinshasa (UTC+1, no daylight saving)
const NOW = Date.UTC(2031, 2, 10, 8, 0, 0);
const RECIPIENT_KEYS = [
  'recipient_index',
  'phone',
  'status',
  'carrier_status',
  'segments',
  'carrier',
  'error_code',
  'error_message',
  'updated_at',
  'sent_at',
  'delivered_at',
  'failed_at',
];

/** `n` distinct Vodacom DRC numbers (0.02 each). */
const vodacomNumbers = (n: number) => Array.from({ length: n }, (_, i) => `+24381${String(i).padStart(7, '0')}`);
/** `n` distinct future dates at 10:00 local, from 2031-04-01. */
const futureDates = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ date: `2031-04-${String(i + 1).padStart(2, '0')}`, time: '10:00' }));

describe('HTTP API: endpoints', function () {
  this.timeout(120_000);
  const clock = createManualClock(NOW);
  let fixture: ApiFixture;
  let shop: SeededMerchant;
  const http = client(() => fixture.api);
  const gateway = () => fixture.node.gateway;
  const merchant = (options: Parameters<typeof seedMerchant>[1] = { prepaid: '100', postpaid: '10' }) =>
    seedMerchant(gateway(), { timezone: 'Africa/Kinshasa', ...options });

  before(async () => {
    const url = await (await testPostgres()).createDatabase('http_endpoints');
    // rate limits are covered by auth-and-limits.test.ts; here they would only get in the way
    const many = 1_000_000;
    fixture = await startApi(url, {
      clock,
      config: { rateLimits: { send: many, status: many, balance: many, calculate: many, management: many } },
    });
    shop = await merchant({ prepaid: '100000', postpaid: '10' });
  });
  afterEach(() => {
    sinon.restore();
  });
  after(async () => {
    await fixture.stop();
  });

  describe('POST /send', () => {
    it('when a send is valid, then it is 201 with exactly the send result and the exact per-destination cost is charged', async () => {
      const own = await merchant({ prepaid: '10', postpaid: '5' });
      const result = await http.send(own.apiKey, {
        to: ['+243 81 234 5678', '0991234567', NUMBERS.orangeFr, NUMBERS.unpriced],
        message: 'Hello',
      });
      const data = dataOf<SendData>(result, 201);
      expect(data.message_id).to.be.a('string').and.not.equal('');
      // 0.02 + 0.03 + 0.05 + 0.01 (no row: unit price)
      expect(data).to.deep.equal({
        message_id: data.message_id,
        total_recipients: 4,
        total_messages: 4,
        total_cost: 0.11,
        currency: 'USD',
        status: 'pending',
      });
      expect(await http.balanceOf(own.apiKey)).to.deep.include({ balance: 14.89, sms_wallet_balance: 9.89, postpaid_wallet_balance: 5 });
    });

    const SEGMENT_CASES = [
      { label: '160 GSM characters', message: 'a'.repeat(160), segments: 1 },
      { label: '161 GSM characters', message: 'a'.repeat(161), segments: 2 },
      { label: '80 extension characters (160 septets)', message: '€'.repeat(80), segments: 1 },
      { label: '81 extension characters (162 septets)', message: '€'.repeat(81), segments: 2 },
      { label: '70 UCS-2 characters', message: 'ж'.repeat(70), segments: 1 },
      { label: '71 UCS-2 characters', message: 'ж'.repeat(71), segments: 2 },
      { label: '68 GSM characters and one emoji (70 UTF-16 units)', message: `${'a'.repeat(68)}😀`, segments: 1 },
      { label: '69 GSM characters and one emoji (71 UTF-16 units)', message: `${'a'.repeat(69)}😀`, segments: 2 },
    ];
    for (const { label, message, segments } of SEGMENT_CASES) {
      it(`when the message is ${label}, then it takes ${segments} segment(s) per recipient and is charged per segment`, async () => {
        const data = dataOf<SendData>(await http.send(shop.apiKey, { to: [NUMBERS.vodacom, NUMBERS.airtel], message }), 201);
        expect(data).to.include({ total_recipients: 2, total_messages: 2 * segments, total_cost: 0.05 * segments });
      });
    }

    it('when `to` repeats a number, then each entry is its own recipient, charged and listed with its own recipient_index', async () => {
      const data = dataOf<SendData>(
        await http.send(shop.apiKey, { to: ['+243 81 234 5678', '+243-81-234-5678', NUMBERS.vodacom], message: 'dup' }),
        201,
      );
      expect(data).to.include({ total_recipients: 3, total_messages: 3, total_cost: 0.06 });
      const status = dataOf<{ recipients: { recipient_index: number; phone: string }[] }>(await http.status(shop.apiKey, data.message_id));
      expect(status.recipients.map((r) => [r.recipient_index, r.phone])).to.deep.equal([
        [0, NUMBERS.vodacom],
        [1, NUMBERS.vodacom],
        [2, NUMBERS.vodacom],
      ]);
    });

    const TO_LIMITS = [
      { count: 0, ok: false },
      { count: 1, ok: true },
      { count: 999, ok: true },
      { count: 1000, ok: true },
      { count: 1001, ok: false },
    ];
    for (const { count, ok } of TO_LIMITS) {
      it(`when \`to\` has ${count} entries, then it is ${ok ? '201' : '400/1110 naming to'}`, async () => {
        const result = await http.send(shop.apiKey, { to: vodacomNumbers(count), message: 'limit' });
        if (ok)
          expect(dataOf<SendData>(result, 201)).to.include({
            total_recipients: count,
            total_messages: count,
            total_cost: Number((0.02 * count).toFixed(2)),
          });
        else expectFieldError(result, 'to');
      });
    }

    it('when a `to` entry has 7 characters after removing spaces and dashes, then it is 1110 naming to[i]; 8 is accepted', async () => {
      expectFieldError(await http.send(shop.apiKey, { to: [NUMBERS.vodacom, '081 23-45'], message: 'x' }), 'to[1]');
      dataOf(await http.send(shop.apiKey, { to: ['0812 3456'], message: 'x' }), 201);
    });

    const MESSAGE_LIMITS = [
      { label: '1599 GSM characters', message: 'a'.repeat(1599), segments: 11 },
      { label: '1600 GSM characters', message: 'a'.repeat(1600), segments: 11 },
      { label: '1601 GSM characters', message: 'a'.repeat(1601), segments: null },
      // 3200 UTF-16 units: a concatenated part holds 33 emoji (66 units), a pair is never split
      { label: '1600 emoji (3200 UTF-16 units)', message: '😀'.repeat(1600), segments: 49 },
      { label: '1601 emoji', message: '😀'.repeat(1601), segments: null },
      { label: 'empty', message: '', segments: null },
    ];
    for (const { label, message, segments } of MESSAGE_LIMITS) {
      it(`when the message is ${label}, then it is ${segments === null ? '400/1110 naming message' : `201 with ${segments} segments`}`, async () => {
        const result = await http.send(shop.apiKey, { to: [NUMBERS.vodacom], message });
        if (segments === null) expectFieldError(result, 'message');
        else
          expect(dataOf<SendData>(result, 201)).to.include({ total_messages: segments, total_cost: Number((0.02 * segments).toFixed(2)) });
      });
    }

    for (const length of [10, 11, 12]) {
      it(`when sender_id has ${length} characters, then it is ${length <= 11 ? '201' : '400/1110 naming sender_id'}`, async () => {
        const result = await http.send(shop.apiKey, { to: [NUMBERS.vodacom], message: 'x', sender_id: 'S'.repeat(length) });
        if (length <= 11) dataOf(result, 201);
        else expectFieldError(result, 'sender_id');
      });
    }

    for (const count of [19, 20, 21]) {
      it(`when a scheduled send has ${count} dates, then it is ${count <= 20 ? '201 charged for every date' : '400/1110 naming scheduled_dates'}`, async () => {
        const result = await http.send(shop.apiKey, {
          to: [NUMBERS.vodacom],
          message: 'x',
          sending_type: 'scheduled',
          scheduled_dates: futureDates(count),
        });
        if (count <= 20)
          expect(dataOf<SendData>(result, 201)).to.include({
            total_messages: count,
            total_cost: Number((0.02 * count).toFixed(2)),
            status: 'pending',
          });
        else expectFieldError(result, 'scheduled_dates');
      });
    }

    it('when a scheduled date is exactly now, then it is 1110 naming it; one minute later is accepted', async () => {
      const at = (time: string) => ({
        to: [NUMBERS.vodacom],
        message: 'x',
        sending_type: 'scheduled',
        scheduled_dates: [{ date: '2031-03-10', time }],
      });
      expectFieldError(await http.send(shop.apiKey, at('09:00')), 'scheduled_dates[0]');
      dataOf(await http.send(shop.apiKey, at('09:01')), 201);
    });

    const recurring = { start_date: '2031-04-01', end_date: '2031-04-03', frequency: 'daily', interval: 1, times: ['10:00'] };
    const RULE_CASES = [
      {
        label: 'immediate with scheduled_dates',
        body: { sending_type: 'immediate', scheduled_dates: futureDates(1) },
        field: 'scheduled_dates',
      },
      {
        label: 'immediate with recurring_schedule',
        body: { sending_type: 'immediate', recurring_schedule: recurring },
        field: 'recurring_schedule',
      },
      { label: 'no sending_type (immediate) with scheduled_dates', body: { scheduled_dates: futureDates(1) }, field: 'scheduled_dates' },
      {
        label: 'scheduled with recurring_schedule',
        body: { sending_type: 'scheduled', scheduled_dates: futureDates(1), recurring_schedule: recurring },
        field: 'recurring_schedule',
      },
      {
        label: 'recurring with scheduled_dates',
        body: { sending_type: 'recurring', recurring_schedule: recurring, scheduled_dates: futureDates(1) },
        field: 'scheduled_dates',
      },
      { label: 'scheduled without scheduled_dates', body: { sending_type: 'scheduled' }, field: 'scheduled_dates' },
      { label: 'scheduled with empty scheduled_dates', body: { sending_type: 'scheduled', scheduled_dates: [] }, field: 'scheduled_dates' },
      { label: 'recurring without recurring_schedule', body: { sending_type: 'recurring' }, field: 'recurring_schedule' },
      { label: 'an unknown sending_type', body: { sending_type: 'later' }, field: 'sending_type' },
      { label: 'an uppercase sending_type', body: { sending_type: 'IMMEDIATE' }, field: 'sending_type' },
    ];
    for (const { label, body, field } of RULE_CASES) {
      it(`when the request is ${label}, then it is 400/1110 naming ${field}`, async () => {
        expectFieldError(await http.send(shop.apiKey, { to: [NUMBERS.vodacom], message: 'x', ...body }), field);
      });
    }

    it('when the cost exceeds the balance by 0.01, then it is 402/1202 and nothing is charged; an exact balance is spent to 0', async () => {
      const poor = await merchant({ prepaid: '0.03' });
      expectEnvelope(await http.send(poor.apiKey, { to: [NUMBERS.vodacom, NUMBERS.vodacom], message: 'x' }), 402, '1202');
      expect(await http.balanceOf(poor.apiKey)).to.deep.include({ balance: 0.03, sms_wallet_balance: 0.03 });
      const exact = await merchant({ prepaid: '0.04' });
      dataOf(await http.send(exact.apiKey, { to: [NUMBERS.vodacom, NUMBERS.vodacom], message: 'x' }), 201);
      expect(await http.balanceOf(exact.apiKey)).to.deep.include({ balance: 0, sms_wallet_balance: 0, available_sms: 0 });
    });

    it('when the prepaid wallet is short, then the rest comes from the postpaid wallet', async () => {
      const both = await merchant({ prepaid: '0.03', postpaid: '1' });
      dataOf(await http.send(both.apiKey, { to: [NUMBERS.vodacom, NUMBERS.vodacom], message: 'x' }), 201);
      expect(await http.balanceOf(both.apiKey)).to.deep.include({ balance: 0.99, sms_wallet_balance: 0, postpaid_wallet_balance: 0.99 });
    });

    it('when the merchant has no wallet at all, then /send is 402/1202 and /balance is 400/1210', async () => {
      const walletless = await merchant({});
      expectEnvelope(await http.send(walletless.apiKey, { to: [NUMBERS.vodacom], message: 'x' }), 402, '1202');
      expectEnvelope(await http.balance(walletless.apiKey), 400, '1210');
    });

    it('when an Idempotency-Key is repeated with the same body, then the same 201 returns, marked replayed, and is charged once; another body is 409/1111', async () => {
      const own = await merchant({ prepaid: '1' });
      const first = await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'once' }, { 'Idempotency-Key': 'order-42' });
      const firstData = dataOf<SendData>(first, 201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      const again = await http.send(own.apiKey, { message: 'once', to: [NUMBERS.vodacom] }, { 'Idempotency-Key': 'order-42' });
      expect(dataOf<SendData>(again, 201)).to.deep.equal(firstData);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect((await http.balanceOf(own.apiKey)).sms_wallet_balance).to.equal(0.98);
      expectEnvelope(
        await http.send(own.apiKey, { to: [NUMBERS.vodacom], message: 'twice' }, { 'Idempotency-Key': 'order-42' }),
        409,
        '1111',
      );
      expect((await http.balanceOf(own.apiKey)).sms_wallet_balance).to.equal(0.98);
    });

    it('when the body is malformed JSON, then it is 400/1110 with one detail on body', async () => {
      const result = await call(`${fixture.api}/send`, {
        method: 'POST',
        key: shop.apiKey,
        raw: '{"to": ["+243812345678"], ',
        headers: { 'content-type': 'application/json' },
      });
      expect(expectFieldError(result, 'body', 400)).to.have.length(1);
    });

    it('when the Content-Type is not JSON, then it is 415/1110 with one detail on body', async () => {
      const raw = JSON.stringify({ to: [NUMBERS.vodacom], message: 'x' });
      const result = await call(`${fixture.api}/send`, {
        method: 'POST',
        key: shop.apiKey,
        raw,
        headers: { 'content-type': 'text/plain' },
      });
      expect(expectFieldError(result, 'body', 415)).to.have.length(1);
    });

    it('when the body is 256 KiB it is read (and judged on its fields); one byte more is 413/1110 with one detail on body', async () => {
      const bodyOf = (size: number) => {
        const head = `{"to":["${NUMBERS.vodacom}"],"message":"x","pad":"`;
        return `${head}${'p'.repeat(size - head.length - 2)}"}`;
      };
      const send = (raw: string) =>
        call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, raw, headers: { 'content-type': 'application/json' } });
      expect(Buffer.byteLength(bodyOf(262_144))).to.equal(262_144);
      expectFieldError(await send(bodyOf(262_144)), 'pad', 400);
      expect(expectFieldError(await send(bodyOf(262_145)), 'body', 413)).to.have.length(1);
    });
  });

  describe('GET /status/{message_id}', () => {
    it('when an immediate send is looked up, then it is the Message with exactly the recipients[] fields, schedule null and occurrences []', async () => {
      const sent = dataOf<SendData>(
        await http.send(shop.apiKey, { to: [NUMBERS.vodacom, NUMBERS.orangeFr], message: 'a'.repeat(161) }),
        201,
      );
      const data = dataOf(await http.status(shop.apiKey, sent.message_id));
      const created = new Date(NOW).toISOString();
      expect(data).to.deep.include({
        message_id: sent.message_id,
        status: 'pending',
        total_recipients: 2,
        delivered: 0,
        failed: 0,
        pending: 2,
        created_at: created,
        updated_at: created,
        schedule: null,
        occurrences: [],
      });
      const recipients = data.recipients as Record<string, unknown>[];
      for (const recipient of recipients) expect(Object.keys(recipient).sort()).to.deep.equal([...RECIPIENT_KEYS].sort());
      const blank = {
        status: 'pending',
        carrier_status: null,
        segments: 2,
        carrier: 'simulator',
        error_code: null,
        error_message: null,
        updated_at: null,
        sent_at: null,
        delivered_at: null,
        failed_at: null,
      };
      expect(recipients).to.deep.equal([
        { recipient_index: 0, phone: NUMBERS.vodacom, ...blank },
        { recipient_index: 1, phone: NUMBERS.orangeFr, ...blank },
      ]);
    });

    it("when the id is another merchant's or unknown, then both are 404 with byte-identical {detail} bodies", async () => {
      const sent = dataOf<SendData>(await http.send(shop.apiKey, { to: [NUMBERS.vodacom], message: 'mine' }), 201);
      const other = await merchant({ prepaid: '1' });
      const foreign = await http.status(other.apiKey, sent.message_id);
      const unknown = await http.status(other.apiKey, 'msg_00000000000000000000000000000000');
      const malformed = await http.status(other.apiKey, 'not an id');
      expectDetail(foreign, 404);
      expectDetail(unknown, 404);
      expectDetail(malformed, 404);
      expect(foreign.text).to.equal(unknown.text);
      expect(malformed.text).to.equal(unknown.text);
    });

    it('when the id has malformed percent-encoding, then it is 401 without a key and 404 {detail} with one (never a 500)', async () => {
      const id = `${fixture.api}/status/%E0%A4%A`;
      expectDetail(await call(id), 401);
      const malformed = await call(id, { key: shop.apiKey });
      expectDetail(malformed, 404);
      expect(malformed.text).to.equal((await http.status(shop.apiKey, 'msg_unknown')).text);
      expectDetail(await call(`${fixture.api}/cancel/%E0%A4%A`, { method: 'DELETE', key: shop.apiKey }), 404);
    });
  });

  describe('GET /balance', () => {
    const BALANCES = [
      {
        label: 'both wallets',
        wallets: { prepaid: '10', postpaid: '5' },
        expected: { balance: 15, sms_wallet_balance: 10, postpaid_wallet_balance: 5, available_sms: 1500 },
      },
      {
        label: 'only a prepaid wallet',
        wallets: { prepaid: '7.5' },
        expected: { balance: 7.5, sms_wallet_balance: 7.5, postpaid_wallet_balance: 0, available_sms: 750 },
      },
      {
        label: 'only a postpaid wallet',
        wallets: { postpaid: '3' },
        expected: { balance: 3, sms_wallet_balance: 0, postpaid_wallet_balance: 3, available_sms: 300 },
      },
      {
        label: 'a balance that is not a multiple of the unit price',
        wallets: { prepaid: '0.0299' },
        expected: { balance: 0.0299, sms_wallet_balance: 0.0299, postpaid_wallet_balance: 0, available_sms: 2 },
      },
    ];
    for (const { label, wallets, expected } of BALANCES) {
      it(`when the merchant has ${label}, then /balance is exactly ${JSON.stringify(expected)}`, async () => {
        const own = await merchant(wallets);
        expect(dataOf(await http.balance(own.apiKey))).to.deep.equal({ ...expected, currency: 'USD', unit_price: 0.01 });
      });
    }
  });

  describe('POST /calculate', () => {
    // seeded rows 0.02, 0.03, 0.05: plain mean 0.0333… → 0.0333
    const base = { average_price: 0.0333, currency: 'USD', currency_symbol: '$US' };
    const CASES = [
      { body: { mode: 'amount_to_sms', amount: 1 }, expected: { mode: 'amount_to_sms', amount: 1, sms_count: 30 } },
      { body: { mode: 'amount_to_sms', amount: 0 }, expected: { mode: 'amount_to_sms', amount: 0, sms_count: 0 } },
      {
        body: { mode: 'amount_to_sms', amount: 9_999_999 },
        expected: { mode: 'amount_to_sms', amount: 9_999_999, sms_count: 300_300_270 },
      },
      {
        body: { mode: 'amount_to_sms', amount: 10_000_000 },
        expected: { mode: 'amount_to_sms', amount: 10_000_000, sms_count: 300_300_300 },
      },
      { body: { mode: 'sms_to_amount', sms_count: 100 }, expected: { mode: 'sms_to_amount', amount: 3.33, sms_count: 100 } },
      // 15 × 0.0333 = 0.4995 → 0.50
      { body: { mode: 'sms_to_amount', sms_count: 15 }, expected: { mode: 'sms_to_amount', amount: 0.5, sms_count: 15 } },
      { body: { mode: 'sms_to_amount', sms_count: 0 }, expected: { mode: 'sms_to_amount', amount: 0, sms_count: 0 } },
      {
        body: { mode: 'sms_to_amount', sms_count: 9_999_999 },
        expected: { mode: 'sms_to_amount', amount: 332_999.97, sms_count: 9_999_999 },
      },
      {
        body: { mode: 'sms_to_amount', sms_count: 10_000_000 },
        expected: { mode: 'sms_to_amount', amount: 333_000, sms_count: 10_000_000 },
      },
    ];
    for (const { body, expected } of CASES) {
      it(`when ${JSON.stringify(body)} is calculated, then the data is exactly ${JSON.stringify(expected)} with the 4-decimal plain mean`, async () => {
        expect(dataOf(await http.calculate(shop.apiKey, body))).to.deep.equal({ ...expected, ...base });
      });
    }

    const INVALID = [
      { body: { mode: 'amount_to_sms', amount: 10_000_000.01 }, field: 'amount' },
      { body: { mode: 'amount_to_sms', amount: -0.01 }, field: 'amount' },
      { body: { mode: 'sms_to_amount', sms_count: 10_000_001 }, field: 'sms_count' },
      { body: { mode: 'sms_to_amount', sms_count: -1 }, field: 'sms_count' },
      { body: { mode: 'sms_to_amount', sms_count: 1.5 }, field: 'sms_count' },
      { body: { mode: 'amount_to_sms' }, field: 'amount' },
      { body: { mode: 'amount_to_sms', sms_count: 5 }, field: 'amount' },
      { body: { mode: 'sms_to_amount' }, field: 'sms_count' },
      { body: { mode: 'sms_to_amount', amount: 5 }, field: 'sms_count' },
      { body: { mode: 'both', amount: 1 }, field: 'mode' },
      { body: { mode: 'AMOUNT_TO_SMS', amount: 1 }, field: 'mode' },
      { body: { mode: 'Sms_To_Amount', sms_count: 1 }, field: 'mode' },
      { body: { amount: 1 }, field: 'mode' },
    ];
    for (const { body, field } of INVALID) {
      it(`when ${JSON.stringify(body)} is calculated, then it is 400/1110 naming ${field}`, async () => {
        expectFieldError(await http.calculate(shop.apiKey, body), field);
      });
    }

    it('when the merchant has no pricing rows, then it is 400/1211', async () => {
      const unpriced = await merchant({ prepaid: '1', pricing: false });
      expectEnvelope(await http.calculate(unpriced.apiKey, { mode: 'amount_to_sms', amount: 1 }), 400, '1211');
    });
  });

  describe('GET /health, unknown routes and methods', () => {
    it('when /health is called without a key, then it is 200 with exactly the status, version, environment and checks', async () => {
      const expected = {
        status_code: 200,
        data: {
          status: 'ok',
          version: gateway().config.version,
          environment: 'sandbox',
          checks: { database: 'ok', transport: 'ok', carriers: {} },
        },
      };
      expect((await http.health()).body).to.deep.equal(expected);
      expect((await http.health('sk_test_garbage')).body, 'a key, even a bad one, changes nothing').to.deep.equal(expected);
    });

    it('when the database does not answer, then /health is 503 with status degraded and the failing check', async () => {
      sinon.stub(gateway().persistence, 'ping').rejects(new Error('connection refused'));
      const result = await http.health();
      expect(result.status).to.equal(503);
      expect(result.body).to.deep.equal({
        status_code: 503,
        data: {
          status: 'degraded',
          version: gateway().config.version,
          environment: 'sandbox',
          checks: { database: 'down', transport: 'ok', carriers: {} },
        },
      });
    });

    it('when 20 health checks arrive while a ping is running, then they share its answer, and the next check pings again', async () => {
      const persistence = gateway().persistence;
      const realPing = persistence.ping.bind(persistence);
      // a slow database: every request reaches the server while the first ping is still out
      const databasePings = sinon.stub(persistence, 'ping').callsFake(async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        await realPing();
      });
      const transportPings = sinon.spy(fixture.node.transport, 'ping');
      const results = await Promise.all(Array.from({ length: 20 }, () => http.health()));
      expect(results.map((r) => r.status)).to.deep.equal(Array.from({ length: 20 }, () => 200));
      expect(databasePings.callCount).to.equal(1);
      expect(transportPings.callCount).to.equal(1);
      await http.health();
      expect(databasePings.callCount, 'a later check is not answered from memory').to.equal(2);
    });

    it('when the path is unknown, then it is 404/1404 in the envelope', async () => {
      expectEnvelope(await call(`${fixture.api}/messages`, { key: shop.apiKey }), 404, '1404');
      expectEnvelope(await call(`${fixture.baseUrl}/api/v2/messaging/sms-api/balance`, { key: shop.apiKey }), 404, '1404');
    });

    const METHODS = [
      { method: 'GET', path: '/send', allow: 'POST' },
      { method: 'PUT', path: '/balance', allow: 'GET' },
      { method: 'POST', path: '/status/msg_x', allow: 'GET' },
      { method: 'GET', path: '/cancel/msg_x', allow: 'DELETE' },
      { method: 'DELETE', path: '/pause/msg_x', allow: 'POST' },
      { method: 'GET', path: '/calculate', allow: 'POST' },
    ];
    for (const { method, path, allow } of METHODS) {
      it(`when ${method} ${path} is called, then it is 405/1405 with Allow: ${allow}`, async () => {
        const result = await call(`${fixture.api}${path}`, { method, key: shop.apiKey });
        expectEnvelope(result, 405, '1405');
        expect(result.headers.get('allow')).to.equal(allow);
      });
    }
  });

  describe('cancel, pause and resume', () => {
    const scheduledBody = {
      to: [NUMBERS.vodacom, NUMBERS.airtel],
      message: 'later',
      sending_type: 'scheduled',
      scheduled_dates: [
        { date: '2031-03-13', time: '09:30' },
        { date: '2031-03-12', time: '09:30' },
      ],
    };
    const scheduleOf = (state: string, remaining: number) => ({
      type: 'scheduled',
      state,
      next_occurrence_at: state === 'active' || state === 'paused' ? '2031-03-12T08:30:00.000Z' : null,
      occurrences_total: 2,
      occurrences_dispatched: 0,
      occurrences_remaining: remaining,
    });

    it('when the send is immediate, then cancel, pause and resume are 409/1120', async () => {
      const sent = dataOf<SendData>(await http.send(shop.apiKey, { to: [NUMBERS.vodacom], message: 'now' }), 201);
      expectEnvelope(await http.cancel(shop.apiKey, sent.message_id), 409, '1120');
      expectEnvelope(await http.pause(shop.apiKey, sent.message_id), 409, '1120');
      expectEnvelope(await http.resume(shop.apiKey, sent.message_id), 409, '1120');
    });

    it("when the id is unknown or another merchant's, then cancel, pause and resume are 404 {detail}, identical to GET /status", async () => {
      const sent = dataOf<SendData>(await http.send(shop.apiKey, scheduledBody), 201);
      const other = await merchant({ prepaid: '1' });
      const reference = (await http.status(other.apiKey, 'msg_unknown')).text;
      for (const id of ['msg_unknown', sent.message_id]) {
        for (const result of [
          await http.cancel(other.apiKey, id),
          await http.pause(other.apiKey, id),
          await http.resume(other.apiKey, id),
        ]) {
          expectDetail(result, 404);
          expect(result.text).to.equal(reference);
        }
      }
      expect(dataOf<{ schedule: unknown }>(await http.status(shop.apiKey, sent.message_id)).schedule, 'untouched').to.deep.equal(
        scheduleOf('active', 2),
      );
    });

    it('when a scheduled send is looked up, then the 201 said pending and GET /status says scheduled with its schedule and occurrences', async () => {
      const sent = dataOf<SendData>(await http.send(shop.apiKey, scheduledBody), 201);
      expect(sent).to.include({ status: 'pending', total_recipients: 2, total_messages: 4, total_cost: 0.1 });
      const data = dataOf(await http.status(shop.apiKey, sent.message_id));
      expect(data).to.deep.include({ status: 'scheduled', total_recipients: 2, schedule: scheduleOf('active', 2) });
      const occurrence = (index: number, at: string) => ({
        occurrence_index: index,
        scheduled_at: at,
        status: 'scheduled',
        delivered: 0,
        failed: 0,
        pending: 2,
        cancelled: 0,
        skipped: 0,
      });
      // 09:30 in Kinshasa is 08:30 UTC; occurrences in chronological order
      expect(data.occurrences).to.deep.equal([occurrence(0, '2031-03-12T08:30:00.000Z'), occurrence(1, '2031-03-13T08:30:00.000Z')]);
    });

    it('when a scheduled send is cancelled, then its full cost is refunded at once; cancelling again refunds 0 and pause/resume are 409/1120', async () => {
      const own = await merchant({ prepaid: '1', postpaid: '0.05' });
      const sent = dataOf<SendData>(await http.send(own.apiKey, scheduledBody), 201);
      expect(await http.balanceOf(own.apiKey)).to.deep.include({ balance: 0.95, sms_wallet_balance: 0.9 });
      const cancelled = await http.cancel(own.apiKey, sent.message_id);
      expect(cancelled.body).to.deep.equal({
        status_code: 200,
        data: { message_id: sent.message_id, schedule: scheduleOf('cancelled', 0), refunded_amount: 0.1 },
      });
      expect(await http.balanceOf(own.apiKey)).to.deep.include({ balance: 1.05, sms_wallet_balance: 1, postpaid_wallet_balance: 0.05 });
      expect(dataOf<{ refunded_amount: number }>(await http.cancel(own.apiKey, sent.message_id)).refunded_amount).to.equal(0);
      expect((await http.balanceOf(own.apiKey)).balance, 'nothing refunded twice').to.equal(1.05);
      expectEnvelope(await http.pause(own.apiKey, sent.message_id), 409, '1120');
      expectEnvelope(await http.resume(own.apiKey, sent.message_id), 409, '1120');
    });

    it('when a scheduled send is paused, paused again, resumed and resumed again, then each is 200 with the matching state and the cost stays reserved', async () => {
      const own = await merchant({ prepaid: '1' });
      const sent = dataOf<SendData>(await http.send(own.apiKey, scheduledBody), 201);
      const id = sent.message_id;
      expect((await http.pause(own.apiKey, id)).body).to.deep.equal({
        status_code: 200,
        data: { message_id: id, schedule: scheduleOf('paused', 2) },
      });
      expect((await http.pause(own.apiKey, id)).body).to.deep.equal({
        status_code: 200,
        data: { message_id: id, schedule: scheduleOf('paused', 2) },
      });
      expect(dataOf<{ schedule: unknown }>(await http.status(own.apiKey, id)).schedule).to.deep.equal(scheduleOf('paused', 2));
      expect((await http.balanceOf(own.apiKey)).balance, 'reserved while paused').to.equal(0.9);
      expect((await http.resume(own.apiKey, id)).body).to.deep.equal({
        status_code: 200,
        data: { message_id: id, schedule: scheduleOf('active', 2), refunded_amount: 0 },
      });
      expect((await http.resume(own.apiKey, id)).body).to.deep.equal({
        status_code: 200,
        data: { message_id: id, schedule: scheduleOf('active', 2), refunded_amount: 0 },
      });
      expect((await http.balanceOf(own.apiKey)).balance).to.equal(0.9);
    });

    // runs last: it moves the clock past the scheduled dates
    it('when occurrences pass while paused, then resume skips and refunds them; once none is left the schedule is completed (cancel 200/0, pause/resume 409)', async () => {
      const own = await merchant({ prepaid: '1' });
      const id = dataOf<SendData>(await http.send(own.apiKey, scheduledBody), 201).message_id;
      dataOf(await http.pause(own.apiKey, id));
      clock.set(Date.UTC(2031, 2, 12, 8, 30)); // the first occurrence's instant
      const first = dataOf<{ schedule: Record<string, unknown>; refunded_amount: number }>(await http.resume(own.apiKey, id));
      expect(first).to.deep.equal({
        message_id: id,
        schedule: { ...scheduleOf('active', 1), next_occurrence_at: '2031-03-13T08:30:00.000Z' },
        refunded_amount: 0.05,
      });
      expect((await http.balanceOf(own.apiKey)).balance).to.equal(0.95);
      dataOf(await http.pause(own.apiKey, id));
      clock.set(Date.UTC(2031, 2, 13, 9, 0));
      const last = dataOf<{ schedule: Record<string, unknown>; refunded_amount: number }>(await http.resume(own.apiKey, id));
      expect(last).to.deep.equal({ message_id: id, schedule: scheduleOf('completed', 0), refunded_amount: 0.05 });
      expect((await http.balanceOf(own.apiKey)).balance).to.equal(1);
      const status = dataOf<{ occurrences: { status: string }[] }>(await http.status(own.apiKey, id));
      expect(status.occurrences.map((o) => o.status)).to.deep.equal(['skipped', 'skipped']);
      expect(dataOf(await http.cancel(own.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: scheduleOf('completed', 0),
        refunded_amount: 0,
      });
      expectEnvelope(await http.pause(own.apiKey, id), 409, '1120');
      expectEnvelope(await http.resume(own.apiKey, id), 409, '1120');
      expect((await http.balanceOf(own.apiKey)).balance).to.equal(1);
    });
  });
});
