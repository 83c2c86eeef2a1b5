import { expect } from 'chai';
import sinon from 'sinon';
import { createHandlerSlots } from '../../../../src/libraries/transport/handler-slots.js';

function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('handler slots', () => {
  it('when the limit is reached, then whenFree waits until a handler finishes', async () => {
    const slots = createHandlerSlots(2);
    const a = gate();
    const b = gate();
    slots.run(() => a.opened);
    slots.run(() => b.opened);
    expect(slots.free).to.equal(0);
    let freed = false;
    const waiting = slots.whenFree().then(() => {
      freed = true;
    });
    await Promise.resolve();
    expect(freed).to.equal(false);
    a.open();
    await waiting;
    expect(freed).to.equal(true);
    expect(slots.inFlight).to.equal(1);
    b.open();
  });

  it('when a handler rejects, then its slot is freed all the same', async () => {
    const slots = createHandlerSlots(1);
    slots.run(() => Promise.reject(new Error('bug')));
    await slots.whenFree();
    expect(slots.free).to.equal(1);
  });

  it('when released, then waiters go on although every slot is taken', async () => {
    const slots = createHandlerSlots(1);
    const hung = gate();
    slots.run(() => hung.opened);
    const waiting = slots.whenFree();
    slots.release();
    await waiting;
    expect(slots.inFlight).to.equal(1);
    hung.open();
  });

  it('when a handler hangs, then settled gives up after its timeout, not before', async () => {
    const clock = sinon.useFakeTimers();
    try {
      const slots = createHandlerSlots(1);
      const hung = gate();
      slots.run(() => hung.opened);
      let gaveUp = false;
      const settled = slots.settled(50).then(() => {
        gaveUp = true;
      });
      await clock.tickAsync(49);
      expect(gaveUp, 'still waiting at 49 ms').to.equal(false);
      await clock.tickAsync(1);
      await settled;
      expect(gaveUp).to.equal(true);
      expect(slots.inFlight).to.equal(1);
      hung.open();
    } finally {
      clock.restore();
    }
  });

  it('when the limit is not a positive integer, then creating the slots fails', () => {
    expect(() => createHandlerSlots(0)).to.throw(RangeError);
    expect(() => createHandlerSlots(1.5)).to.throw(RangeError);
  });
});
