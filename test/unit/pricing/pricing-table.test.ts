import { expect } from 'chai';
import fc from 'fast-check';
import { fromUnits, mustParseMoney, toDecimalString } from '../../../src/pricing/money.js';
import { costOfSend, createPriceList, isValidPricingRow, type PricingRow } from '../../../src/pricing/pricing-table.js';

function row(countryCallingCode: string, networkPrefix: string, price: string, carrier: string): PricingRow {
  return { countryCallingCode, networkPrefix, price: mustParseMoney(price), carrier };
}

const UNIT_PRICE = mustParseMoney('0.01');

describe('pricing table', () => {
  describe('createPriceList / priceOf', () => {
    const country = row('243', '', '0.03', 'cd-default');
    const network = row('243', '81', '0.04', 'vodacom');
    const subNetwork = row('243', '812', '0.05', 'vodacom-premium');
    const rows = [country, network, subNetwork];

    const cases: [string, PricingRow][] = [
      ['+243812345678', subNetwork],
      ['+243819876543', network],
      ['+243991234567', country],
    ];
    for (const [phone, expected] of cases) {
      it(`when ${phone} is priced, then the longest matching prefix (${expected.countryCallingCode}${expected.networkPrefix}) wins`, () => {
        const list = createPriceList(rows, UNIT_PRICE);
        expect(list.priceOf(phone)).to.deep.equal({ price: expected.price, carrier: expected.carrier, row: expected });
      });
    }

    it('when the rows are given in another order, then the same row wins', () => {
      const list = createPriceList([subNetwork, network, country], UNIT_PRICE);
      expect(list.priceOf('+243812345678').row).to.equal(subNetwork);
      expect(list.priceOf('+243819876543').row).to.equal(network);
      expect(list.priceOf('+243991234567').row).to.equal(country);
    });

    it('when the number has no leading +, then it is matched on its digits all the same', () => {
      const list = createPriceList(rows, UNIT_PRICE);
      expect(list.priceOf('243812345678').row).to.equal(subNetwork);
    });

    it('when no row matches, then the price is unit_price and there is no carrier', () => {
      const list = createPriceList(rows, UNIT_PRICE);
      expect(list.priceOf('+33612345678')).to.deep.equal({ price: 100, carrier: null, row: null });
    });

    it('when the number is shorter than every prefix, then it is unmatched', () => {
      const list = createPriceList([subNetwork], UNIT_PRICE);
      expect(list.priceOf('+24')).to.deep.equal({ price: 100, carrier: null, row: null });
    });

    it('when there are no rows at all, then every number costs unit_price', () => {
      const list = createPriceList([], UNIT_PRICE);
      expect(list.priceOf('+243812345678')).to.deep.equal({ price: 100, carrier: null, row: null });
      expect(list.unitPrice).to.equal(100);
      expect(list.rows).to.deep.equal([]);
    });

    it('when a prefix does not start the number, then it does not match even if it occurs later', () => {
      const list = createPriceList([row('81', '', '0.09', 'elsewhere')], UNIT_PRICE);
      expect(list.priceOf('+243812345678').row).to.equal(null);
    });
  });

  describe('isValidPricingRow', () => {
    it('when every field is well formed, then the row is valid', () => {
      expect(isValidPricingRow(row('243', '81', '0.05', 'vodacom'))).to.equal(true);
      expect(isValidPricingRow(row('1', '', '0.0001', 'x'))).to.equal(true);
    });

    const invalid: [string, PricingRow][] = [
      ['a non-digit country code', { ...row('243', '81', '0.05', 'v'), countryCallingCode: '+243' }],
      ['an empty country code', { ...row('243', '81', '0.05', 'v'), countryCallingCode: '' }],
      ['a 4-digit country code', { ...row('243', '81', '0.05', 'v'), countryCallingCode: '2430' }],
      ['a non-digit network prefix', { ...row('243', '81', '0.05', 'v'), networkPrefix: '8a' }],
      ['a signed 2-digit country code', { ...row('243', '81', '0.05', 'v'), countryCallingCode: '+24' }],
      ['a network prefix with a leading letter', { ...row('243', '81', '0.05', 'v'), networkPrefix: 'a8' }],
      ['a zero price', { ...row('243', '81', '0.05', 'v'), price: fromUnits(0) }],
      ['a fractional number of units', { ...row('243', '81', '0.05', 'v'), price: 1.5 as PricingRow['price'] }],
      ['an empty carrier', { ...row('243', '81', '0.05', 'v'), carrier: '' }],
    ];
    for (const [what, candidate] of invalid) {
      it(`when the row has ${what}, then it is invalid`, () => {
        expect(isValidPricingRow(candidate)).to.equal(false);
      });
    }
  });

  describe('costOfSend', () => {
    it('when 3 recipients (two on a 0.05 row, one unmatched at 0.01) get 2 segments 3 times, then the cost is exactly 0.66', () => {
      const list = createPriceList([row('243', '81', '0.05', 'vodacom')], UNIT_PRICE);
      const cost = costOfSend(list, ['+243812345678', '+243819876543', '+33612345678'], 2, 3);
      expect(toDecimalString(cost.totalCost)).to.equal('0.66');
      expect(cost.totalCost).to.equal(6_600);
      expect(toDecimalString(cost.costPerOccurrence)).to.equal('0.22');
      expect(cost.totalMessages).to.equal(18);
      expect(cost.recipients).to.deep.equal([
        { phone: '+243812345678', price: 500, carrier: 'vodacom' },
        { phone: '+243819876543', price: 500, carrier: 'vodacom' },
        { phone: '+33612345678', price: 100, carrier: null },
      ]);
    });

    it('when every destination has one price, then the cost is total_messages × that price (the contract formula)', () => {
      const list = createPriceList([], mustParseMoney('0.0133'));
      const cost = costOfSend(list, ['+243812345678', '+243812345678', '+243991234567', '+33612345678'], 3, 7);
      expect(cost.totalMessages).to.equal(84);
      expect(cost.totalCost).to.equal(84 * 133);
      expect(toDecimalString(cost.totalCost)).to.equal('1.1172');
    });

    it('when there are no occurrences left, then nothing is charged but the per-occurrence cost is still known', () => {
      const list = createPriceList([], UNIT_PRICE);
      const cost = costOfSend(list, ['+243812345678'], 2, 0);
      expect(cost.totalCost).to.equal(0);
      expect(cost.totalMessages).to.equal(0);
      expect(cost.costPerOccurrence).to.equal(200);
    });

    it('when there are no recipients, then the cost is zero', () => {
      const cost = costOfSend(createPriceList([], UNIT_PRICE), [], 3, 5);
      expect(cost).to.deep.equal({ recipients: [], totalMessages: 0, totalCost: 0, costPerOccurrence: 0 });
    });

    it('property: the total equals the integer sum computed independently and costPerOccurrence × occurrences', () => {
      const digits = (minLength: number, maxLength: number) =>
        fc.array(fc.integer({ min: 0, max: 9 }).map(String), { minLength, maxLength }).map((d) => d.join(''));
      const rowArb = fc.record({
        countryCallingCode: digits(1, 3),
        networkPrefix: digits(0, 3),
        price: fc.integer({ min: 1, max: 1_000_000 }).map(fromUnits),
        carrier: fc.string({ minLength: 1, maxLength: 8 }),
      });
      const rowsArb = fc.uniqueArray(rowArb, { maxLength: 15, selector: (r) => r.countryCallingCode + r.networkPrefix });
      // phones mostly start with some row's prefix (often a shorter one's), so matches and overlaps are common
      const rowsAndPhones = rowsArb.chain((rows) => {
        const prefixes = ['', ...rows.map((r) => r.countryCallingCode + r.networkPrefix)];
        const phone = fc.tuple(fc.constantFrom(...prefixes), digits(4, 10)).map(([prefix, rest]) => `+${prefix}${rest}`);
        return fc.tuple(fc.constant(rows), fc.array(phone, { maxLength: 40 }));
      });
      fc.assert(
        fc.property(
          rowsAndPhones,
          fc.integer({ min: 1, max: 1_000_000 }),
          fc.integer({ min: 1, max: 24 }),
          fc.integer({ min: 0, max: 5000 }),
          ([rows, phones], unit, segments, occurrences) => {
            const cost = costOfSend(createPriceList(rows, fromUnits(unit)), phones, segments, occurrences);

            // independent model: brute-force longest prefix, BigInt arithmetic
            let expected = 0n;
            for (const phone of phones) {
              const digitsOnly = phone.slice(1);
              const matching = rows
                .filter((r) => digitsOnly.startsWith(r.countryCallingCode + r.networkPrefix))
                .sort((a, b) => (b.countryCallingCode + b.networkPrefix).length - (a.countryCallingCode + a.networkPrefix).length);
              const price = matching[0]?.price ?? unit;
              expected += BigInt(price) * BigInt(segments) * BigInt(occurrences);
            }
            expect(BigInt(cost.totalCost)).to.equal(expected);
            expect(cost.totalCost).to.equal(cost.costPerOccurrence * occurrences);
            expect(cost.totalMessages).to.equal(phones.length * segments * occurrences);
            expect(cost.recipients.map((r) => r.phone)).to.deep.equal(phones);
          },
        ),
      );
    });
  });
});
