import { expect } from 'chai';
import { createFailureLimiter, createNegativeCache } from '../../../src/api-keys/authentication-guards.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';

describe('authentication guards', () => {
  describe('negative cache', () => {
    it('when an unknown key is remembered, then it is known unknown until its TTL passes', () => {
      const clock = createManualClock(1_000_000);
      const cache = createNegativeCache({ clock, ttlMs: 5_000 });
      expect(cache.has('h1')).to.equal(false);
      cache.remember('h1');
      clock.advance(4_999);
      expect(cache.has('h1')).to.equal(true);
      clock.advance(1);
      expect(cache.has('h1')).to.equal(false);
    });

    it('when a key is created after its negative lookup, then forgetting it makes it resolve at once', () => {
      const cache = createNegativeCache({ clock: createManualClock(0), ttlMs: 5_000 });
      cache.remember('h1');
      cache.forget('h1');
      expect(cache.has('h1')).to.equal(false);
    });

    it('when more keys than its size are remembered, then the least recently remembered go first', () => {
      const cache = createNegativeCache({ clock: createManualClock(0), ttlMs: 5_000, maxEntries: 2 });
      cache.remember('a');
      cache.remember('b');
      cache.remember('a');
      cache.remember('c');
      expect([cache.has('a'), cache.has('b'), cache.has('c')]).to.deep.equal([true, false, true]);
    });

    it('when the TTL is 0, then nothing is remembered', () => {
      const cache = createNegativeCache({ clock: createManualClock(0), ttlMs: 0 });
      cache.remember('a');
      expect(cache.has('a')).to.equal(false);
    });
  });

  describe('401s per address', () => {
    it('when an address reaches its 401s, then it is limited until its window ends, with Retry-After counting to that end', () => {
      const clock = createManualClock(0);
      const limiter = createFailureLimiter({ clock, limit: 3, windowMs: 60_000 });
      for (let i = 0; i < 3; i++) {
        expect(limiter.check('10.0.0.1').limited).to.equal(false);
        limiter.recordFailure('10.0.0.1');
        clock.advance(1_000);
      }
      expect(limiter.check('10.0.0.1')).to.deep.equal({ limited: true, retryAfterSeconds: 57 });
      expect(limiter.check('10.0.0.2').limited, 'another address').to.equal(false);
      clock.set(59_500);
      expect(limiter.check('10.0.0.1')).to.deep.equal({ limited: true, retryAfterSeconds: 1 });
      clock.set(60_000);
      expect(limiter.check('10.0.0.1').limited, 'a new window').to.equal(false);
      limiter.recordFailure('10.0.0.1');
      expect(limiter.check('10.0.0.1').limited).to.equal(false);
    });

    it('when more addresses than its size fail, then the least recently failing are forgotten', () => {
      const limiter = createFailureLimiter({ clock: createManualClock(0), limit: 1, windowMs: 60_000, maxEntries: 2 });
      limiter.recordFailure('a');
      limiter.recordFailure('b');
      limiter.recordFailure('c');
      expect(['a', 'b', 'c'].map((address) => limiter.check(address).limited)).to.deep.equal([false, true, true]);
    });
  });
});
