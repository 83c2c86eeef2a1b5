import { expect } from 'chai';
import { loggableUrl, UNPARSEABLE_URL } from '../../../src/libraries/logger/loggable-url.js';

describe('loggable URL: scheme, host, port and path at most', () => {
  const cases: readonly (readonly [string, string, string])[] = [
    ['a plain URL', 'https://shop.example/sms-events', 'https://shop.example/sms-events'],
    ['userinfo with a password', 'https://shop:s3cret@shop.example/hooks', 'https://shop.example/hooks'],
    ['userinfo with a user only', 'https://token123@shop.example/hooks', 'https://shop.example/hooks'],
    ['a query string', 'https://shop.example/hooks?token=abc&sig=def', 'https://shop.example/hooks'],
    ['a fragment', 'https://shop.example/hooks#token=abc', 'https://shop.example/hooks'],
    ['everything at once', 'http://u:p@127.0.0.1:8080/a/b?c=d#e', 'http://127.0.0.1:8080/a/b'],
    ['a non-default port', 'https://shop.example:8443/hooks', 'https://shop.example:8443/hooks'],
    ['the default port', 'https://shop.example:443/hooks', 'https://shop.example/hooks'],
    ['an IPv6 literal', 'http://[::1]:3000/hooks?x=1', 'http://[::1]:3000/hooks'],
    ['no path', 'https://shop.example', 'https://shop.example/'],
    ['an encoded path', 'https://shop.example/h%20ooks/%C3%A9', 'https://shop.example/h%20ooks/%C3%A9'],
    ['a password holding @ and :', 'https://a:b%40c:d@shop.example/x', 'https://shop.example/x'],
  ];
  for (const [label, input, expected] of cases) {
    it(`when the URL has ${label}, then it shows ${expected}`, () => {
      expect(loggableUrl(input)).to.equal(expected);
    });
  }

  it('when the text is not a URL, then nothing of it is shown', () => {
    for (const text of ['not a url', '//user:pw@host/x', 'https://user:pw@', '']) expect(loggableUrl(text), text).to.equal(UNPARSEABLE_URL);
  });

  it('when the URL has no host, then only its scheme is shown', () => {
    expect(loggableUrl('mailto:user:secret@shop.example')).to.equal('mailto:[opaque]');
    expect(loggableUrl('shop:s3cret@')).to.equal('shop:[opaque]');
  });
});
