import { expect } from 'chai';
import {
  isFiniteNumber,
  isFlag,
  isInteger,
  isListOf,
  isNullableText,
  isOneOf,
  isRecord,
  isText,
} from '../../../../src/libraries/validation/guards.js';

interface Case {
  readonly name: string;
  readonly value: unknown;
}

const given = (name: string, value: unknown): Case => ({ name, value });

/** Values of every JSON shape (and the non-JSON ones a bad reader could hand over), to refuse what a guard is not about. */
const OTHERS = {
  undefined: given('undefined', undefined),
  null: given('null', null),
  text: given("the text 'abc'", 'abc'),
  emptyText: given("the empty text ''", ''),
  numericText: given("the text '1'", '1'),
  zero: given('the number 0', 0),
  one: given('the number 1', 1),
  fraction: given('the number 1.5', 1.5),
  nan: given('NaN', Number.NaN),
  infinity: given('Infinity', Number.POSITIVE_INFINITY),
  negativeInfinity: given('-Infinity', Number.NEGATIVE_INFINITY),
  unsafe: given('2^53 (beyond the safe integers)', 2 ** 53),
  bigint: given('the bigint 1n', 1n),
  true: given('true', true),
  false: given('false', false),
  object: given('an object', { a: 1 }),
  emptyObject: given('an empty object', {}),
  array: given('an array', [1]),
  emptyArray: given('an empty array', []),
  date: given('a Date', new Date(0)),
  fn: given('a function', () => 1),
} as const;

type Other = keyof typeof OTHERS;

/** Runs `guard` over every value of OTHERS: those named in `accepted` must pass, all the others must be refused. */
function acceptsExactly(guard: (value: unknown) => boolean, accepted: readonly Other[]): void {
  for (const [key, { name, value }] of Object.entries(OTHERS) as [Other, Case][]) {
    const expected = accepted.includes(key);
    it(`when given ${name}, then it is ${expected ? 'accepted' : 'refused'}`, () => {
      expect(guard(value)).to.equal(expected);
    });
  }
}

describe('payload guards: each accepts what it names and refuses the near misses', () => {
  describe('isRecord', () => {
    acceptsExactly(isRecord, ['object', 'emptyObject', 'date']);

    it('when given an object without a prototype (a parsed-JSON lookalike), then it is accepted', () => {
      expect(isRecord(Object.create(null))).to.equal(true);
    });
  });

  describe('isText', () => {
    acceptsExactly(isText, ['text', 'emptyText', 'numericText']);
  });

  describe('isNullableText', () => {
    acceptsExactly(isNullableText, ['text', 'emptyText', 'numericText', 'null']);
  });

  describe('isFiniteNumber', () => {
    acceptsExactly(isFiniteNumber, ['zero', 'one', 'fraction', 'unsafe']);

    it('when given a negative fraction or the largest finite number, then it is accepted', () => {
      expect(isFiniteNumber(-0.25)).to.equal(true);
      expect(isFiniteNumber(Number.MAX_VALUE)).to.equal(true);
    });
  });

  describe('isInteger', () => {
    acceptsExactly(isInteger, ['zero', 'one']);

    it('when given the largest and the smallest safe integer, then both are accepted', () => {
      expect(isInteger(Number.MAX_SAFE_INTEGER)).to.equal(true);
      expect(isInteger(Number.MIN_SAFE_INTEGER)).to.equal(true);
    });

    it('when given one beyond the smallest safe integer, then it is refused', () => {
      expect(isInteger(Number.MIN_SAFE_INTEGER - 1)).to.equal(false);
    });
  });

  describe('isFlag', () => {
    acceptsExactly(isFlag, ['true', 'false']);
  });

  describe('isOneOf', () => {
    const STATES = ['queued', 'sent', 3] as const;

    it('when the value is one of the literals, then it is accepted', () => {
      expect(isOneOf(STATES, 'queued')).to.equal(true);
      expect(isOneOf(STATES, 'sent')).to.equal(true);
      expect(isOneOf(STATES, 3)).to.equal(true);
    });

    it('when the value only looks like one of the literals (another case, a number as text, a list of it), then it is refused', () => {
      expect(isOneOf(STATES, 'Queued')).to.equal(false);
      expect(isOneOf(STATES, '3')).to.equal(false);
      expect(isOneOf(STATES, ['sent'])).to.equal(false);
      expect(isOneOf(STATES, undefined)).to.equal(false);
    });

    it('when there are no literals, then nothing is accepted', () => {
      expect(isOneOf([], 'queued')).to.equal(false);
    });
  });

  describe('isListOf', () => {
    it('when every item passes, then the list is accepted', () => {
      expect(isListOf(['a', 'b', ''], isText)).to.equal(true);
    });

    it('when the list is empty, then it is accepted (no item fails)', () => {
      expect(isListOf([], isText)).to.equal(true);
    });

    it('when one item fails, first, last or in between, then the list is refused', () => {
      expect(isListOf([1, 'b', 'c'], isText)).to.equal(false);
      expect(isListOf(['a', 'b', null], isText)).to.equal(false);
      expect(isListOf(['a', undefined, 'c'], isText)).to.equal(false);
    });

    it('when every item fails, then the list is refused', () => {
      expect(isListOf([1, 2], isText)).to.equal(false);
    });

    it('when the value is not an array (an object with array-like keys, a text, null), then it is refused', () => {
      expect(isListOf({ 0: 'a', length: 1 }, isText)).to.equal(false);
      expect(isListOf('ab', isText)).to.equal(false);
      expect(isListOf(null, isText)).to.equal(false);
      expect(isListOf(undefined, isText)).to.equal(false);
    });

    it('when the item check is given, then it is asked about each item in turn', () => {
      const seen: unknown[] = [];
      const recording = (value: unknown): value is number => {
        seen.push(value);
        return typeof value === 'number';
      };

      expect(isListOf([1, 2, 3], recording)).to.equal(true);
      expect(seen).to.deep.equal([1, 2, 3]);
    });
  });
});
