import { expect } from 'chai';
import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import type { FieldIssue } from '../../../src/libraries/errors/app-error.js';
import { validateCalculateRequest } from '../../../src/pricing/calculate-request.js';
import {
  averagePrice,
  calculate,
  CALCULATE_MAX,
  currencySymbol,
  priceAsNumber,
  type CalculateResult,
} from '../../../src/pricing/calculate.js';
import { fromUnits, mustParseMoney } from '../../../src/pricing/money.js';
import type { PricingRow } from '../../../src/pricing/pricing-table.js';

function rowsPriced(...prices: string[]): PricingRow[] {
  return prices.map((price, i) => ({
    countryCallingCode: '243',
    networkPrefix: String(80 + i),
    price: mustParseMoney(price),
    carrier: `c${i}`,
  }));
}

function mustCalculate(...args: Parameters<typeof calculate>): CalculateResult {
  const result = calculate(...args);
  if (result === null) throw new Error('expected a result, got null');
  return result;
}

function issuesOf(body: unknown): readonly FieldIssue[] {
  const result = validateCalculateRequest(body);
  if (result.ok) throw new Error(`expected issues, got ${JSON.stringify(result.value)}`);
  return result.issues;
}

describe('calculate', () => {
  describe('averagePrice', () => {
    const cases: [string[], string][] = [
      [['0.02', '0.03'], '0.025'],
      [['0.01', '0.01', '0.02'], '0.0133'],
      [['0.05'], '0.05'],
      [['0.0002', '0.0003'], '0.0003'], // 0.00025: half-up (half-even would give 0.0002)
      [['0.0001', '0.0001', '0.0002'], '0.0001'], // 0.000133…
      [['0.0001', '0.0002', '0.0002'], '0.0002'], // 0.000166…
      [['1', '2', '2'], '1.6667'],
    ];
    for (const [prices, expected] of cases) {
      it(`when the rows cost ${prices.join(', ')}, then the average is ${expected}`, () => {
        expect(averagePrice(rowsPriced(...prices))?.toFixed()).to.equal(expected);
      });
    }

    it('when rows share a country or network, then each still counts once (no weighting)', () => {
      const rows = [...rowsPriced('0.01', '0.01', '0.01'), ...rowsPriced('0.05')];
      expect(averagePrice(rows)?.toFixed()).to.equal('0.02');
    });

    it('when there are no rows, then there is no average', () => {
      expect(averagePrice([])).to.equal(null);
    });
  });

  describe('calculate', () => {
    it('when 10 is converted at an average of 0.025, then it buys 400 SMS', () => {
      expect(calculate({ mode: 'amount_to_sms', amount: 10 }, rowsPriced('0.02', '0.03'))).to.deep.equal({
        mode: 'amount_to_sms',
        amount: 10,
        smsCount: 400,
        averagePrice: 0.025,
      });
    });

    it('when 3 SMS are converted at an average of 0.0133, then they cost 0.04 (0.0399 rounded to 2 decimals)', () => {
      expect(calculate({ mode: 'sms_to_amount', smsCount: 3 }, rowsPriced('0.01', '0.01', '0.02'))).to.deep.equal({
        mode: 'sms_to_amount',
        amount: 0.04,
        smsCount: 3,
        averagePrice: 0.0133,
      });
    });

    it('when the amount does not divide evenly, then the SMS count is floored', () => {
      expect(mustCalculate({ mode: 'amount_to_sms', amount: 10.02 }, rowsPriced('0.025')).smsCount).to.equal(400);
      expect(mustCalculate({ mode: 'amount_to_sms', amount: 0.0399 }, rowsPriced('0.0133')).smsCount).to.equal(3);
      expect(mustCalculate({ mode: 'amount_to_sms', amount: 0.0398 }, rowsPriced('0.0133')).smsCount).to.equal(2);
    });

    it('when binary floating point would lose a unit (0.3 / 0.1), then the division is still exact', () => {
      expect(mustCalculate({ mode: 'amount_to_sms', amount: 0.3 }, rowsPriced('0.1')).smsCount).to.equal(3);
    });

    const halfUp: [string, number, number][] = [
      ['0.005', 1, 0.01], // exactly half: up (half-even would give 0)
      ['0.015', 1, 0.02],
      ['0.0149', 1, 0.01],
      ['0.025', 1, 0.03], // half-even would give 0.02
      ['0.0133', 10_000_000, 133_000],
    ];
    for (const [price, smsCount, amount] of halfUp) {
      it(`when ${smsCount} SMS cost ${price} each, then the amount is ${amount} (half-up to 2 decimals)`, () => {
        expect(mustCalculate({ mode: 'sms_to_amount', smsCount }, rowsPriced(price)).amount).to.equal(amount);
      });
    }

    it('when the input is 0, then the computed field is 0 in both directions', () => {
      const rows = rowsPriced('0.02', '0.03');
      expect(mustCalculate({ mode: 'amount_to_sms', amount: 0 }, rows).smsCount).to.equal(0);
      expect(mustCalculate({ mode: 'sms_to_amount', smsCount: 0 }, rows).amount).to.equal(0);
    });

    it('when the inputs are at their maximum, then the results are exact', () => {
      expect(mustCalculate({ mode: 'amount_to_sms', amount: CALCULATE_MAX }, rowsPriced('0.0001')).smsCount).to.equal(100_000_000_000);
      expect(mustCalculate({ mode: 'sms_to_amount', smsCount: CALCULATE_MAX }, rowsPriced('9999.9999')).amount).to.equal(99_999_999_000);
    });

    it('when the merchant has no pricing rows, then there is no result (1211)', () => {
      expect(calculate({ mode: 'amount_to_sms', amount: 10 }, [])).to.equal(null);
      expect(calculate({ mode: 'sms_to_amount', smsCount: 3 }, [])).to.equal(null);
    });

    describe('properties', () => {
      const pricesArb = fc.array(fc.integer({ min: 1, max: 10_000 }).map(fromUnits), { minLength: 1, maxLength: 20 });
      const toRows = (prices: readonly number[]): PricingRow[] =>
        prices.map((price, i) => ({ countryCallingCode: '243', networkPrefix: String(i), price: fromUnits(price), carrier: 'c' }));

      it('sms_to_amount then amount_to_sms never yields more SMS than the amount pays for, and floors tightly', () => {
        fc.assert(
          fc.property(pricesArb, fc.integer({ min: 0, max: CALCULATE_MAX }), (prices, smsCount) => {
            const rows = toRows(prices);
            const { amount, averagePrice: average } = mustCalculate({ mode: 'sms_to_amount', smsCount }, rows);
            const back = mustCalculate({ mode: 'amount_to_sms', amount }, rows);
            const avg = new Decimal(average);
            expect(back.averagePrice).to.equal(average);
            expect(avg.times(back.smsCount).lte(amount), `${back.smsCount} × ${average} > ${amount}`).to.equal(true);
            expect(avg.times(back.smsCount + 1).gt(amount), `${back.smsCount + 1} × ${average} <= ${amount}`).to.equal(true);
            // the amount is n × average rounded to the cent, so it is never more than half a cent away
            expect(avg.times(smsCount).minus(amount).abs().lte('0.005')).to.equal(true);
          }),
        );
      });

      it('amount_to_sms of any amount from 0 to 10,000,000 is floor(amount / average)', () => {
        fc.assert(
          fc.property(pricesArb, fc.double({ min: 0, max: CALCULATE_MAX, noNaN: true }), (prices, amount) => {
            const { smsCount, averagePrice: average } = mustCalculate({ mode: 'amount_to_sms', amount }, toRows(prices));
            const avg = new Decimal(average);
            expect(Number.isInteger(smsCount)).to.equal(true);
            expect(avg.times(smsCount).lte(amount)).to.equal(true);
            expect(avg.times(smsCount + 1).gt(amount)).to.equal(true);
          }),
        );
      });
    });
  });

  describe('currencySymbol', () => {
    const cases: [string, string, string][] = [
      ['USD', 'fr-CD', '$US'],
      ['CDF', 'fr-CD', 'FC'],
      ['EUR', 'fr-CD', '€'],
      ['USD', 'en-US', '$'],
    ];
    for (const [currency, locale, symbol] of cases) {
      it(`when ${currency} is shown in ${locale}, then the symbol is ${symbol}`, () => {
        expect(currencySymbol(currency, locale)).to.equal(symbol);
      });
    }

    it('when the currency code is malformed, then the code itself is shown', () => {
      expect(currencySymbol('US', 'fr-CD')).to.equal('US');
    });

    it('when the locale is malformed, then the code itself is shown', () => {
      expect(currencySymbol('USD', '!!not a locale')).to.equal('USD');
    });
  });

  it('priceAsNumber turns units into the JSON number', () => {
    expect(priceAsNumber(mustParseMoney('0.0133'))).to.equal(0.0133);
    expect(priceAsNumber(fromUnits(0))).to.equal(0);
  });
});

