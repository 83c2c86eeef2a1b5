import { expect } from 'chai';
import {
  NO_SCOPE,
  askDeadline,
  beforeDeadline,
  liftDeadline,
  patientTimer,
  recordRemoteHop,
  type RequestScope,
} from '../../../../src/libraries/actors/request-deadline.js';
import { createManualClock } from '../../../../src/libraries/clock/clock.js';
import { DeadlineExpiredError } from '../../../../src/libraries/errors/internal-errors.js';

const realMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('request deadlines', () => {
  const clock = createManualClock(Date.parse('2026-06-01T00:00:00Z'));

  it('when a request has a deadline, then each ask carries it, capped by the ask timeout; a lifted one leaves only the ask timeout', () => {
    const now = clock.now();
    expect(askDeadline(now, 5_000)).to.equal(now + 5_000);
    const scope: RequestScope = { deadline: now + 1_000, hops: { hops: 0 } };
    expect(askDeadline(now, 5_000, scope.deadline)).to.equal(now + 1_000);
    expect(askDeadline(now, 500, scope.deadline)).to.equal(now + 500);
    const lifted = liftDeadline(scope);
    expect(askDeadline(now, 5_000, lifted.deadline)).to.equal(now + 5_000);
    // lifting the deadline keeps the rest of the request: its hops still count
    recordRemoteHop(lifted);
    expect(scope.hops?.hops).to.equal(1);
    expect(liftDeadline(NO_SCOPE)).to.equal(NO_SCOPE);
  });

  it('when work runs outside a request, then its hops are counted nowhere', () => {
    expect(() => {
      recordRemoteHop(NO_SCOPE);
    }).to.not.throw();
    expect(NO_SCOPE).to.deep.equal({ deadline: null });
  });

  it('when the deadline has passed, then no step starts', () => {
    const now = clock.now();
    expect(() => {
      beforeDeadline(now + 10, now + 9, 'the charge');
    }).to.not.throw();
    expect(() => {
      beforeDeadline(now + 10, now + 10, 'the charge');
    }).to.throw(DeadlineExpiredError);
    expect(() => {
      beforeDeadline(null, now + 10_000, 'the charge');
    }).to.not.throw();
  });

  it('when a patient timer fires late (the process was frozen), then it waits its time again before expiring', async () => {
    let expired = 0;
    patientTimer(clock, 20, () => expired++);
    // the process "freezes": by the time the timer runs, the clock has moved far past it
    clock.advance(60_000);
    // timers fire in order of expiry: the first (20 ms) has fired and re-armed by now, the second (40 ms) not yet
    await realMs(30);
    expect(expired).to.equal(0);
    await realMs(40);
    expect(expired).to.equal(1);
  });

  it('when a patient timer fires on time, then it expires once; cancelled, never', async () => {
    let expired = 0;
    patientTimer(clock, 10, () => expired++);
    const cancel = patientTimer(clock, 10, () => expired++);
    cancel();
    await realMs(40);
    expect(expired).to.equal(1);
  });
});
