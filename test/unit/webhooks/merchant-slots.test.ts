import { expect } from 'chai';
import sinon from 'sinon';
import { busyMerchantDelayMs, createAttemptPace, createMerchantSlots } from '../../../src/webhooks/merchant-slots.js';

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

  it('when a delivery has waited maxWaitMs without a slot, then it is refused and leaves the queue; one granted in time keeps its slot', async () => {
    const timers = sinon.useFakeTimers();
    try {
      const slots = createMerchantSlots(1, 5, 1_000);
      const first = await slots.acquire('a');
      const early = slots.acquire('a');
      await timers.tickAsync(400);
      const late = slots.acquire('a');

      first?.();
      const granted = await early;
      expect(granted).to.be.a('function');
      await timers.tickAsync(1_000);

      expect(await late).to.equal(null);
      expect(slots.waiting('a')).to.equal(0);
      expect(slots.inUse('a')).to.equal(1);
      granted?.();
      expect(slots.inUse('a')).to.equal(0);
    } finally {
      timers.restore();
    }
  });

  it('when one merchant is full, then another merchant is not affected', async () => {
    const slots = createMerchantSlots(1, 0);
    await slots.acquire('slow');
    expect(await slots.acquire('slow')).to.equal(null);
    expect(await slots.acquire('fast')).to.be.a('function');
  });
});

describe('waiting room by pace: how many events may wait for a merchant’s slots', () => {
  it('when nothing is known of the merchant yet, then 2 per slot', () => {
    expect(createAttemptPace({ limit: 64 }).waitingFor('new')).to.equal(128);
  });

  it('when its attempts are quick, then up to 16 per slot, so a fast endpoint’s slots stay fed', () => {
    const pace = createAttemptPace({ limit: 64 });
    for (let i = 0; i < 20; i++) pace.record('fast', 4);
    expect(pace.waitingFor('fast')).to.equal(64 * 16);
  });

  it('when its attempts take seconds, then only 2 per slot, so what waits here ends well inside the ack wait', () => {
    const pace = createAttemptPace({ limit: 64 });
    for (let i = 0; i < 20; i++) pace.record('slow', 5_000);
    expect(pace.waitingFor('slow')).to.equal(128);
  });

  it('when a quick endpoint slows down, then its room shrinks within a few attempts', () => {
    const pace = createAttemptPace({ limit: 10 });
    for (let i = 0; i < 20; i++) pace.record('shop', 5);
    expect(pace.waitingFor('shop')).to.equal(160);
    const rooms: number[] = [];
    for (let i = 0; i < 12; i++) {
      pace.record('shop', 5_000);
      rooms.push(pace.waitingFor('shop'));
    }
    expect(rooms[0]).to.be.below(160);
    expect(rooms.at(-1)).to.equal(20);
    // never growing while it stays slow
    expect(rooms).to.deep.equal([...rooms].sort((a, b) => b - a));
  });

  it('when the slots size their room by it, then the room follows the merchant’s pace', async () => {
    const pace = createAttemptPace({ limit: 1 });
    const slots = createMerchantSlots(1, (merchantId) => pace.waitingFor(merchantId));
    expect(slots.room('a')).to.equal(3);
    pace.record('a', 1);
    expect(slots.room('a')).to.equal(17);
    await slots.acquire('a');
    expect(slots.room('a')).to.equal(16);
    expect(slots.room('b')).to.equal(3);
  });
});

describe('busy merchant: how long a job goes back to the broker', () => {
  it('when the same job finds its merchant busy again and again, then it waits 250 ms, 500 ms, 1 s, 2 s, then 4 s at most', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50, 5_000].map(busyMerchantDelayMs)).to.deep.equal([
      250, 500, 1_000, 2_000, 4_000, 4_000, 4_000, 4_000, 4_000,
    ]);
  });
});
