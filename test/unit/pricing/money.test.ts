import { expect } from 'chai';
import fc from 'fast-check';
import {
  add,
  fromUnits,
  isMoney,
  min,
  MONEY_DECIMALS,
  MONEY_SCALE,
  multiply,
  mustParseMoney,
  parseMoney,
  parsePrice,
  PRICE_RULE,
  subtract,
  sum,
  toDecimal,
  toDecimalNumber,
  toDecimalString,
  ZERO,
  type Money,
} from '../../../src/pricing/money.js';

const units = (n: number): Money => fromUnits(n);

describe('money', () => {
  it('is counted in 1/10 000 of the currency unit, with 4 decimals', () => {
    expect(MONEY_SCALE).to.equal(10_000);
    expect(MONEY_DECIMALS).to.equal(4);
    expect(ZERO).to.equal(0);
  });

  describe('parseMoney', () => {
    const accepted: [string | number, number][] = [
      ['0', 0],
      ['0.0001', 1],
      ['1', 10_000],
      ['12.5', 125_000],
      ['1.2345', 12_345],
      ['3.10', 31_000],
      [' 7.25 ', 72_500],
      ['007', 70_000],
      ['10000000', 100_000_000_000],
      [0, 0],
      [0.0001, 1],
      [0.1, 1_000],
      [12.5, 125_000],
      [1.2345, 12_345],
      [10_000_000, 100_000_000_000],
    ];
    for (const [input, expected] of accepted) {
      it(`when given ${JSON.stringify(input)}, then it is ${expected} units`, () => {
        expect(parseMoney(input)).to.equal(expected);
      });
    }

    const rejected: (string | number)[] = [
      '12.34567',
      '0.00001',
      '-1',
      '-0.01',
      '+1',
      '1e3',
      '.5',
      '1.',
      '1,5',
      '',
      'abc',
      '0x10',
      'Infinity',
      -0.01,
      -1,
      0.00001,
      0.1 + 0.2, // 0.30000000000000004: more than 4 decimals, never silently rounded
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      -Number.MIN_VALUE,
      1e21,
    ];
    for (const input of rejected) {
      it(`when given ${typeof input === 'string' ? JSON.stringify(input) : String(input)}, then it is null`, () => {
        expect(parseMoney(input)).to.equal(null);
      });
    }

    it('when given negative zero, then it is 0 units like 0', () => {
      expect(parseMoney(-0)).to.equal(0);
    });

    it('when the amount is the largest exact one (MAX_SAFE_INTEGER units), then it parses; one unit more is null', () => {
      expect(parseMoney('900719925474.0991')).to.equal(Number.MAX_SAFE_INTEGER);
      expect(parseMoney('900719925474.0992')).to.equal(null);
      expect(parseMoney('999999999999.9999')).to.equal(null);
    });
  });

  describe('parsePrice', () => {
    it('when the text is a positive amount, then it is the price in units', () => {
      expect(parsePrice('0.025')).to.equal(250);
      expect(parsePrice('0.0001')).to.equal(1);
      expect(parsePrice(' 12 ')).to.equal(120_000);
    });

    it('when the amount is zero, then it is no price', () => {
      expect(parsePrice('0')).to.equal(null);
      expect(parsePrice('0.0000')).to.equal(null);
    });

    it('when the text is not an amount, then it is no price', () => {
      expect(parsePrice('-0.025')).to.equal(null);
      expect(parsePrice('0.00001')).to.equal(null);
      expect(parsePrice('free')).to.equal(null);
    });

    it('when a price is refused, then the field message says what a price must be', () => {
      expect(PRICE_RULE).to.equal('must be a positive amount with at most 4 decimals');
    });
  });

  describe('mustParseMoney', () => {
    it('when the text is an amount, then it returns its units', () => {
      expect(mustParseMoney('0.05')).to.equal(500);
    });

    it('when the text is not an amount, then it throws a RangeError naming it', () => {
      expect(() => mustParseMoney('0.00001')).to.throw(RangeError, /at most 4 decimals: 0\.00001/);
      expect(() => mustParseMoney(-2)).to.throw(RangeError, /-2/);
    });
  });

  describe('isMoney', () => {
    it('when a stored value is a safe integer count of units, then it is money (negative and zero included)', () => {
      expect(isMoney(1_500)).to.equal(true);
      expect(isMoney(0)).to.equal(true);
      expect(isMoney(-250)).to.equal(true);
      expect(isMoney(Number.MAX_SAFE_INTEGER)).to.equal(true);
    });

    it('when a stored value is fractional, unsafe, not a number or missing, then it is not money', () => {
      for (const value of [1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY, '1500', 1_500n, null, undefined]) {
        expect(isMoney(value), String(value)).to.equal(false);
      }
    });
  });

  describe('fromUnits', () => {
    it('when the units are a safe integer, then they are the money', () => {
      expect(fromUnits(0)).to.equal(0);
      expect(fromUnits(Number.MAX_SAFE_INTEGER)).to.equal(Number.MAX_SAFE_INTEGER);
      expect(fromUnits(-5)).to.equal(-5);
    });

    it('when the units are fractional or unsafe, then it throws', () => {
      expect(() => fromUnits(1.5)).to.throw(RangeError, /safe integer/);
      expect(() => fromUnits(Number.MAX_SAFE_INTEGER + 1)).to.throw(RangeError);
      expect(() => fromUnits(Number.NaN)).to.throw(RangeError);
    });
  });

  describe('arithmetic', () => {
    it('when 0.1 and 0.2 are added, then the sum is exactly 0.3', () => {
      const total = add(mustParseMoney('0.1'), mustParseMoney('0.2'));
      expect(total).to.equal(3_000);
      expect(toDecimalString(total)).to.equal('0.3');
    });

    it('when subtracting, then the difference is exact (and may be negative)', () => {
      expect(subtract(mustParseMoney('1'), mustParseMoney('0.9999'))).to.equal(1);
      expect(subtract(units(100), units(250))).to.equal(-150);
    });

    it('when multiplying by an integer, then the product is exact', () => {
      expect(multiply(mustParseMoney('0.0133'), 3)).to.equal(399);
      expect(multiply(units(500), 0)).to.equal(0);
    });

    it('when multiplying by a fraction or overflowing, then it throws', () => {
      expect(() => multiply(units(500), 1.5)).to.throw(RangeError, /factor must be an integer/);
      expect(() => multiply(units(Number.MAX_SAFE_INTEGER), 2)).to.throw(RangeError);
    });

    it('when summing, then the result is exact; nothing sums to zero', () => {
      expect(sum([units(1), units(2), units(3)])).to.equal(6);
      expect(sum([])).to.equal(0);
      expect(() => sum([units(Number.MAX_SAFE_INTEGER), units(1)])).to.throw(RangeError);
    });

    it('when comparing, then min returns the smaller amount', () => {
      expect(min(units(5), units(3))).to.equal(3);
      expect(min(units(3), units(5))).to.equal(3);
      expect(min(units(4), units(4))).to.equal(4);
    });
  });

  describe('decimal forms', () => {
    const forms: [number, string, number][] = [
      [0, '0', 0],
      [1, '0.0001', 0.0001],
      [500, '0.05', 0.05],
      [10_000, '1', 1],
      [1_234_500, '123.45', 123.45],
      [6_600, '0.66', 0.66],
      [100_000_000_000, '10000000', 10_000_000],
      [Number.MAX_SAFE_INTEGER, '900719925474.0991', 900719925474.0991],
    ];
    for (const [amount, text, number] of forms) {
      it(`when the amount is ${amount} units, then it reads ${text}`, () => {
        expect(toDecimalString(units(amount))).to.equal(text);
        expect(toDecimalNumber(units(amount))).to.equal(number);
        expect(toDecimal(units(amount)).toFixed()).to.equal(text);
      });
    }
  });

  describe('properties', () => {
    const safeMoney = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

    it('parseMoney(toDecimalString(m)) === m for every safe amount', () => {
      fc.assert(
        fc.property(safeMoney, (m) => {
          expect(parseMoney(toDecimalString(units(m)))).to.equal(m);
        }),
      );
    });

    it('parseMoney(toDecimalNumber(m)) === m for every amount of at most 15 significant digits', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 999_999_999_999_999 }), (m) => {
          expect(parseMoney(toDecimalNumber(units(m)))).to.equal(m);
        }),
      );
    });

    it('add and subtract agree with decimal arithmetic on the decimal strings', () => {
      const half = fc.integer({ min: 0, max: Math.floor(Number.MAX_SAFE_INTEGER / 2) });
      fc.assert(
        fc.property(half, half, (a, b) => {
          const total = add(units(a), units(b));
          expect(toDecimalString(total)).to.equal(
            toDecimal(units(a))
              .plus(toDecimal(units(b)))
              .toFixed(),
          );
          expect(subtract(total, units(b))).to.equal(a);
        }),
      );
    });
  });
});
