import { expect } from 'chai';
import { busyMerchantDelayMs, createMerchantSlots } from '../../../src/webhooks/webhook-worker.js';

describe('per-merchant delivery slots', () => {
  it('when a merchant has free slots, then a delivery gets one at once', async () => {
    const slots = createMerchantSlots(2, 2);
    expect(await slots.acquire('a')).to.be.a('function');
    expect(await slots.acquire('a')).to.be.a('function');
    expect(slots.inUse('a')).to.equal(2);
  });

  it('when its slots are taken, then a few deliveries wait and each gets the slot a finishing one gives up', async () => {
    const slots = createMerchantSlots(1, 2);
    const first = await slots.acquire('a');
    const waiting = [slots.acquire('a'), slots.acquire('a')];
    expect(slots.waiting('a')).to.equal(2);
    expect(await slots.acquire('a')).to.equal(null);
    first?.();
    const second = await waiting[0];
    expect(slots.inUse('a')).to.equal(1);
    expect(slots.waiting('a')).to.equal(1);
    second?.();
    (await waiting[1])?.();
    expect(slots.inUse('a')).to.equal(0);
    expect(slots.waiting('a')).to.equal(0);
  });

  it('when one merchant is full, then another merchant is not affected', async () => {
    const slots = createMerchantSlots(1, 0);
    await slots.acquire('slow');
    expect(await slots.acquire('slow')).to.equal(null);
    expect(await slots.acquire('fast')).to.be.a('function');
  });
});

describe('busy merchant: how long a job goes back to the broker', () => {
  it('when the same job finds its merchant busy again and again, then it waits 250 ms, 500 ms, 1 s, 2 s, then 4 s at most', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50, 5_000].map(busyMerchantDelayMs)).to.deep.equal([250, 500, 1_000, 2_000, 4_000, 4_000, 4_000, 4_000, 4_000]);
  });
});
