import { expect } from 'chai';
import Joi from 'joi';
import { fieldPath, validateWith } from '../../../src/libraries/validation/validate.js';

describe('validation', () => {
  describe('fieldPath', () => {
    const cases: [(string | number)[], string][] = [
      [[], 'body'],
      [['to'], 'to'],
      [['to', 3], 'to[3]'],
      [['scheduled_dates', 2, 'time'], 'scheduled_dates[2].time'],
      [['recurring_schedule', 'times', 0], 'recurring_schedule.times[0]'],
      [['recurring_schedule', 'start_date'], 'recurring_schedule.start_date'],
      [['a', 0, 1, 'b'], 'a[0][1].b'],
    ];
    for (const [path, expected] of cases) {
      it(`when the path is ${JSON.stringify(path)}, then the field is ${expected}`, () => {
        expect(fieldPath(path)).to.equal(expected);
      });
    }
  });

  describe('validateWith', () => {
    const schema = Joi.object({
      name: Joi.string().max(5).required(),
      count: Joi.number().integer().min(1),
      kind: Joi.string().valid('a', 'b').default('a'),
      items: Joi.array().items(Joi.object({ id: Joi.string().required() })),
    }).required();

    it('when the input is valid, then its value comes back with defaults applied', () => {
      expect(validateWith(schema, { name: 'abc', count: 2 })).to.deep.equal({ ok: true, value: { name: 'abc', count: 2, kind: 'a' } });
    });

    it('when several fields are wrong, then every issue is collected as { field, message, type }', () => {
      expect(validateWith(schema, { name: 'too long', count: 0, kind: 'c' })).to.deep.equal({
        ok: false,
        issues: [
          { field: 'name', message: 'length must be less than or equal to 5 characters long', type: 'string.max' },
          { field: 'count', message: 'must be greater than or equal to 1', type: 'number.min' },
          { field: 'kind', message: 'must be one of [a, b]', type: 'any.only' },
        ],
      });
    });

    it('when a nested field is wrong, then the field is its full path and the message has no label', () => {
      expect(validateWith(schema, { name: 'x', items: [{ id: 'ok' }, {}] })).to.deep.equal({
        ok: false,
        issues: [{ field: 'items[1].id', message: 'is required', type: 'any.required' }],
      });
    });

    it('when a value has the wrong type, then it is not converted', () => {
      expect(validateWith(schema, { name: 'x', count: '2' })).to.deep.equal({
        ok: false,
        issues: [{ field: 'count', message: 'must be a number', type: 'number.base' }],
      });
    });

    it('when an unknown field is present, then it is rejected by name', () => {
      expect(validateWith(schema, { name: 'x', colour: 'red' })).to.deep.equal({
        ok: false,
        issues: [{ field: 'colour', message: 'is not allowed', type: 'object.unknown' }],
      });
    });

    it('when the whole input is wrong, then the field is body', () => {
      const result = validateWith(schema, 'text');
      expect(result.ok).to.equal(false);
      expect(result.ok ? [] : result.issues.map((i) => [i.field, i.type])).to.deep.equal([['body', 'object.base']]);
      expect(validateWith(schema, undefined)).to.deep.equal({
        ok: false,
        issues: [{ field: 'body', message: 'value is required', type: 'any.required' }],
      });
    });
  });
});
