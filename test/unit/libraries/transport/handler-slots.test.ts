import { expect } from 'chai';
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

  it('when a handler hangs, then settled gives up after its timeout', async () => {
    const slots = createHandlerSlots(1);
    const hung = gate();
    slots.run(() => hung.opened);
    const started = Date.now();
    await slots.settled(50);
    expect(Date.now() - started).to.be.within(40, 1_000);
    expect(slots.inFlight).to.equal(1);
    hung.open();
  });

  it('when the limit is not a positive integer, then creating the slots fails', () => {
    expect(() => createHandlerSlots(0)).to.throw(RangeError);
    expect(() => createHandlerSlots(1.5)).to.throw(RangeError);
  });
});
