import { expect } from 'chai';
import { MIN_NUMBER_LENGTH, normaliseNumber, stripPresentation } from '../../../src/messaging/phone-numbers.js';

const TOO_SHORT = {
  ok: false,
  reason: 'too_short',
  message: 'must have at least 8 characters after removing spaces and dashes',
} as const;
const NOT_A_NUMBER = { ok: false, reason: 'not_a_number', message: 'is not a possible phone number' } as const;

describe('phone numbers', () => {
  describe('presentation', () => {
    const table: readonly (readonly [string, string])[] = [
      ['+243 81-234-5678', '+243812345678'],
      ['081 234 5678', '0812345678'],
      ['  +243--81  234 5678 ', '+243812345678'],
      ['+2438123', '+2438123'],
    ];
    for (const [raw, compact] of table) {
      it(`when ${JSON.stringify(raw)} is stripped, then spaces and dashes are gone: ${compact}`, () => {
        expect(stripPresentation(raw)).to.equal(compact);
      });
    }

    it('when other punctuation is present, then it is kept (only spaces and dashes are presentation)', () => {
      expect(stripPresentation('(081) 234.5678')).to.equal('(081)234.5678');
    });
  });

  describe('normalisation to E.164', () => {
    it("when an international number is written with spaces and dashes, then it yields E.164 '+243812345678'", () => {
      expect(normaliseNumber('+243 81-234-5678', 'CD')).to.deep.equal({ ok: true, e164: '+243812345678', countryCallingCode: '243' });
    });

    it("when a national number with trunk prefix is sent for default country CD, then it yields '+243…'", () => {
      expect(normaliseNumber('081 234 5678', 'CD')).to.deep.equal({ ok: true, e164: '+243812345678', countryCallingCode: '243' });
    });

    it("when a national number without trunk prefix is sent for default country CD, then it yields '+243…'", () => {
      expect(normaliseNumber('81-234-5678', 'CD')).to.deep.equal({ ok: true, e164: '+243812345678', countryCallingCode: '243' });
    });

    it('when an international number of another country is sent, then the default country does not change it', () => {
      expect(normaliseNumber('+1 202-555-0123', 'CD')).to.deep.equal({ ok: true, e164: '+12025550123', countryCallingCode: '1' });
    });

    it('when the same national digits are read for another default country, then that country code is used', () => {
      expect(normaliseNumber('06 12 34 56 78', 'FR')).to.deep.equal({ ok: true, e164: '+33612345678', countryCallingCode: '33' });
    });
  });

  describe(`minimum length (${MIN_NUMBER_LENGTH} characters after stripping, at -1, exact, +1)`, () => {
    it('when the minimum is read, then it is 8', () => {
      expect(MIN_NUMBER_LENGTH).to.equal(8);
    });

    const table: readonly {
      readonly raw: string;
      readonly country: string;
      readonly compactLength: number;
      readonly expected: object;
    }[] = [
      { raw: '812-34 56', country: 'CD', compactLength: 7, expected: TOO_SHORT },
      { raw: '8123-4567', country: 'CD', compactLength: 8, expected: { ok: true, e164: '+24381234567', countryCallingCode: '243' } },
      { raw: '812 345 678', country: 'CD', compactLength: 9, expected: { ok: true, e164: '+243812345678', countryCallingCode: '243' } },
      { raw: '+49 123-4', country: 'CD', compactLength: 7, expected: TOO_SHORT },
      { raw: '+49 123-45', country: 'CD', compactLength: 8, expected: { ok: true, e164: '+4912345', countryCallingCode: '49' } },
      { raw: '+49 123-456', country: 'CD', compactLength: 9, expected: { ok: true, e164: '+49123456', countryCallingCode: '49' } },
    ];
    for (const { raw, country, compactLength, expected } of table) {
      const verdict = 'ok' in expected && expected.ok ? 'accepted' : 'too_short';
      it(`when ${JSON.stringify(raw)} has ${compactLength} characters after stripping, then it is ${verdict}`, () => {
        expect(stripPresentation(raw)).to.have.length(compactLength);
        expect(normaliseNumber(raw, country)).to.deep.equal(expected);
      });
    }

    it('when 7 characters would be a possible number, then it is still too_short (length is checked first)', () => {
      // '+491234' is a possible German number, but it has only 7 characters.
      expect(normaliseNumber('+49 1234', 'DE')).to.deep.equal(TOO_SHORT);
    });

    it('when padding is only spaces and dashes, then it does not count toward the 8 characters', () => {
      expect(normaliseNumber('  1-2-3-4-5-6-7  ', 'CD')).to.deep.equal(TOO_SHORT);
    });

    it('when 8 characters are not a possible number, then it is not_a_number rather than accepted', () => {
      expect(normaliseNumber('+2431234', 'CD')).to.deep.equal(NOT_A_NUMBER);
    });
  });

  describe('not a number', () => {
    const garbage = ['abcdefghij', 'hello world!', 'call me maybe', '+243 8x-234-5678zz', '++++++++++'];
    for (const raw of garbage) {
      it(`when ${JSON.stringify(raw)} is sent, then it is not_a_number`, () => {
        expect(normaliseNumber(raw, 'CD')).to.deep.equal(NOT_A_NUMBER);
      });
    }

    it('when garbage is shorter than 8 characters after stripping, then too_short wins', () => {
      expect(normaliseNumber('ab - cd - ef', 'CD')).to.deep.equal(TOO_SHORT);
    });
  });

  describe('possible in one country only', () => {
    it('when a 10-digit US national number is read for US, then it is accepted as +1…', () => {
      expect(normaliseNumber('202-555-0123', 'US')).to.deep.equal({ ok: true, e164: '+12025550123', countryCallingCode: '1' });
    });

    it('when the same 10 digits are read for FR (9-digit numbers), then it is not_a_number', () => {
      expect(normaliseNumber('202-555-0123', 'FR')).to.deep.equal(NOT_A_NUMBER);
    });

    it('when a 9-digit national number is read for CD, then it is accepted as +243…', () => {
      expect(normaliseNumber('812 345 678', 'CD')).to.deep.equal({ ok: true, e164: '+243812345678', countryCallingCode: '243' });
    });

    it('when the same 9 digits are read for US (10-digit numbers), then it is not_a_number', () => {
      expect(normaliseNumber('812 345 678', 'US')).to.deep.equal(NOT_A_NUMBER);
    });
  });
});
