import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import sinon from 'sinon';
import { buildOpenApiDocument } from '../../../src/entry-points/http/openapi/build-document.js';
import type { OpenApiDocument } from '../../../src/entry-points/http/openapi/openapi-document.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { client, dataOf, NUMBERS, unknownKey, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture, type CallResult } from '../../helpers/http-fixture.js';
import { documentValidator, errorsOf, type DocumentValidator } from '../../helpers/openapi-validation.js';
import { testPostgres } from '../../helpers/postgres.js';
import { ActorFailureError } from '../../../src/libraries/errors/internal-errors.js';

// 2031-03-10 08:00 UTC is 09:00 in Africa/Kinshasa (UTC+1)
const NOW = Date.UTC(2031, 2, 10, 8, 0, 0);
/** The simulator delivers numbers ending 78 and fails those ending 95 with 1502. */
const DELIVERED = NUMBERS.vodacom;
const FAILED = '+243812345695';

interface Observed {
  readonly type: string;
  readonly body: unknown;
}

/**
 * The document cannot lie: every response of every route, success and error, is produced for real and validated
 * (body and headers) against the document the node serves, with its objects closed (no undocumented field); and
 * every response the document lists is produced at least once.
 */
describe('OpenAPI conformance: real responses match the served document', function () {
  this.timeout(120_000);
  const clock = createManualClock(NOW);
  let fixture: ApiFixture;
  let served: OpenApiDocument;
  let validator: DocumentValidator;
  let receiver: Server;
  let callbackUrl: string;
  const events: Observed[] = [];
  const observed = new Set<string>();
  const http = client(() => fixture.api);
  const gateway = () => fixture.node.gateway;
  const merchant = (options: Parameters<typeof seedMerchant>[1] = { prepaid: '100', postpaid: '10' }) =>
    seedMerchant(gateway(), { timezone: 'Africa/Kinshasa', ...options });

  /** Validates a response against `paths[path][method].responses[status]` and records that it was seen. */
  function conforms(result: CallResult, method: string, path: string, status: number): void {
    expect(result.status, `${method.toUpperCase()} ${path}: ${result.text}`).to.equal(status);
    const validate = validator.response(path, method, status);
    expect(validate(result.body), `${method.toUpperCase()} ${path} ${status}: ${errorsOf(validate)} in ${result.text}`).to.equal(true);
    const documented = validator.responseObject(path, method, status).headers ?? {};
    for (const [name, header] of Object.entries(documented)) {
      const required = header.$ref ? (served.components.headers[name] as { required?: boolean }).required : header.required;
      if (required) expect(result.headers.get(name), `${status} header ${name}`).to.be.a('string').and.not.equal('');
    }
    for (const name of ['Retry-After', 'Idempotent-Replayed', 'Allow']) {
      if (result.headers.get(name) !== null)
        expect(documented, `undocumented ${name} on ${method} ${path} ${status}`).to.have.property(name);
    }
    observed.add(`${method} ${path} ${status}`);
  }

  function conformsGlobally(result: CallResult, name: 'RouteNotFound' | 'MethodNotAllowed', status: number): void {
    expect(result.status, result.text).to.equal(status);
    const validate = validator.namedResponse(name);
    expect(validate(result.body), `${name}: ${errorsOf(validate)}`).to.equal(true);
    expect(result.headers.get('x-request-id')).to.be.a('string');
  }

  async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  before(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const event = JSON.parse(body) as { event_type: string };
        events.push({ type: event.event_type, body: event });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
    const url = await (await testPostgres()).createDatabase('http_openapi');
    fixture = await startApi(url, { clock, inProcessSimulator: true });
    const document = await call(`${fixture.baseUrl}/docs/openapi.json`);
    served = document.body as OpenApiDocument;
    validator = documentValidator(served);
  });
  afterEach(() => {
    sinon.restore();
  });
  after(async () => {
    await fixture.stop();
    await new Promise((resolve) => receiver.close(resolve));
  });

  describe('the documentation routes', () => {
    it('serves the document at /docs/openapi.json without a key, equal to the generated one', async () => {
      const result = await call(`${fixture.baseUrl}/docs/openapi.json`);
      expect(result.status).to.equal(200);
      expect(result.headers.get('content-type')).to.match(/^application\/json/);
      expect(result.body).to.deep.equal(JSON.parse(JSON.stringify(buildOpenApiDocument({ version: gateway().config.version }))));
    });

    it('serves the reference page at /docs without a key, with a CSP allowing only its own origin', async () => {
      const page = await call(`${fixture.baseUrl}/docs`);
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      expect(page.text).to.contain('<div id="swagger-ui">');
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).to.contain("script-src 'self'").and.contain("default-src 'none'");
      expect(csp).not.to.match(/unsafe-|https?:|\*/);
      for (const asset of [...page.text.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!)) {
        const result = await call(`${fixture.baseUrl}${asset}`);
        expect(result.status, asset).to.equal(200);
      }
      const script = await call(`${fixture.baseUrl}/docs/assets/swagger-ui-bundle.js`);
      expect(script.headers.get('content-type')).to.match(/^text\/javascript/);
    });

    it("leaves the API's own headers alone: the API keeps helmet's default policy", async () => {
      const result = await http.health();
      expect(result.headers.get('content-security-policy')).to.contain("default-src 'self'");
    });
  });

  describe('success responses', () => {
    let shop: SeededMerchant;
    before(async () => {
      shop = await merchant();
    });

    it('GET /health: 200, and 503 when a dependency is down', async () => {
      conforms(await http.health(), 'get', '/health', 200);
      sinon.stub(gateway().persistence, 'ping').rejects(new Error('connection refused'));
      conforms(await http.health(), 'get', '/health', 503);
    });

    it('POST /send (201, also replayed by Idempotency-Key) and GET /status (200) through delivery and failure, with the webhooks sent', async () => {
      const body = { to: [DELIVERED, FAILED], message: 'Conformance', sender_id: 'Shop', callback_url: callbackUrl };
      const sent = await http.send(shop.apiKey, body, { 'Idempotency-Key': 'conformance-1' });
      conforms(sent, 'post', '/send', 201);
      const replayed = await http.send(shop.apiKey, body, { 'Idempotency-Key': 'conformance-1' });
      conforms(replayed, 'post', '/send', 201);
      expect(replayed.headers.get('idempotent-replayed')).to.equal('true');
      const id = dataOf<SendData>(sent, 201).message_id;
      conforms(await http.status(shop.apiKey, id), 'get', '/status/{message_id}', 200);

      const settled = await eventually('both recipients terminal', 20_000, async () => {
        const result = await http.status(shop.apiKey, id);
        const data = dataOf<{ delivered: number; failed: number }>(result);
        return data.delivered === 1 && data.failed === 1 ? result : undefined;
      });
      conforms(settled, 'get', '/status/{message_id}', 200);
      expect(JSON.stringify(settled.body)).to.contain('"error_code":"1502"');
    });

    it('GET /balance and POST /calculate (both modes): 200', async () => {
      conforms(await http.balance(shop.apiKey), 'get', '/balance', 200);
      conforms(await http.calculate(shop.apiKey, { mode: 'amount_to_sms', amount: 10 }), 'post', '/calculate', 200);
      conforms(await http.calculate(shop.apiKey, { mode: 'sms_to_amount', sms_count: 500 }), 'post', '/calculate', 200);
    });

    it('scheduled send: status, pause, pause again, resume, cancel, cancel again: 200', async () => {
      const sent = await http.send(shop.apiKey, {
        to: [DELIVERED],
        message: 'Later',
        sending_type: 'scheduled',
        scheduled_dates: [
          { date: '2031-04-01', time: '09:30' },
          { date: '2031-04-08', time: '09:30' },
        ],
      });
      conforms(sent, 'post', '/send', 201);
      const id = dataOf<SendData>(sent, 201).message_id;
      conforms(await http.status(shop.apiKey, id), 'get', '/status/{message_id}', 200);
      conforms(await http.pause(shop.apiKey, id), 'post', '/pause/{id}', 200);
      conforms(await http.pause(shop.apiKey, id), 'post', '/pause/{id}', 200);
      conforms(await http.status(shop.apiKey, id), 'get', '/status/{message_id}', 200);
      conforms(await http.resume(shop.apiKey, id), 'post', '/resume/{id}', 200);
      conforms(await http.cancel(shop.apiKey, id), 'delete', '/cancel/{id}', 200);
      conforms(await http.cancel(shop.apiKey, id), 'delete', '/cancel/{id}', 200);
      conforms(await http.status(shop.apiKey, id), 'get', '/status/{message_id}', 200);
    });

    it('recurring send: an occurrence passed while paused is skipped and refunded on resume', async () => {
      const sent = await http.send(shop.apiKey, {
        to: [DELIVERED],
        message: 'Daily',
        sending_type: 'recurring',
        recurring_schedule: { start_date: '2031-03-11', end_date: '2031-03-13', frequency: 'daily', interval: 1, times: ['10:00'] },
      });
      conforms(sent, 'post', '/send', 201);
      const id = dataOf<SendData>(sent, 201).message_id;
      conforms(await http.pause(shop.apiKey, id), 'post', '/pause/{id}', 200);
      clock.set(Date.UTC(2031, 2, 11, 9, 30)); // 10:30 in Kinshasa: the first occurrence has passed
      const resumed = await http.resume(shop.apiKey, id);
      conforms(resumed, 'post', '/resume/{id}', 200);
      expect(dataOf<{ refunded_amount: number }>(resumed).refunded_amount).to.be.greaterThan(0);
      const status = await http.status(shop.apiKey, id);
      conforms(status, 'get', '/status/{message_id}', 200);
      expect(JSON.stringify(status.body)).to.contain('"status":"skipped"');
    });

    it('delivers every webhook event type in the documented shape', async () => {
      const types = ['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed'];
      await eventually('all five event types', 20_000, () =>
        Promise.resolve(types.every((type) => events.some((e) => e.type === type)) ? true : undefined),
      );
      for (const event of events) {
        const validate = validator.at(`/webhooks/${event.type}/post/requestBody/content/application~1json/schema`);
        expect(validate(event.body), `${event.type}: ${errorsOf(validate)} in ${JSON.stringify(event.body)}`).to.equal(true);
      }
    });
  });

  describe('error responses', () => {
    let shop: SeededMerchant;
    let scheduledId: string;
    let immediateId: string;
    before(async () => {
      shop = await merchant();
      immediateId = dataOf<SendData>(await http.send(shop.apiKey, { to: [DELIVERED], message: 'Now' }), 201).message_id;
      scheduledId = dataOf<SendData>(
        await http.send(shop.apiKey, {
          to: [DELIVERED],
          message: 'Later',
          sending_type: 'scheduled',
          scheduled_dates: [{ date: '2031-05-01', time: '10:00' }],
        }),
        201,
      ).message_id;
      conforms(await http.cancel(shop.apiKey, scheduledId), 'delete', '/cancel/{id}', 200);
    });

    /** One call per authenticated route, with the given key. */
    const everyRoute = (key: string | null) => [
      { method: 'post', path: '/send', call: () => http.send(key, { to: [DELIVERED], message: 'x' }) },
      { method: 'get', path: '/status/{message_id}', call: () => http.status(key, immediateId) },
      { method: 'get', path: '/balance', call: () => http.balance(key) },
      { method: 'post', path: '/calculate', call: () => http.calculate(key, { mode: 'sms_to_amount', sms_count: 1 }) },
      { method: 'delete', path: '/cancel/{id}', call: () => http.cancel(key, scheduledId) },
      { method: 'post', path: '/pause/{id}', call: () => http.pause(key, scheduledId) },
      { method: 'post', path: '/resume/{id}', call: () => http.resume(key, scheduledId) },
    ];

    it('401 {detail} on every authenticated route: no key, unknown key', async () => {
      for (const route of [...everyRoute(null), ...everyRoute(unknownKey())]) conforms(await route.call(), route.method, route.path, 401);
    });

    it('403 {detail} on every authenticated route for a suspended key', async () => {
      const key = await gateway().useCases.apiKeys.issueKey(shop.merchantId, { status: 'suspended' });
      for (const route of everyRoute(key.apiKey)) conforms(await route.call(), route.method, route.path, 403);
    });

    it('429/1301 with Retry-After on every rate bucket, then 403/1302 once the key is suspended', async () => {
      const limited = await merchant();
      const config = gateway().config.rateLimits;
      const limits: Record<string, number> = {
        '/send': config.send,
        '/status/{message_id}': config.status,
        '/balance': config.balance,
        '/calculate': config.calculate,
        '/cancel/{id}': config.management,
      };
      const routes = everyRoute(limited.apiKey);
      for (const route of routes) {
        const limit = limits[route.path];
        // invalid requests count too: an empty body fills the send bucket without sending anything
        const fill = route.path === '/send' ? () => http.send(limited.apiKey, {}) : route.call;
        if (limit !== undefined) for (let i = 0; i < limit; i++) await fill();
      }
      // cancel, pause and resume share one bucket: it is full for all three
      for (const route of routes) conforms(await route.call(), route.method, route.path, 429);
      let result = await http.balance(limited.apiKey);
      for (let i = 0; i < config.suspendAfterRejections && result.status === 429; i++) result = await http.balance(limited.apiKey);
      for (const route of routes) conforms(await route.call(), route.method, route.path, 403);
    });

    it('500 {detail} when the key cannot be verified, and 500/1401 when a use case fails unexpectedly', async () => {
      const stub = sinon.stub(gateway().useCases.apiKeys, 'verify').rejects(new Error('directory unreachable'));
      for (const route of everyRoute(shop.apiKey)) conforms(await route.call(), route.method, route.path, 500);
      stub.restore();
      sinon.stub(gateway().useCases.wallets, 'getBalance').rejects(new Error('bug'));
      conforms(await http.balance(shop.apiKey), 'get', '/balance', 500);
    });

    it('503/1402 with Retry-After when an actor refuses the command at its deadline, on every authenticated route', async () => {
      const unavailable = new ActorFailureError('wallet/x', 'expired', 'its deadline passed before it was decided');
      const useCases = gateway().useCases;
      sinon.stub(useCases, 'sendMessage').rejects(unavailable);
      sinon.stub(useCases, 'getStatus').rejects(unavailable);
      sinon.stub(useCases.wallets, 'getBalance').rejects(unavailable);
      sinon.stub(useCases, 'calculate').rejects(unavailable);
      sinon.stub(useCases, 'manageSchedule').rejects(unavailable);
      for (const route of everyRoute(shop.apiKey)) conforms(await route.call(), route.method, route.path, 503);
    });

    it('POST /send: 400/1110 (invalid body, malformed JSON), 402/1202, 409/1111, 413 and 415', async () => {
      conforms(await http.send(shop.apiKey, { to: ['12'], message: '', extra: 1 }), 'post', '/send', 400);
      conforms(
        await call(`${fixture.api}/send`, {
          method: 'POST',
          key: shop.apiKey,
          raw: '{"to":',
          headers: { 'content-type': 'application/json' },
        }),
        'post',
        '/send',
        400,
      );
      conforms(await http.send(shop.apiKey, { to: [DELIVERED], message: 'x' }, { 'Idempotency-Key': 'bad key' }), 'post', '/send', 400);
      const poor = await merchant({ prepaid: '0.01' });
      conforms(await http.send(poor.apiKey, { to: [DELIVERED, DELIVERED], message: 'x' }), 'post', '/send', 402);
      const walletless = await merchant({ pricing: true });
      conforms(await http.send(walletless.apiKey, { to: [DELIVERED], message: 'x' }), 'post', '/send', 402);
      await http.send(shop.apiKey, { to: [DELIVERED], message: 'first' }, { 'Idempotency-Key': 'conformance-2' });
      conforms(
        await http.send(shop.apiKey, { to: [DELIVERED], message: 'second' }, { 'Idempotency-Key': 'conformance-2' }),
        'post',
        '/send',
        409,
      );
      const huge = JSON.stringify({ to: [DELIVERED], message: 'x'.repeat(300 * 1024) });
      conforms(
        await call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, raw: huge, headers: { 'content-type': 'application/json' } }),
        'post',
        '/send',
        413,
      );
      conforms(
        await call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, raw: 'to=1', headers: { 'content-type': 'text/plain' } }),
        'post',
        '/send',
        415,
      );
    });

    it('GET /status: 404 {detail} for an unknown or foreign id', async () => {
      conforms(await http.status(shop.apiKey, 'msg_unknown'), 'get', '/status/{message_id}', 404);
      const other = await merchant();
      conforms(await http.status(other.apiKey, immediateId), 'get', '/status/{message_id}', 404);
    });

    it('GET /balance: 400/1210 without a wallet', async () => {
      const walletless = await merchant({});
      conforms(await http.balance(walletless.apiKey), 'get', '/balance', 400);
    });

    it('POST /calculate: 400/1110, 400/1211, 413 and 415', async () => {
      conforms(await http.calculate(shop.apiKey, { mode: 'AMOUNT_TO_SMS' }), 'post', '/calculate', 400);
      conforms(await http.calculate(shop.apiKey, { mode: 'amount_to_sms' }), 'post', '/calculate', 400);
      const unpriced = await merchant({ prepaid: '1', pricing: false });
      conforms(await http.calculate(unpriced.apiKey, { mode: 'amount_to_sms', amount: 1 }), 'post', '/calculate', 400);
      const huge = JSON.stringify({ mode: 'amount_to_sms', amount: 1, pad: 'x'.repeat(300 * 1024) });
      conforms(
        await call(`${fixture.api}/calculate`, {
          method: 'POST',
          key: shop.apiKey,
          raw: huge,
          headers: { 'content-type': 'application/json' },
        }),
        'post',
        '/calculate',
        413,
      );
      conforms(
        await call(`${fixture.api}/calculate`, {
          method: 'POST',
          key: shop.apiKey,
          raw: 'mode=x',
          headers: { 'content-type': 'text/plain' },
        }),
        'post',
        '/calculate',
        415,
      );
    });

    it('cancel, pause and resume: 404 {detail} for an unknown id, 409/1120 on an immediate send or a cancelled schedule', async () => {
      for (const [method, path, act] of [
        ['delete', '/cancel/{id}', http.cancel],
        ['post', '/pause/{id}', http.pause],
        ['post', '/resume/{id}', http.resume],
      ] as const) {
        conforms(await act(shop.apiKey, 'msg_unknown'), method, path, 404);
        conforms(await act(shop.apiKey, immediateId), method, path, 409);
      }
      conforms(await http.pause(shop.apiKey, scheduledId), 'post', '/pause/{id}', 409);
      conforms(await http.resume(shop.apiKey, scheduledId), 'post', '/resume/{id}', 409);
    });

    it('unknown paths are 404/1404 and other methods 405/1405 with Allow, as components.responses says', async () => {
      conformsGlobally(await call(`${fixture.api}/messages`, { key: shop.apiKey }), 'RouteNotFound', 404);
      conformsGlobally(await call(`${fixture.baseUrl}/docs/missing`), 'RouteNotFound', 404);
      const wrongMethod = await call(`${fixture.api}/send`, { method: 'PUT', key: shop.apiKey });
      conformsGlobally(wrongMethod, 'MethodNotAllowed', 405);
      expect(wrongMethod.headers.get('allow')).to.equal('POST');
    });
  });

  describe('coverage', () => {
    it('has produced every response the document lists, for every operation', () => {
      const documented = Object.entries(served.paths).flatMap(([path, item]) =>
        Object.entries(item).flatMap(([method, operation]) =>
          Object.keys(operation.responses as object).map((status) => `${method} ${path} ${status}`),
        ),
      );
      expect([...observed].sort()).to.deep.equal(documented.sort());
    });
  });
});
