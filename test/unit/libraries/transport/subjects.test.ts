import { expect } from 'chai';
import fc from 'fast-check';
import { subjectMatches, subjectPattern } from '../../../../src/libraries/transport/subjects.js';

describe('subject filters', () => {
  const cases: [filter: string, subject: string, matches: boolean][] = [
    ['sms.dispatch.simulator', 'sms.dispatch.simulator', true],
    ['sms.dispatch.simulator', 'sms.dispatch.orange', false],
    ['sms.dispatch.simulator', 'sms.dispatch', false],
    ['sms.dispatch.simulator', 'sms.dispatch.simulator.extra', false],
    ['sms.dispatch.*', 'sms.dispatch.orange', true],
    ['sms.dispatch.*', 'sms.dispatch', false],
    ['sms.dispatch.*', 'sms.dispatch.orange.cd', false],
    ['sms.*.orange', 'sms.receipts.orange', true],
    ['sms.*.orange', 'sms.receipts.vodacom', false],
    ['sms.dispatch.>', 'sms.dispatch.orange', true],
    ['sms.dispatch.>', 'sms.dispatch.orange.cd.kinshasa', true],
    ['sms.dispatch.>', 'sms.dispatch', false],
    ['sms.dispatch.>', 'sms.receipts.orange', false],
    ['>', 'anything.at.all', true],
    ['*', 'one', true],
    ['*', 'one.two', false],
    // `>` only means "the rest" as the last token
    ['a.>.c', 'a.b.c', false],
    ['a.>.c', 'a.>.c', true],
    // regex metacharacters in tokens are literal
    ['webhook.jobs.m+1', 'webhook.jobs.m+1', true],
    ['webhook.jobs.m+1', 'webhook.jobs.mm1', false],
    ['a.b', 'a-b', false],
  ];

  for (const [filter, subject, matches] of cases) {
    it(`when the filter is ${filter} and the subject ${subject}, then it ${matches ? 'matches' : 'does not match'}`, () => {
      expect(subjectMatches(filter, subject)).to.equal(matches);
      expect(new RegExp(subjectPattern(filter)).test(subject)).to.equal(matches);
    });
  }

  it('when any filter is turned into a pattern, then the pattern selects exactly the subjects the filter matches', () => {
    const token = fc.constantFrom('sms', 'dispatch', 'a', 'b', 'x+y', '(z)', '$1', 'a\\b');
    const subject = fc.array(token, { minLength: 1, maxLength: 5 }).map((t) => t.join('.'));
    const filter = fc
      .tuple(fc.array(fc.oneof(token, fc.constant('*')), { minLength: 1, maxLength: 4 }), fc.boolean())
      .map(([tokens, tail]) => [...tokens, ...(tail ? ['>'] : [])].join('.'));
    fc.assert(
      fc.property(filter, subject, (f, s) => {
        expect(new RegExp(subjectPattern(f)).test(s)).to.equal(subjectMatches(f, s));
      }),
      { numRuns: 2_000 },
    );
  });

  it('when a subject is matched by its own literal filter, then it matches', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9_+-]{1,6}$/), { minLength: 1, maxLength: 5 }), (tokens) => {
        const s = tokens.join('.');
        expect(subjectMatches(s, s)).to.equal(true);
        expect(subjectMatches(`${tokens[0]!}.>`, s)).to.equal(tokens.length > 1);
      }),
    );
  });
});
