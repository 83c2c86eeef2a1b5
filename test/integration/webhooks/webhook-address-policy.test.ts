import { expect } from 'chai';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { setWebhook } from '../../../src/entry-points/cli/key-commands.js';
import { client, expectFieldError, NUMBERS } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';

/** Literal forms that reach this machine or a private network, each spelled as a merchant could write it. */
const INSIDE_URLS = [
  'https://127.0.0.1:8443/hooks',
  'https://[::1]/hooks',
  'https://[::127.0.0.1]/hooks',
  'https://[::ffff:127.0.0.1]/hooks',
  'https://[64:ff9b::7f00:1]/hooks',
  'https://[2002:7f00:1::]/hooks',
  'https://[fec0::1]/hooks',
  'https://[fd00::1]/hooks',
  'https://[fe80::1]/hooks',
  'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hooks',
  'https://169.254.169.254/latest',
  'https://100.64.0.1/hooks',
  'https://10.0.0.1/hooks',
  'https://2130706433/hooks',
];

/** A production node over HTTP and PostgreSQL: the webhook address policy at acceptance and at delivery. */
describe('webhook address policy in production, through the real interfaces', function () {
  this.timeout(60_000);
  let api: ApiFixture;
  let merchant: SeededMerchant;
  let receiver: Server;
  let receiverPort: number;
  let connections: number;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('address_policy');
    api = await startApi(url, { config: { environment: 'production', webhooks: { allowHttpLocalhost: false } } });
    merchant = await seedMerchant(api.node.gateway, { prepaid: '100' });
    // a local receiver that only counts connections: any connection at all is a failure of the policy
    connections = 0;
    receiver = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverPort = (receiver.address() as AddressInfo).port;
  });

  after(async () => {
    await api.stop();
    await new Promise<void>((resolve) =>
      receiver.close(() => {
        resolve();
      }),
    );
  });

  it('refuses a callback_url in each non-public form with 400/1110 on callback_url, and charges nothing', async () => {
    const http = client(() => api.api);
    const before = await http.balanceOf(merchant.apiKey);
    for (const callbackUrl of INSIDE_URLS) {
      const result = await http.send(merchant.apiKey, { to: [NUMBERS.vodacom], message: 'Hello', callback_url: callbackUrl });
      const details = expectFieldError(result, 'callback_url');
      expect(details.find((d) => d.field === 'callback_url')?.message, callbackUrl).to.match(/public/);
    }
    expect(await http.balanceOf(merchant.apiKey)).to.deep.equal(before);
  });

  it('refuses each non-public form as a key webhook (keys set-webhook), and accepts a public address', async () => {
    for (const url of INSIDE_URLS) {
      const outcome = await setWebhook(api.node.gateway, { keyId: merchant.keyId, url });
      expect(outcome.ok, url).to.equal(false);
      expect(outcome.ok ? '' : outcome.message, url).to.include('public internet addresses');
    }
    const keys = await api.node.gateway.useCases.apiKeys.listKeys(merchant.merchantId);
    expect(keys.map((k) => k.webhookUrl)).to.deep.equal([null]);

    expect((await setWebhook(api.node.gateway, { keyId: merchant.keyId, url: 'https://93.184.216.34/hooks' })).ok).to.equal(true);
  });

  it('when a key webhook already points to a loopback literal, then the delivery is refused and no connection reaches the receiver', async () => {
    // set below the acceptance check, as a webhook stored before the policy existed would be
    await api.node.gateway.useCases.apiKeys.setWebhook(merchant.keyId, {
      url: `https://127.0.0.1:${receiverPort}/hooks`,
      username: null,
      password: null,
    });
    const http = client(() => api.api);

    const sent = await http.send(merchant.apiKey, { to: [NUMBERS.vodacom], message: 'Hello' });
    expect(sent.status, sent.text).to.equal(201);

    const refused = await eventually(
      async () => {
        const letters = await api.node.gateway.persistence.deadLetters.list({ merchantId: merchant.merchantId, limit: 100 });
        return letters.find((letter) => letter.reason === 'refused_address');
      },
      20_000,
      'the refused delivery',
    );
    expect(refused.url).to.equal(`https://127.0.0.1:${receiverPort}/hooks`);
    expect(refused.lastError).to.include('127.0.0.1');
    expect(connections).to.equal(0);
  });
});
