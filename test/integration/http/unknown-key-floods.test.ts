import { expect } from 'chai';
import sinon from 'sinon';
import { createApiKeyUseCases } from '../../../src/api-keys/api-key-use-cases.js';
import { hashApiKey } from '../../../src/api-keys/api-key.js';
import { createGatewayNode, type GatewayNode } from '../../../src/gateway-node.js';
import { silentLogger } from '../../../src/libraries/logger/logger.js';
import { openPostgresPersistence, type Persistence } from '../../../src/libraries/persistence/persistence.js';
import { createDatabaseBus } from '../../../src/libraries/transport/database-bus.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { client, dataOf, expectDetail, expectEnvelope, unknownKey } from '../../helpers/api-helpers.js';
import { seedMerchant, testConfig, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { API_ROOT } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const FAILURES_PER_ADDRESS = 5;

/**
 * Floods of unknown keys against a real node on PostgreSQL: an unknown key presented again costs no database lookup
 * (counted on the real directory), and an address past its 401s gets 429/1301 without one, while a key that works
 * keeps working from the same address.
 */
describe('unknown-key floods (HTTP, PostgreSQL)', function () {
  this.timeout(60_000);
  let persistence: Persistence;
  let transport: Transport;
  let node: GatewayNode;
  let api: ReturnType<typeof client>;
  let merchant: SeededMerchant;
  let lookups: sinon.SinonSpy<[hash: string], ReturnType<Persistence['directory']['keyByHash']>>;
  const lookupsOf = (key: string) => lookups.getCalls().filter((c) => c.args[0] === hashApiKey(key)).length;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('floods');
    persistence = await openPostgresPersistence({ url, poolSize: 4 });
    // the real directory, counted: the gateway wraps it at creation
    lookups = sinon.spy(persistence.directory, 'keyByHash');
    const sql = persistence.sql;
    if (!sql) throw new Error('PostgreSQL without SQL');
    transport = createDatabaseBus({ db: sql });
    // windows far longer than the test: nothing here depends on how fast it runs
    const config = testConfig({
      database: { url },
      auth: { negativeCacheMs: 600_000, failuresPerAddress: FAILURES_PER_ADDRESS, failureWindowMs: 600_000 },
    });
    node = await createGatewayNode({ config, persistence, transport, logger: silentLogger });
    const port = await node.start();
    api = client(() => `http://127.0.0.1:${String(port)}${API_ROOT}`);
    merchant = await seedMerchant(node.gateway, { prepaid: '10' });
  });

  after(async () => {
    await node.stop();
    await transport.close();
    await persistence.close();
  });

  it('when an unknown key comes again, then it is answered 401 from the negative cache without another lookup', async () => {
    dataOf(await api.balance(merchant.apiKey));
    const wrong = unknownKey();
    for (let i = 0; i < 3; i++) expectDetail(await api.balance(wrong), 401);
    expect(lookupsOf(wrong)).to.equal(1);
  });

  it('when one address passes its 401s, then its wrong keys get 429/1301 with Retry-After and no lookup, and a key that works still works from it', async () => {
    // the previous test spent 3 of the address's 401s
    for (let i = 3; i < FAILURES_PER_ADDRESS; i++) expectDetail(await api.balance(unknownKey()), 401);
    const beyond = unknownKey();
    const limited = await api.balance(beyond);
    const body = expectEnvelope(limited, 429, '1301');
    expect(body.retry_after).to.be.a('number').within(1, 600);
    expect(limited.headers.get('retry-after')).to.equal(String(body.retry_after));
    expect(lookupsOf(beyond), 'no lookup for a limited address').to.equal(0);
    // malformed keys count among the 401s, and are limited too
    expectEnvelope(await api.balance('sk_test_short'), 429, '1301');
    // the merchant's working key from the same address
    dataOf(await api.balance(merchant.apiKey));
    expect((await api.send(merchant.apiKey, { to: ['+243812345678'], message: 'still served' })).status).to.equal(201);
  });

  it('when a key is created through this node right after it was looked up as unknown, then it authenticates at once', async () => {
    const next = unknownKey();
    const apiKeys = createApiKeyUseCases({
      router: node.gateway.router,
      directory: persistence.directory,
      clock: node.gateway.clock,
      newKeyId: () => 'key_created_after_miss',
      environment: 'sandbox',
      lookupCacheMs: 60_000,
      secrets: node.gateway.secrets,
      guards: { negativeCacheMs: 600_000, failuresPerAddress: 1_000, failureWindowMs: 600_000 },
      generateKey: () => next,
    });
    expect(await apiKeys.authenticate(next, 'balance', '10.9.9.9')).to.deep.equal({ outcome: 'unauthorized' });
    await apiKeys.issueKey(merchant.merchantId);
    expect(await apiKeys.authenticate(next, 'balance', '10.9.9.9')).to.include({
      outcome: 'authenticated',
      keyId: 'key_created_after_miss',
    });
  });
});