describe('calculate request (POST /calculate body)', () => {
  it('when amount_to_sms has an amount, then it is accepted as { mode, amount }', () => {
    expect(validateCalculateRequest({ mode: 'amount_to_sms', amount: 12.5 })).to.deep.equal({
      ok: true,
      value: { mode: 'amount_to_sms', amount: 12.5 },
    });
  });

  it('when sms_to_amount has an sms_count, then it is accepted as { mode, smsCount }', () => {
    expect(validateCalculateRequest({ mode: 'sms_to_amount', sms_count: 3 })).to.deep.equal({
      ok: true,
      value: { mode: 'sms_to_amount', smsCount: 3 },
    });
  });

  const amountLimits: [number, boolean][] = [
    [-0.01, false],
    [0, true],
    [10_000_000, true],
    [10_000_000.01, false],
  ];
  for (const [amount, ok] of amountLimits) {
    it(`when amount is ${amount}, then it is ${ok ? 'accepted' : 'rejected'}`, () => {
      const result = validateCalculateRequest({ mode: 'amount_to_sms', amount });
      if (ok) expect(result).to.deep.equal({ ok: true, value: { mode: 'amount_to_sms', amount } });
      else
        expect(issuesOf({ mode: 'amount_to_sms', amount })).to.deep.equal([
          amount < 0
            ? { field: 'amount', message: 'must be greater than or equal to 0', type: 'number.min' }
            : { field: 'amount', message: 'must be less than or equal to 10000000', type: 'number.max' },
        ]);
    });
  }

  const smsLimits: [number, boolean][] = [
    [-1, false],
    [0, true],
    [10_000_000, true],
    [10_000_001, false],
  ];
  for (const [smsCount, ok] of smsLimits) {
    it(`when sms_count is ${smsCount}, then it is ${ok ? 'accepted' : 'rejected'}`, () => {
      const body = { mode: 'sms_to_amount', sms_count: smsCount };
      if (ok) expect(validateCalculateRequest(body)).to.deep.equal({ ok: true, value: { mode: 'sms_to_amount', smsCount } });
      else expect(issuesOf(body).map((i) => [i.field, i.type])).to.deep.equal([['sms_count', smsCount < 0 ? 'number.min' : 'number.max']]);
    });
  }

  it('when sms_count is not an integer, then it is rejected', () => {
    expect(issuesOf({ mode: 'sms_to_amount', sms_count: 2.5 })).to.deep.equal([
      { field: 'sms_count', message: 'must be an integer', type: 'number.integer' },
    ]);
  });

  it('when the mode needs a field that is missing, then that field is required', () => {
    expect(issuesOf({ mode: 'amount_to_sms' })).to.deep.equal([{ field: 'amount', message: 'is required', type: 'any.required' }]);
    expect(issuesOf({ mode: 'sms_to_amount' })).to.deep.equal([{ field: 'sms_count', message: 'is required', type: 'any.required' }]);
    expect(issuesOf({ mode: 'amount_to_sms', sms_count: 3 }).map((i) => i.field)).to.deep.equal(['amount']);
  });

  it('when mode is missing, then it is required', () => {
    expect(issuesOf({ amount: 10 })).to.deep.equal([{ field: 'mode', message: 'is required', type: 'any.required' }]);
  });

  for (const mode of ['AMOUNT_TO_SMS', 'Sms_To_Amount', 'amount', '', null, 1]) {
    it(`when mode is ${JSON.stringify(mode)}, then it is rejected (lowercase values only)`, () => {
      const issues = issuesOf({ mode, amount: 10, sms_count: 1 });
      // joi may add a second, type-level issue (string.empty, string.base) on the same field
      expect(new Set(issues.map((i) => i.field))).to.deep.equal(new Set(['mode']));
      expect(issues[0]).to.deep.equal({ field: 'mode', message: 'must be one of [amount_to_sms, sms_to_amount]', type: 'any.only' });
    });
  }

  it('when a number comes as a string, then it is rejected (no conversion)', () => {
    expect(issuesOf({ mode: 'amount_to_sms', amount: '10' })).to.deep.equal([
      { field: 'amount', message: 'must be a number', type: 'number.base' },
    ]);
    expect(issuesOf({ mode: 'sms_to_amount', sms_count: '3' }).map((i) => [i.field, i.type])).to.deep.equal([['sms_count', 'number.base']]);
  });

  it('when the field of the other mode is present, then it is still checked', () => {
    expect(issuesOf({ mode: 'amount_to_sms', amount: 10, sms_count: -1 }).map((i) => [i.field, i.type])).to.deep.equal([
      ['sms_count', 'number.min'],
    ]);
  });

  it('when the body has an unknown field, then it is rejected by name', () => {
    expect(issuesOf({ mode: 'amount_to_sms', amount: 10, currency: 'USD' })).to.deep.equal([
      { field: 'currency', message: 'is not allowed', type: 'object.unknown' },
    ]);
  });

  it('when several fields are wrong, then every issue is reported', () => {
    expect(issuesOf({ mode: 'AMOUNT_TO_SMS', amount: -1, sms_count: 1.5, extra: true }).map((i) => i.field)).to.deep.equal([
      'mode',
      'amount',
      'sms_count',
      'extra',
    ]);
  });

  for (const body of [null, 'amount_to_sms', [], 42]) {
    it(`when the body is ${JSON.stringify(body)}, then the issue names the body`, () => {
      expect(issuesOf(body)).to.deep.equal([{ field: 'body', message: 'must be a JSON object', type: 'object.base' }]);
    });
  }

  it('when there is no body, then the body is required', () => {
    expect(issuesOf(undefined)).to.deep.equal([{ field: 'body', message: 'value is required', type: 'any.required' }]);
  });
});
