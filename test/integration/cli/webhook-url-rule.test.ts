import { expect } from 'chai';
import { runCli } from '../../../src/composition/cli.js';
import { API_ROOT, call, startApi } from '../../helpers/http-fixture.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const LOCALHOST_HOOK = 'http://localhost:4000/hooks';

interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * A key's webhook (`keys set-webhook`) and a send's `callback_url` (POST /send) follow one rule with the same
 * settings: a server-mode sandbox accepts http://localhost in both exactly when WEBHOOK_ALLOW_HTTP_LOCALHOST is on.
 */
describe('operator CLI: keys set-webhook follows the rule of callback_url on POST /send', function () {
  this.timeout(90_000);

  for (const allowed of [true, false]) {
    describe(`server mode, WEBHOOK_ALLOW_HTTP_LOCALHOST=${String(allowed)}`, () => {
      let url: string;
      let merchant: SeededMerchant;

      before(async () => {
        url = await (await testPostgres()).createDatabase(`webhook_rule_${String(allowed)}`);
        const gateway = await gatewayOnPostgres(url);
        try {
          merchant = await seedMerchant(gateway, { prepaid: '10' });
        } finally {
          await gateway.stop();
        }
      });

      async function cli(argv: readonly string[]): Promise<CliRun> {
        const out: string[] = [];
        const err: string[] = [];
        const env = { NODE_ENV: 'test', GATEWAY_MODE: 'server', DATABASE_URL: url, WEBHOOK_ALLOW_HTTP_LOCALHOST: String(allowed) };
        const code = await runCli(argv, { env, out: (text) => out.push(text), err: (text) => err.push(text) });
        return { code, out: out.join(''), err: err.join('') };
      }

      it(`when the CLI sets an http://localhost webhook, then it is ${allowed ? 'accepted' : 'refused'}`, async () => {
        const set = await cli(['keys', 'set-webhook', merchant.keyId, '--url', LOCALHOST_HOOK]);
        const keys = JSON.parse((await cli(['keys', 'list', merchant.merchantId, '--json'])).out) as { webhook_url: string | null }[];

        if (allowed) {
          expect(set).to.deep.include({ code: 0, err: '' });
          expect(keys.map((key) => key.webhook_url)).to.deep.equal([LOCALHOST_HOOK]);
        } else {
          expect(set).to.deep.equal({
            code: 1,
            out: '',
            err: `error: --url "${LOCALHOST_HOOK}" must be an absolute https:// URL (without credentials)\n`,
          });
          expect(keys.map((key) => key.webhook_url)).to.deep.equal([null]);
        }
        // https is accepted either way
        expect(await cli(['keys', 'set-webhook', merchant.keyId, '--url', 'https://shop.example/hooks'])).to.deep.include({
          code: 0,
          err: '',
        });
      });

      it(`when POST /send names an http://localhost callback_url, then it is ${allowed ? 'accepted' : 'refused'}`, async () => {
        const api = await startApi(url, { config: { webhooks: { allowHttpLocalhost: allowed } } });
        try {
          const sent = await call(`${api.baseUrl}${API_ROOT}/send`, {
            method: 'POST',
            key: merchant.apiKey,
            json: { to: ['+243812345600'], message: 'Hello', callback_url: LOCALHOST_HOOK },
          });

          if (allowed) {
            expect(sent.status, sent.text).to.equal(201);
          } else {
            expect(sent.status, sent.text).to.equal(400);
            expect((sent.body as { details: unknown }).details).to.deep.equal([
              { field: 'callback_url', message: 'must be an absolute https:// URL', type: 'string.uri' },
            ]);
          }
        } finally {
          await api.stop();
        }
      });
    });
  }
});
