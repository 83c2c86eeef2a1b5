import { expect } from 'chai';
import { loggedPath } from '../../../src/entry-points/http/app/request-context.js';

describe('HTTP request lines: the path they show', () => {
  it('when the target has a query string, then only the path is shown', () => {
    expect(loggedPath('/api/v1/messaging/sms-api/balance?token=abc&x=1')).to.equal('/api/v1/messaging/sms-api/balance');
  });

  it('when the path is longer than 256 characters, then it is cut there', () => {
    const shown = loggedPath(`/${'a'.repeat(10_000)}`);

    expect(shown).to.have.length(257);
    expect(shown.endsWith('…')).to.equal(true);
  });

  it('when the path holds something shaped like an API key, then the key is scrubbed', () => {
    const key = 'sk_live_0123456789abcdefABCDEF0123456789';

    expect(loggedPath(`/api/v1/messaging/sms-api/status/${key}`)).to.equal('/api/v1/messaging/sms-api/status/sk_live_[redacted]');
  });

  it('when there is no target, then the path is empty', () => {
    expect(loggedPath(undefined)).to.equal('');
  });
});
