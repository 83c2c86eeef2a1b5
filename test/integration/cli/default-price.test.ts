import { expect } from 'chai';
import { runCli } from '../../../src/composition/cli.js';
import { DEMO_MERCHANT_ID, DEMO_PRICING, DEMO_UNIT_PRICE, seedDemoMerchant } from '../../../src/merchants/demo-merchant.js';
import { NUMBERS } from '../../helpers/api-helpers.js';
import { gatewayOnPostgres } from '../../helpers/gateway-fixture.js';
import { API_ROOT, call, startApi } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** The demo merchant's default price, and the CLI command that sets a merchant's, seen through GET /balance. */
describe("operator CLI: a merchant's default price (pricing set-default)", function () {
  this.timeout(90_000);
  let url: string;
  let apiKey: string;

  before(async () => {
    url = await (await testPostgres()).createDatabase('default_price');
    const gateway = await gatewayOnPostgres(url);
    try {
      const demo = await seedDemoMerchant(gateway);
      if (!demo) throw new Error('the demo merchant was not created');
      apiKey = demo.apiKey;
    } finally {
      await gateway.stop();
    }
  });

  async function cli(argv: readonly string[]): Promise<CliRun> {
    const out: string[] = [];
    const err: string[] = [];
    const env = { NODE_ENV: 'test', GATEWAY_MODE: 'server', DATABASE_URL: url };
    const code = await runCli(argv, { env, out: (text) => out.push(text), err: (text) => err.push(text) });
    return { code, out: out.join(''), err: err.join('') };
  }

  /** GET /balance, then the cost of one SMS to a destination without a pricing row, from a node started on the database. */
  async function fromApi(): Promise<{ balance: Record<string, unknown>; unpricedCost: unknown }> {
    const api = await startApi(url);
    try {
      const balance = await call(`${api.baseUrl}${API_ROOT}/balance`, { key: apiKey });
      expect(balance.status, balance.text).to.equal(200);
      const sent = await call(`${api.baseUrl}${API_ROOT}/send`, {
        method: 'POST',
        key: apiKey,
        json: { to: [NUMBERS.unpriced], message: 'Hi' },
      });
      expect(sent.status, sent.text).to.equal(201);
      return {
        balance: (balance.body as { data: Record<string, unknown> }).data,
        unpricedCost: (sent.body as { data: { total_cost: unknown } }).data.total_cost,
      };
    } finally {
      await api.stop();
    }
  }

  it("when the demo merchant is created, then its default price is its dearest row and /balance's available_sms follows", async () => {
    expect(DEMO_UNIT_PRICE).to.equal('0.025');
    expect(Math.max(...DEMO_PRICING.map((row) => Number(row.price)))).to.equal(0.025);

    const { balance, unpricedCost } = await fromApi();

    expect(balance).to.deep.equal({
      balance: 150,
      sms_wallet_balance: 100,
      postpaid_wallet_balance: 50,
      currency: 'USD',
      unit_price: 0.025,
      available_sms: 6000,
    });
    expect(unpricedCost).to.equal(0.025);
  });

  it("when the CLI sets a merchant's default price, then /balance's unit_price and available_sms and a send without a pricing row follow", async () => {
    const set = await cli(['pricing', 'set-default', DEMO_MERCHANT_ID, '0.0199', '--json']);

    expect({ code: set.code, err: set.err }).to.deep.equal({ code: 0, err: '' });
    expect(JSON.parse(set.out)).to.deep.equal({
      merchant_id: DEMO_MERCHANT_ID,
      currency: 'USD',
      unit_price: 0.0199,
      previous_unit_price: 0.025,
    });
    const { balance, unpricedCost } = await fromApi();
    // 149.975 after the first test's send at 0.025
    expect(balance).to.deep.include({ balance: 149.975, unit_price: 0.0199, available_sms: 7536 });
    expect(unpricedCost).to.equal(0.0199);
    const listed = await cli(['pricing', 'list', DEMO_MERCHANT_ID]);
    expect(listed.out).to.include('Other destinations: 0.0199 USD per segment.');
  });

  it('when the price is not a positive amount with at most 4 decimals, or the merchant is unknown, then nothing changes (exit code 1)', async () => {
    const unitPrice = async () =>
      (JSON.parse((await cli(['merchants', 'show', DEMO_MERCHANT_ID, '--json'])).out) as { unit_price: number }).unit_price;
    const before = await unitPrice();

    for (const price of ['0', '0.00001', '1e-2', '0,02', '']) {
      expect(await cli(['pricing', 'set-default', DEMO_MERCHANT_ID, price]), price).to.deep.equal({
        code: 1,
        out: '',
        err: `error: price "${price}" must be a positive amount with at most 4 decimals\n`,
      });
    }
    expect(await cli(['pricing', 'set-default', 'mer_nope', '0.02'])).to.deep.equal({
      code: 1,
      out: '',
      err: 'error: unknown merchant mer_nope\n',
    });
    expect(await unitPrice()).to.equal(before);
  });
});
