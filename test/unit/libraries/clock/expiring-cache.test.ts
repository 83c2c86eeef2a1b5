import { expect } from 'chai';
import { createManualClock } from '../../../../src/libraries/clock/clock.js';
import { createExpiringCache } from '../../../../src/libraries/clock/expiring-cache.js';

describe('expiring cache', () => {
  it('when a value is kept, then it is read back until its TTL has passed by the injected clock (a clock at 0 too)', () => {
    const clock = createManualClock(0);
    const cache = createExpiringCache<string, string>({ clock, ttlMs: 5_000, max: 10 });
    cache.set('k', 'v');
    clock.advance(4_999);
    expect(cache.get('k')).to.equal('v');
    clock.advance(1);
    expect(cache.get('k')).to.equal(undefined);
  });

  it('when more values than its size are kept, then the least recently used goes first', () => {
    const cache = createExpiringCache<string, number>({ clock: createManualClock(1_000), ttlMs: 5_000, max: 2 });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).to.equal(1);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).to.deep.equal([1, undefined, 3]);
  });

  it('when a value is deleted or the cache cleared, then it is gone', () => {
    const cache = createExpiringCache<string, number>({ clock: createManualClock(0), ttlMs: 5_000, max: 10 });
    cache.set('a', 1);
    cache.set('b', 2);
    cache.delete('a');
    expect(cache.get('a')).to.equal(undefined);
    cache.clear();
    expect(cache.get('b')).to.equal(undefined);
  });
});
