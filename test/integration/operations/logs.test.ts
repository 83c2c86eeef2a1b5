import { expect } from 'chai';
import sinon from 'sinon';
import { hashApiKey } from '../../../src/api-keys/api-key.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { alteredKey, dataOf, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { always, respond, startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';

type LogLine = Record<string, unknown> & { readonly msg?: string; readonly level?: number };

const PASSWORD = 'c0rrect-h0rse-battery-staple';

describe('logs: request ids, merchants, incidents, and never a secret', function () {
  this.timeout(60_000);
  const raw: string[] = [];
  let lines: LogLine[];
  let fixture: ApiFixture | null = null;
  let receiver: WebhookReceiver;
  let shop: SeededMerchant;
  let secret: string;
  const requestIds: string[] = [];
  let freshKey: string;
  let stopped = false;
  const stopNode = async (): Promise<void> => {
    if (stopped || fixture === null) return;
    stopped = true;
    await fixture.stop();
  };

  before(async () => {
    // Arrange: a node logging everything (trace) into memory, a merchant with Basic credentials and signing
    const logger = createLogger({ level: 'trace', base: { service: 'sms-gateway' }, destination: { write: (line) => raw.push(line) } });
    const url = await (await testPostgres()).createDatabase('logs');
    fixture = await startApi(url, { logger, inProcessSimulator: true });
    receiver = await startWebhookReceiver({ behaviour: always(respond(200)) });
    const gateway = fixture.node.gateway;
    shop = await seedMerchant(gateway, { name: 'Logged shop', prepaid: '10' });
    await gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: receiver.url, username: 'hooks', password: PASSWORD });
    secret = (await gateway.useCases.apiKeys.setSigning(shop.keyId, true))?.secret ?? '';
    expect(secret).to.match(/^whsec_/);

    // Act: a send with the key, its webhooks (Basic and signed), a 401, a key verification that fails, an incident
    const sent = await call(`${fixture.api}/send`, {
      method: 'POST',
      key: shop.apiKey,
      json: { to: ['+243812345612'], message: 'logged' },
    });
    requestIds.push(sent.headers.get('x-request-id') ?? '');
    const messageId = dataOf<SendData>(sent, 201).message_id;
    await receiver.waitFor((requests) => requests.length >= 4, 20_000, 'queued, processing, sent, delivered');
    expect(receiver.requests[0]?.headers.authorization).to.equal(`Basic ${Buffer.from(`hooks:${PASSWORD}`).toString('base64')}`);
    expect(receiver.requests[0]?.headers['x-signature']).to.be.a('string');
    const status = await call(`${fixture.api}/status/${messageId}`, { key: shop.apiKey });
    requestIds.push(status.headers.get('x-request-id') ?? '');
    const unauthorized = await call(`${fixture.api}/balance`, { key: alteredKey(shop.apiKey) });
    expect(unauthorized.status).to.equal(401);
    requestIds.push(unauthorized.headers.get('x-request-id') ?? '');
    // a key not yet looked up (so not cached), whose lookup fails the way a driver fails: quoting the value it was
    // given (the key's hash)
    freshKey = (await gateway.useCases.apiKeys.issueKey(shop.merchantId)).apiKey;
    const hash = hashApiKey(freshKey);
    sinon.stub(gateway.persistence.directory, 'keyByHash').rejects(
      Object.assign(new Error(`lookup failed for key hash ${hash}`), {
        detail: `Key (hash)=(${hash}) is locked`,
        cause: new Error(`connection lost at ${hash}`),
      }),
    );
    const failed = await call(`${fixture.api}/balance`, { key: freshKey });
    sinon.restore();
    expect(failed.status).to.equal(500);
    requestIds.push(failed.headers.get('x-request-id') ?? '');
    // an incident nobody's request sees: a malformed carrier receipt
    await fixture.node.transport.publish('sms.receipts.simulator', { not: 'a receipt' }, { id: 'bogus-receipt-1' });
    await eventually(() => Promise.resolve(raw.some((line) => line.includes('receipt_rejected'))), 10_000, 'the incident logged');

    await stopNode();
    lines = raw.map((line) => JSON.parse(line) as LogLine);
  });

  after(async () => {
    sinon.restore();
    await stopNode();
    await receiver.close();
  });

  it('never contains the API key, its hash, the webhook password (or its Basic header) or the signing secret', () => {
    const forbidden = {
      apiKey: shop.apiKey,
      keyHash: hashApiKey(shop.apiKey),
      failingKey: freshKey,
      failingKeyHash: hashApiKey(freshKey),
      password: PASSWORD,
      basic: Buffer.from(`hooks:${PASSWORD}`).toString('base64'),
      secret,
      secretBody: secret.slice('whsec_'.length),
    };
    expect(raw.length).to.be.greaterThan(5);
    for (const line of raw) {
      for (const [what, value] of Object.entries(forbidden)) expect(line.includes(value), `${what} in ${line}`).to.equal(false);
    }
  });

  it('has request_id on every request line, and merchant_id once authenticated', () => {
    const requests = lines.filter((line) => line.msg === 'request');
    expect(requests.map((line) => line.request_id)).to.include.members(requestIds);
    for (const line of requests) expect(line.request_id, JSON.stringify(line)).to.be.a('string').and.not.equal('');
    const byId = (id: string) => requests.find((line) => line.request_id === id);
    const [send, status, unauthorized, failed] = requestIds.map(byId);
    expect(send).to.include({ route: 'send', method: 'POST', status: 201, merchant_id: shop.merchantId });
    expect(status).to.include({ route: 'status', status: 200, merchant_id: shop.merchantId });
    expect(unauthorized).to.include({ route: 'balance', status: 401 });
    expect(unauthorized).not.to.have.property('merchant_id');
    expect(failed).to.include({ route: 'balance', status: 500 });
  });

  it('logs the failed verification with its request id and the error serialized, scrubbed', () => {
    const line = lines.find((l) => l.msg === 'key verification failed');
    expect(line, 'key verification failed').to.not.equal(undefined);
    expect(line).to.include({ level: 50, request_id: requestIds[3] });
    const err = line!.err as Record<string, unknown>;
    expect(err.type).to.equal('Error');
    // pino's serializer appends the cause's message
    expect(err.message).to.equal('lookup failed for key hash [redacted-hash]: connection lost at [redacted-hash]');
    expect(err.detail).to.equal('Key (hash)=([redacted-hash]) is locked');
    expect(err.stack).to.be.a('string').and.include('lookup failed for key hash [redacted-hash]');
  });

  it('logs incidents at error level with the error serialized', () => {
    const line = lines.find((l) => l.msg === 'receipt_rejected');
    expect(line).to.include({ level: 50 });
    const err = line!.err as Record<string, unknown>;
    expect(err.type).to.equal('Error');
    expect(err.message).to.be.a('string').and.include('invalid receipt');
    expect(err.stack).to.be.a('string').and.not.equal('');
  });
});
